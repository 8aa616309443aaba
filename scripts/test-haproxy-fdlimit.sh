#!/usr/bin/env bash
# rustica's eventfds against HAProxy's own descriptor budget
# (docs/security.md, "Eventfds and HAProxy's descriptor budget"). With
# ssl-mode-async, libssl keeps one descriptor of rustica's (an eventfd)
# per TLS connection whose handshake paused, for as long as the
# connection lives, as an asynchronous ENGINE does. HAProxy sizes its
# descriptor table (Maxsock) from maxconn and adds maxconn per async
# ENGINE it loads itself, but nothing for a provider; the descriptors
# must be reserved in its configuration: `maxpipes` counts two
# descriptors each into Maxsock, so maxpipes = maxconn / 2 reserves one
# per connection.
#
# This fills HAProxy (its descriptor limit set to exactly its Maxsock) to
# maxconn TLS connections at once, each with one request proxied to a
# backend in another process (two descriptors of HAProxy's each, and one
# of rustica's once its handshake paused), and fails unless every
# connection and request succeeds. It prints HAProxy's limit and the peak
# of descriptors by kind.
#
# Usage: scripts/test-haproxy-fdlimit.sh [MAXCONN]   (default 200)
#   FDLIMIT_PIPES=N     maxpipes (default MAXCONN / 2, the reservation;
#                       0: HAProxy's own sizing, where connections fail)
#   FDLIMIT_EXTRA=N     descriptors allowed beyond Maxsock (default 0;
#                       with FDLIMIT_PIPES=0, HAProxy 2.6 then crashes:
#                       an eventfd numbered past its table)
#   FDLIMIT_SIDE=default  the same run on stock OpenSSL (the reference)
# shellcheck source-path=SCRIPTDIR source-path=.
. "$(dirname "$0")/lib/common.sh"
maxconn=${1:-200}
side=${FDLIMIT_SIDE:-rustica}
pipes=${FDLIMIT_PIPES:-$((maxconn / 2))}
. scripts/lib/haproxy-common.sh
haproxy_tools
haproxy_workspace "${RUSTICA_PROFILE:-debug}"
haproxy_pki "$work" "$module" "$emu"
backend_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')

# $1: HAProxy's maxpipes (each pipe counts two descriptors into Maxsock).
write_cfg() {
  cat >"$work/haproxy.cfg" <<CFG
global
  nbthread 1
  maxconn $maxconn
  maxpipes $1
  tune.ssl.cachesize 0
  ssl-mode-async
  stats socket $work/haproxy.sock
defaults
  mode http
  timeout connect 5s
  timeout client 120s
  timeout server 120s
  timeout http-keep-alive 120s
frontend tls
  bind 127.0.0.1:$port ssl crt $work/server.pem no-tls-tickets
  default_backend remote
backend remote
  http-reuse never
  server remote 127.0.0.1:$backend_port
CFG
}
# The server behind it, another process (a remote backend's descriptors
# are not HAProxy's): plain HTTP, stock OpenSSL.
cat >"$work/backend.cfg" <<CFG
global
  maxconn 4000
defaults
  mode http
  timeout client 120s
  timeout http-keep-alive 120s
frontend plain
  bind 127.0.0.1:$backend_port
  http-request return status 200 content-type text/plain string ok
CFG
OPENSSL_CONF="$work/default.cnf" haproxy -db -f "$work/backend.cfg" >"$work/backend.log" 2>&1 &
backend_pid=$!
trap 'kill $backend_pid 2>/dev/null || true; haproxy_cleanup' EXIT

