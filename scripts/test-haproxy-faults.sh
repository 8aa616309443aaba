#!/usr/bin/env bash
# HAProxy with ssl-mode-async (rustica's asynchronous offload) on an
# emulated adapter that misbehaves under load. A test: it fails unless, in
# every scenario,
#   - ab completes every request and reports 0 failed;
#   - HAProxy is alive from start to end;
#   - rustica counted exactly one signature per handshake HAProxy
#     completed (its CumSslConns), none failed;
#   - every faulty adapter answer (an errno, a corrupt result) became a
#     fallback, and so did every call that outlived rustica's deadline
#     (offload-timeout-ms, 1000 ms by default): fallbacks equal the faulty
#     calls the emulator's settings imply plus rustica's late count, and
#     the late count equals the hung calls, each answer discarded when it
#     came; at least one signature ran through a paused job.
# Scenarios (TLS 1.3, then TLS 1.2 ECDHE-RSA, in each):
#   errors   1 call in 50 fails (EIO), 1 in 97 returns a wrong result
#   busy     bursts of 5 EBUSY answers, from every 40th call on
#   hang     1 call in 150 hangs for 3 s before answering (longer than the
#            deadline: the job it belongs to is finished in software after
#            1 s; the other jobs do not wait and the adapter keeps serving)
#
# Usage: scripts/test-haproxy-faults.sh [REQUESTS [CONCURRENCY]]
#   (defaults 2000 and 32). Installs haproxy and apache2-utils (ab) when
#   missing. Uses the debug build (scripts/test.sh's) unless
#   RUSTICA_PROFILE=release.
# shellcheck source-path=SCRIPTDIR source-path=.
. "$(dirname "$0")/lib/common.sh"
requests=${1:-2000}
concurrency=${2:-32}
. scripts/lib/haproxy-common.sh
haproxy_tools
haproxy_workspace "${RUSTICA_PROFILE:-debug}"

haproxy_pki "$work" "$module" "$emu"
haproxy_async_cfg "$work/haproxy.cfg" "$work"

show_info() { haproxy_info "$work/haproxy.sock" "$1"; }

# A failed check is counted and the run goes on; the count fails it at
# the end (common.sh's fail would stop at the first).
failures=0
failed_check() {
  say "$*"
  failures=$((failures + 1))
}

