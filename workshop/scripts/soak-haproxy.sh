#!/usr/bin/env bash
# Async soak: HAProxy with ssl-mode-async and rustica on the emulated
# adapter (with its faults on: 1 call in 50 fails, 1 in 97 is corrupt),
# under ApacheBench load on loopback for SECONDS (default 600), in bounded
# rounds of ab -n 2000 -c 32. After every round it samples HAProxy's
# resident memory and open descriptors; at the end it checks that RSS and
# descriptors stayed flat (the last third of the samples within 10 % and
# 4 descriptors of the first third's largest) and that rustica counted
# exactly one signature per handshake HAProxy completed. Not part of CI
# (it takes the whole duration); figures in docs/performance.md.
#
# Usage: workshop/scripts/soak-haproxy.sh [SECONDS]   (release build)
# shellcheck source-path=SCRIPTDIR source-path=.
. "$(dirname "$0")/../../scripts/lib/common.sh"
duration=${1:-600}
. scripts/lib/haproxy-common.sh
haproxy_tools
haproxy_workspace release
haproxy_pki "$work" "$module" "$emu"
haproxy_async_cfg "$work/haproxy.cfg" "$work"
cumssl() { haproxy_info "$work/haproxy.sock" CumSslConns; }
LIBICA_EMU_LATENCY_US=2000 LIBICA_EMU_UNITS=16 LIBICA_EMU_ERRNO_EVERY=50 LIBICA_EMU_CORRUPT_EVERY=97 \
  OPENSSL_CONF="$work/rustica.cnf" RUSTICA_STATS_PATH="$work/stats" \
  haproxy -db -f "$work/haproxy.cfg" >"$work/haproxy.log" 2>&1 &
haproxy_pid=$!
for _ in $(seq 100); do [ -n "$(cumssl)" ] && break; sleep 0.1; done
start=$SECONDS
echo "| s | round | ab failed | handshakes | RSS KiB | fds |"
echo "|---:|---:|---:|---:|---:|---:|"
round=0
: >"$work/samples"
while [ $((SECONDS - start)) -lt "$duration" ]; do
  round=$((round + 1))
  proto=TLS1.3
  [ $((round % 2)) = 0 ] || proto=TLS1.2
  cipher=()
  [ "$proto" = TLS1.3 ] || cipher=(-Z ECDHE-RSA-AES128-GCM-SHA256)
  failed=$(ab -s 60 -n 2000 -c 32 -f "$proto" "${cipher[@]}" "https://127.0.0.1:$port/" 2>&1 |
    awk '/^Failed requests:/ { print $3 }')
  kill -0 "$haproxy_pid" 2>/dev/null || { tail "$work/haproxy.log" >&2; fail "haproxy died"; }
  # After ab's last connections have closed (sampled at once, a few of
  # them are still open).
  sleep 1
  rss=$(awk '/^VmRSS:/ { print $2 }' "/proc/$haproxy_pid/status")
  fds=$(ls "/proc/$haproxy_pid/fd" | wc -l)
  hs=$(cumssl)
  echo "$rss $fds" >>"$work/samples"
  echo "| $((SECONDS - start)) | $round | ${failed:-?} | $hs | $rss | $fds |"
  [ "${failed:-1}" = 0 ] || fail "ab reported failed requests"
done
sleep 2
hs=$(cumssl)
"$rustica" stats --json --path "$work/stats" | python3 -c '
import json, sys
hs = int(sys.argv[1])
d = json.load(sys.stdin)
s = d["ops"]["sign"]
total = s["libica"] + s["software"] + s["fallback"] + s["failed"]
print("handshakes %d, signatures %d (libica %d, fallback %d, failed %d, async %d), max in flight %d"
      % (hs, total, s["libica"], s["fallback"], s["failed"], s["async"], d["async_max_inflight"]))
sys.exit(0 if total == hs and s["failed"] == 0 else 1)' "$hs"
python3 - "$work/samples" <<'PY'
import sys
rows = [tuple(map(int, l.split())) for l in open(sys.argv[1]) if l.strip()]
n = len(rows)
third = max(n // 3, 1)
first, last = rows[:third], rows[-third:]
rss0, rss1 = max(r[0] for r in first), max(r[0] for r in last)
fd0, fd1 = max(r[1] for r in first), max(r[1] for r in last)
print("RSS first third max %d KiB, last third max %d KiB; fds %d then %d" % (rss0, rss1, fd0, fd1))
ok = rss1 <= rss0 * 1.10 and fd1 <= fd0 + 4
print("flat" if ok else "NOT flat")
sys.exit(0 if ok else 1)
PY