start_haproxy() {
  env LIBICA_EMU_LATENCY_US=2000 LIBICA_EMU_UNITS=16 OPENSSL_CONF="$work/$side.cnf" \
    RUSTICA_STATS_PATH="$work/stats" prlimit --nofile="$1" \
    haproxy -db -f "$work/haproxy.cfg" >"$work/haproxy.log" 2>&1 &
  haproxy_pid=$!
  for _ in $(seq 100); do
    [ -n "$(haproxy_info "$work/haproxy.sock" Maxsock)" ] && return 0
    sleep 0.1
  done
  cat "$work/haproxy.log" >&2
  echo "test-haproxy-fdlimit: haproxy did not start" >&2
  exit 1
}
stop_haproxy() {
  kill "$haproxy_pid" 2>/dev/null || true
  wait "$haproxy_pid" 2>/dev/null || true
  haproxy_pid=
}
# HAProxy computes the descriptors maxconn needs (Maxsock) but only ever
# raises the limit: the process gets exactly that limit, as on a host
# whose limit is what HAProxy asked for, by a first start that reads it.
write_cfg "$pipes"
start_haproxy "$(ulimit -Hn)"
maxsock=$(haproxy_info "$work/haproxy.sock" Maxsock)
stop_haproxy
limit=$((maxsock + ${FDLIMIT_EXTRA:-0}))
start_haproxy "$limit:$limit"
limit=$(awk '/Max open files/ {print $4}' "/proc/$haproxy_pid/limits")

# Every connection HAProxy may hold at once, each with its server side.
clients=$maxconn
python3 - "$port" "$clients" "$haproxy_pid" >"$work/client.out" <<'PY'
import os, socket, ssl, sys, threading, time

port, n, pid = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
ctx = ssl.create_default_context()
ctx.check_hostname = False
ctx.verify_mode = ssl.CERT_NONE
ready = threading.Barrier(n + 1)
release = threading.Event()
failures = []

def fds():
    kinds = {}
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        kind = "eventfd" if "eventfd" in target else ("socket" if target.startswith("socket:") else "other")
        kinds[kind] = kinds.get(kind, 0) + 1
    return kinds

def client(i):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=60) as raw:
            with ctx.wrap_socket(raw, server_hostname="localhost") as s:
                s.sendall(b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")
                data = b""
                while b"\r\n\r\nok" not in data:
                    chunk = s.recv(4096)
                    if not chunk:
                        break
                    data += chunk
                if not data.startswith(b"HTTP/1.1 200"):
                    failures.append(f"{i}: {data[:40]!r}")
                ready.wait(120)
                release.wait(120)
    except Exception as e:
        failures.append(f"{i}: {e!r}")
        try:
            ready.wait(120)
        except threading.BrokenBarrierError:
            pass

threads = [threading.Thread(target=client, args=(i,)) for i in range(n)]
for t in threads:
    t.start()
ready.wait(180)
peak = fds()
release.set()
for t in threads:
    t.join()
print(f"connections {n}")
print(f"failed {len(failures)}")
for k in ("socket", "eventfd", "other"):
    print(f"peak_{k} {peak.get(k, 0)}")
for f in failures[:10]:
    print(f"failure {f}")
PY
stop_haproxy
value() { awk -v k="$1" '$1 == k {print $2}' "$work/client.out"; }
failed=$(value failed)
echo "test-haproxy-fdlimit: maxconn $maxconn, maxpipes $pipes, HAProxy's Maxsock $maxsock, RLIMIT_NOFILE $limit;" \
  "$(value connections) TLS connections open at once, each proxied: $failed failed;" \
  "peak descriptors: $(value peak_socket) sockets, $(value peak_eventfd) eventfds, $(value peak_other) other"
grep '^failure' "$work/client.out" >&2 || true
signed=$("$rustica" stats --json --path "$work/stats" \
  | python3 -c 'import json,sys; s=json.load(sys.stdin)["ops"]["sign"]; print(s["libica"] + s["fallback"], s["async"])')
echo "test-haproxy-fdlimit: rustica signatures (libica+fallback, async): $signed"
if grep -Ei 'accept|too many open files|EMFILE' "$work/haproxy.log" >&2; then
  echo "test-haproxy-fdlimit: HAProxy ran out of descriptors" >&2
  exit 1
fi
[ "$failed" = 0 ] || { tail -n 5 "$work/haproxy.log" "$work/backend.log" >&2; fail "connections failed"; }
[ "$side" = default ] || [ "${signed#* }" -gt 0 ] || fail "no signature ran through a paused job"
echo "test-haproxy-fdlimit: ok"