# One scenario: NAME, TLS version, then the emulator's settings (VAR=VALUE).
scenario() {
  local name=$1 tls=$2
  shift 2
  local stats=$work/stats-$name-$tls
  env LIBICA_EMU_LATENCY_US=2000 LIBICA_EMU_UNITS=16 "$@" \
    OPENSSL_CONF="$work/rustica.cnf" RUSTICA_STATS_PATH="$stats" \
    haproxy -db -f "$work/haproxy.cfg" >"$work/haproxy.log" 2>&1 &
  haproxy_pid=$!
  local up=0
  for _ in $(seq 100); do
    if [ -n "$(show_info CumSslConns)" ]; then
      up=1
      break
    fi
    sleep 0.1
  done
  if [ "$up" != 1 ]; then
    failed_check "$name TLS $tls: haproxy did not start: $(cat "$work/haproxy.log")"
    kill "$haproxy_pid" 2>/dev/null || true
    haproxy_pid=
    return
  fi
  local proto cipher=()
  if [ "$tls" = 1.3 ]; then proto=TLS1.3; else proto=TLS1.2; cipher=(-Z ECDHE-RSA-AES128-GCM-SHA256); fi
  ab -s 60 -n "$requests" -c "$concurrency" -f "$proto" "${cipher[@]}" \
    "https://127.0.0.1:$port/" >"$work/ab.out" 2>&1 || true
  # Requests still with the adapter (a call hanging 3 s) finish before
  # counting: the count must hold still for 4 s.
  local last=-1 now same=0
  for _ in $(seq 30); do
    now=$("$rustica" stats --json --path "$stats" | python3 -c 'import json,sys; s=json.load(sys.stdin)["ops"]["sign"]; print(sum(s[k] for k in ("libica","software","fallback","failed")))')
    if [ "$now" = "$last" ]; then same=$((same + 1)); else same=0; fi
    [ "$same" -lt 4 ] || break
    last=$now
    sleep 1
  done
  local alive=yes
  kill -0 "$haproxy_pid" 2>/dev/null || alive=no
  # Connections as HAProxy counted them (ab may open a few more than it
  # sends requests on; the readiness check above used the stats socket,
  # not a connection).
  local handshakes
  handshakes=$(show_info CumSslConns)
  kill "$haproxy_pid" 2>/dev/null || true
  wait "$haproxy_pid" 2>/dev/null || true
  haproxy_pid=
  local complete failed
  complete=$(awk '/^Complete requests:/ { print $3 }' "$work/ab.out")
  failed=$(awk '/^Failed requests:/ { print $3 }' "$work/ab.out")
  rm -f "$work/haproxy.sock"
  local line
  line=$("$rustica" stats --json --path "$stats" | python3 -c '
import json, sys
d = json.load(sys.stdin)
s = d["ops"]["sign"]
total = s["libica"] + s["software"] + s["fallback"] + s["failed"]
print(total, s["libica"], s["fallback"], s["failed"], s["async"], d["async_max_inflight"], s["late"], s["late_discarded"])')
  read -r total on_libica fallback sfailed asynced inflight late discarded <<<"$line"
  # Every signature tried the adapter first (2048 bits, in range): those
  # that ended on libica and those that fell back.
  local on_libica_attempts=$((on_libica + fallback))
  # The emulator numbers the calls of one process (HAProxy's, one thread)
  # 1, 2, ...; which of them were faulty or hung follows from its settings.
  # A late request given up while still queued was never sent: it is late
  # but has no answer to discard and no number.
  local sent=$((on_libica_attempts - late + discarded)) faulty hung
  read -r faulty hung < <(env "$@" python3 -c '
import os, sys
n = int(sys.argv[1])
g = lambda k, d=0: int(os.environ.get(k, d))
every, burst, corrupt = g("LIBICA_EMU_ERRNO_EVERY"), max(g("LIBICA_EMU_ERRNO_BURST", 1), 1), g("LIBICA_EMU_CORRUPT_EVERY")
hang = g("LIBICA_EMU_HANG_EVERY")
hung = [q for q in range(1, n + 1) if hang and q % hang == 0]
faulty = [q for q in range(1, n + 1) if q not in hung
          and ((every and q % every < burst) or (corrupt and q % corrupt == 0))]
print(len(faulty), len(hung))' "$sent")
  printf '| %s | %s | %s/%s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$name" "$tls" "${complete:-0}" "$requests" \
    "${failed:-?}" "$alive" "$handshakes" "$total" "$on_libica" "$fallback" "$faulty" "$late" "$discarded" "$asynced" "$inflight"
  [ "${complete:-0}" = "$requests" ] || failed_check "$name TLS $tls: ab completed ${complete:-0} of $requests: $(tail -5 "$work/ab.out")"
  [ "${failed:-1}" = 0 ] || failed_check "$name TLS $tls: ab reports ${failed:-?} failed requests"
  [ "$alive" = yes ] || failed_check "$name TLS $tls: haproxy died: $(tail -5 "$work/haproxy.log")"
  [ "$total" = "$handshakes" ] || failed_check "$name TLS $tls: $total signatures counted for $handshakes handshakes"
  [ "$sfailed" = 0 ] || failed_check "$name TLS $tls: $sfailed signatures failed"
  [ "$on_libica_attempts" = "$total" ] || failed_check "$name TLS $tls: $on_libica_attempts of $total signatures tried the adapter"
  [ "$fallback" = $((faulty + late)) ] || failed_check "$name TLS $tls: $faulty faulty adapter answers and $late late, $fallback fallbacks"
  [ "$late" = "$hung" ] || failed_check "$name TLS $tls: $hung calls hung past the deadline, $late counted late"
  [ "$discarded" = "$late" ] || failed_check "$name TLS $tls: $late late requests, $discarded late answers discarded"
  [ "$faulty" -gt 0 ] || failed_check "$name TLS $tls: no fault was injected"
  [ "$asynced" -gt 0 ] || failed_check "$name TLS $tls: no signature went through a paused job"
}

echo "haproxy $(haproxy -v | awk 'NR == 1 { print $3 }') ssl-mode-async, nbthread 1; ab -n $requests -c $concurrency; emulated adapter 16 units x 2 ms; rustica ${RUSTICA_PROFILE:-debug}"
echo
echo "| faults | TLS | completed | ab failed | haproxy alive | handshakes | signatures | on libica | fallback | faulty answers | late | discarded | async | max in flight |"
echo "|---|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
for tls in 1.3 1.2; do
  scenario errors "$tls" LIBICA_EMU_ERRNO_EVERY=50 LIBICA_EMU_CORRUPT_EVERY=97
  scenario busy "$tls" LIBICA_EMU_ERRNO=EBUSY LIBICA_EMU_ERRNO_EVERY=40 LIBICA_EMU_ERRNO_BURST=5
  scenario hang "$tls" LIBICA_EMU_HANG_EVERY=150 LIBICA_EMU_HANG_MS=3000 LIBICA_EMU_CORRUPT_EVERY=97
done
if [ "$failures" -gt 0 ]; then
  fail "$failures check(s) failed"
fi
echo
echo "test-haproxy-faults: every scenario passed"
