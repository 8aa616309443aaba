#!/usr/bin/env bash
# Card maintenance under load: what busy TLS servers see while the shared
# card goes away and comes back. A measurement, and with --check a gate.
#
# One rustica-card (2 cards, unit 100 us, `--sysfs` request counters), in
# a private (0700) scratch directory; against it, one after the other:
#   haproxy  HAProxy, ssl-mode-async, nbthread 2 (rustica's async offload)
#   nginx    nginx, 2 worker processes (synchronous: a worker waits for
#            each of its RSA operations)
# each loading rustica (`backend = libica`, `libica` = the emulated libica,
# LIBICA_EMU_CARD = the card's socket) with an RSA-2048 server key signed
# by a CA of the run. The load (scripts/lib/card_maintenance.py):
# CONCURRENCY Python threads, each one new handshake after another (no
# resumption, no tickets; half TLS 1.3, half TLS 1.2 ECDHE-RSA), each
# verifying the server's certificate against the CA and its signature, so a
# wrong signature fails the handshake (BAD_SIGNATURE, counted apart). About
# 64 s per server, while on the card's control socket:
#   1 of 2 cards offline 10 s, then back;  both offline 5 s, then back;
#   queue 00.0000 stalled 10 s, then resumed;  service time x20 for 5 s;
#   an EIO burst (100 requests);  a run of 100 corrupt answers.
# Per phase (a handshake counts in the phase that holds the middle of its
# time): handshakes done, failed and wrong, p50/p99/max latency, the
# longest time without a completed handshake, rustica's signatures by
# backend (its stats file sampled at the phase boundaries), the card's
# requests per card (sysfs request_count) and answers by outcome, and the
# time from "card back" until rustica's requests reach that card again
# (sysfs polled every 50 ms: the resolution; for the EIO and corrupt runs
# "back" is when the card had answered the whole run).
#
# Usage: scripts/card-maintenance.sh [--check] [--out DIR] [haproxy|nginx|both]
#   --check   exit 1 unless every phase had 0 failed handshakes and 0 wrong
#             signatures, rustica's requests reached the card again within
#             MAINT_BACK_MS (1000) of every return, and no handshake of the
#             stall phase took longer than rustica's deadline
#             (offload-timeout-ms, MAINT_DEADLINE_MS: 1000, the default)
#             plus MAINT_STALL_MARGIN_MS (2000); .ci/run runs it so, with
#             MAINT_SCALE=0.5
#   --out     where the TSV files go (default target/card-maintenance)
# MAINT_CONCURRENCY (default 8) client threads; MAINT_SCALE multiplies the
# phase lengths (a quick try of the script). Needs the release build
# (scripts/build.sh); installs haproxy when missing. Nothing it starts
# outlives it.
# shellcheck source-path=SCRIPTDIR source-path=.
. "$(dirname "$0")/lib/common.sh"
check=0 out=$PWD/target/card-maintenance which=both
while [ $# -gt 0 ]; do
  case $1 in
    --check) check=1 ;;
    --out) out=$2; shift ;;
    haproxy | nginx | both) which=$1 ;;
    *) die "usage: $0 [--check] [--out DIR] [haproxy|nginx|both]" ;;
  esac
  shift
done
concurrency=${MAINT_CONCURRENCY:-8}
scale=${MAINT_SCALE:-1}

for bin in target/release/rustica.so target/release/libica_emu.so target/release/rustica-card target/release/rustica; do
  [ -e "$bin" ] || die "$bin missing: run scripts/build.sh"
done
module=$PWD/target/release/rustica.so
emu=$PWD/target/release/libica_emu.so
rustica=$PWD/target/release/rustica
command -v nginx >/dev/null || die "nginx missing: scripts/setup.sh tests installs it"
if ! command -v haproxy >/dev/null; then
  for _ in 1 2 3 4 5; do
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq haproxy >/dev/null && break
    sleep 5 # dpkg may be locked
  done
fi

. scripts/lib/card.sh
. scripts/lib/openssl-cnf.sh
work=$(mktemp -d) # 0700: the card refuses a directory others may write
server_pid="" server_name="" driver_pid=""

# Stops the server under test: HAProxy, or nginx's master and, should any
# outlive it, the workers it had.
stop_server() {
  [ -n "$server_pid" ] || return 0
  local children
  children=$(ps -o pid= --ppid "$server_pid" 2>/dev/null || true)
  kill "$server_pid" 2>/dev/null || true
  for _ in $(seq 50); do kill -0 "$server_pid" 2>/dev/null || break; sleep 0.1; done
  kill -9 "$server_pid" 2>/dev/null || true
  wait "$server_pid" 2>/dev/null || true
  for pid in $children; do kill -9 "$pid" 2>/dev/null || true; done
  server_pid=""
}
cleanup() {
  [ -z "$driver_pid" ] || kill "$driver_pid" 2>/dev/null || true
  [ -z "$driver_pid" ] || wait "$driver_pid" 2>/dev/null || true
  stop_server
  card_stop 2>/dev/null || true
  [ -z "${CARD_PID:-}" ] || kill -9 "$CARD_PID" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# PKI: a CA and an RSA-2048 server key and certificate for localhost.
stock_conf "$work/default.cnf"
rustica_conf "$work/rustica.cnf" "$module" "backend = libica" "libica = $emu"
export OPENSSL_CONF=$work/default.cnf # the client and the tools: stock OpenSSL
openssl req -x509 -newkey rsa:2048 -nodes -subj /CN=maintenance-ca -days 2 \
  -keyout "$work/ca.key" -out "$work/ca.pem" 2>/dev/null
openssl req -newkey rsa:2048 -nodes -subj /CN=localhost -keyout "$work/key.pem" \
  -out "$work/server.csr" 2>/dev/null
printf 'subjectAltName = DNS:localhost\n' >"$work/san.ext"
openssl x509 -req -in "$work/server.csr" -CA "$work/ca.pem" -CAkey "$work/ca.key" \
  -CAcreateserial -days 2 -extfile "$work/san.ext" -out "$work/cert.pem" 2>/dev/null
cat "$work/cert.pem" "$work/key.pem" >"$work/server.pem"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')

mkdir -m 0700 "$work/sys"
card_start target/release/rustica-card "$work/card.sock" "$work/card.log" \
  --cards 2 --unit-us 100 --sysfs "$work/sys"
server_env=(LIBICA_EMU_CARD="$work/card.sock" OPENSSL_CONF="$work/rustica.cnf")

haproxy_start() {
  cat >"$work/haproxy.cfg" <<CFG
global
  nbthread 2
  maxconn 4096
  maxpipes 2048
  tune.ssl.cachesize 0
  ssl-mode-async
defaults
  mode http
  timeout connect 5s
  timeout client 60s
  timeout server 60s
frontend tls
  bind 127.0.0.1:$port ssl crt $work/server.pem no-tls-tickets
  http-request return status 200 content-type text/plain string ok
CFG
  env "${server_env[@]}" RUSTICA_STATS_PATH="$work/stats-haproxy" \
    haproxy -db -f "$work/haproxy.cfg" >"$work/haproxy.log" 2>&1 &
  server_pid=$!
}

nginx_start() {
  mkdir -p "$work/nginx/tmp"
  cat >"$work/nginx.conf" <<CONF
daemon off;
master_process on;
worker_processes 2;
user root;
pid $work/nginx/nginx.pid;
error_log $work/nginx.log warn;
env OPENSSL_CONF;
env RUSTICA_STATS_PATH;
env LIBICA_EMU_CARD;
events { worker_connections 512; }
http {
  access_log off;
  client_body_temp_path $work/nginx/tmp/body;
  proxy_temp_path $work/nginx/tmp/proxy;
  fastcgi_temp_path $work/nginx/tmp/fcgi;
  uwsgi_temp_path $work/nginx/tmp/uwsgi;
  scgi_temp_path $work/nginx/tmp/scgi;
  server {
    listen 127.0.0.1:$port ssl;
    ssl_certificate $work/cert.pem;
    ssl_certificate_key $work/key.pem;
    ssl_protocols TLSv1.2 TLSv1.3;
    ssl_session_cache off;
    ssl_session_tickets off;
    location / { return 200 "ok\n"; }
  }
}
CONF
  env "${server_env[@]}" RUSTICA_STATS_PATH="$work/stats-nginx" \
    nginx -c "$work/nginx.conf" -p "$work/nginx" -e "$work/nginx.log" >"$work/nginx.out" 2>&1 &
  server_pid=$!
}

mkdir -p "$out"
run_server() {
  server_name=$1
  "${1}_start"
  local up=0
  for _ in $(seq 100); do
    if python3 -c "import socket; socket.create_connection(('127.0.0.1',$port),0.2)" 2>/dev/null; then
      up=1
      break
    fi
    kill -0 "$server_pid" 2>/dev/null || break
    sleep 0.1
  done
  if [ "$up" != 1 ]; then
    echo "card-maintenance: $1 did not start:" >&2
    cat "$work/$1".* >&2 || true
    exit 1
  fi
  echo
  echo "== $1 ($(date -u +%FT%TZ); $concurrency client threads; card: 2 cards x 1 queue, unit 100 us) =="
  # In the background and waited for, so that a signal runs the trap now.
  python3 scripts/lib/card_maintenance.py --server "$1" --port "$port" --ca "$work/ca.pem" \
    --card-socket "$work/card.sock" --sysfs "$work/sys" --cards 2 --rustica "$rustica" \
    --stats "$work/stats-$1" --out "$out" --concurrency "$concurrency" --scale "$scale" &
  driver_pid=$!
  wait "$driver_pid"
  driver_pid=""
  local alive=yes
  kill -0 "$server_pid" 2>/dev/null || alive=no
  echo "$1 alive at the end: $alive"
  stop_server
  cp "$work/$1.log" "$out/$1-server.log" 2>/dev/null || true
}

echo "card-maintenance: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); $(openssl version)"
servers=(haproxy nginx)
[ "$which" = both ] || servers=("$which")
for s in "${servers[@]}"; do run_server "$s"; done

# One TSV of every server's phases.
first=1
for s in "${servers[@]}"; do
  if [ "$first" = 1 ]; then cat "$out/phases-$s.tsv"; first=0; else tail -n +2 "$out/phases-$s.tsv"; fi
done >"$out/card-maintenance.tsv"
echo
echo "figures: $out/card-maintenance.tsv (per handshake: $out/handshakes-*.tsv)"

[ "$check" = 1 ] || exit 0
# The requirements (docs/card-model.md, "Card maintenance under load"):
# no failed handshake, no wrong signature, rustica back on the card within
# MAINT_BACK_MS after every outage, and no handshake of the stall phase
# longer than the deadline plus MAINT_STALL_MARGIN_MS (its own software
# time and the host's load).
python3 - "$out/card-maintenance.tsv" "${MAINT_BACK_MS:-1000}" \
  "$((${MAINT_DEADLINE_MS:-1000} + ${MAINT_STALL_MARGIN_MS:-2000}))" <<'PY' || fail "the scenario's requirements (above)"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
back_bound, stall_bound = float(sys.argv[2]), float(sys.argv[3])
problems = []
for r in rows:
    where = "%s, %s" % (r["server"], r["phase"])
    if int(r["failed"]):
        problems.append("%s: %s failed handshakes" % (where, r["failed"]))
    if int(r["wrong"]):
        problems.append("%s: %s wrong signatures" % (where, r["wrong"]))
    b = r["back_to_card_ms"]
    if b == "never" or (b and float(b) > back_bound):
        problems.append("%s: back to the card after %s ms (bound %.0f)" % (where, b, back_bound))
    if "stalled" in r["phase"] and r["max_ms"] != "-" and float(r["max_ms"]) > stall_bound:
        problems.append("%s: a handshake took %s ms (bound %.0f: the deadline and a margin)"
                        % (where, r["max_ms"], stall_bound))
for p in problems:
    print("card-maintenance: " + p, file=sys.stderr)
sys.exit(1 if problems else 0)
PY
say "requirements met: 0 failed, 0 wrong, back to the card within ${MAINT_BACK_MS:-1000} ms, the stall's handshakes within the deadline and a margin"
