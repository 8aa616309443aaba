# Sourced by the HAProxy scripts (bench-haproxy.sh, test-haproxy-faults.sh,
# soak-haproxy.sh): what each of them sets up the same way.
#
#   haproxy_tools                   installs haproxy and apache2-utils (ab)
#                                   when missing
#   haproxy_workspace PROFILE       builds rustica (release: scripts/build.sh
#                                   when missing; debug: cargo build), sets
#                                   $module, $emu, $rustica, a scratch $work
#                                   and $haproxy_pid, and on exit stops the
#                                   HAProxy in $haproxy_pid and removes $work
#   haproxy_pki WORK MODULE EMU     WORK/rustica.cnf (rustica on the
#                                   emulated libica EMU, preferred),
#                                   WORK/default.cnf, an RSA-2048
#                                   certificate and key in WORK/server.pem;
#                                   sets $port to a free loopback port
#   haproxy_async_cfg FILE WORK     an ssl-mode-async HAProxy (one thread, no
#                                   session cache or tickets) on $port, with
#                                   a stats socket WORK/haproxy.sock
#   haproxy_info SOCKET FIELD       a field of HAProxy's "show info" (empty
#                                   while HAProxy is not up)

haproxy_tools() {
  local need=() pkg sudo=""
  for pkg in haproxy apache2-utils; do dpkg -s "$pkg" >/dev/null 2>&1 || need+=("$pkg"); done
  [ ${#need[@]} -gt 0 ] || return 0
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need[@]}" >/dev/null
}

haproxy_workspace() {
  local profile=$1
  if [ "$profile" = release ]; then
    [ -f target/release/rustica.so ] || scripts/build.sh >/dev/null
  else
    cargo build -q -p rustica -p libica-emu -p rustica-card -p rustica-harness
    . scripts/lib/module.sh
    place_module target/debug/librustica.so target/debug/rustica.so
  fi
  module=$PWD/target/$profile/rustica.so
  emu=$PWD/target/$profile/libica_emu.so
  rustica=$PWD/target/$profile/rustica
  work=$(mktemp -d)
  haproxy_pid=
  trap haproxy_cleanup EXIT
}

haproxy_cleanup() {
  [ -z "$haproxy_pid" ] || kill "$haproxy_pid" 2>/dev/null || true
  rm -rf "$work"
}

haproxy_pki() {
  local work=$1 module=$2 emu=$3
  . scripts/lib/openssl-cnf.sh
  rustica_conf "$work/rustica.cnf" "$module" "backend = libica" "libica = $emu"
  stock_conf "$work/default.cnf"
  OPENSSL_CONF="$work/default.cnf" openssl req -x509 -newkey rsa:2048 -nodes -subj /CN=localhost \
    -days 2 -keyout "$work/key.pem" -out "$work/cert.pem" 2>/dev/null
  cat "$work/cert.pem" "$work/key.pem" >"$work/server.pem"
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
}

haproxy_async_cfg() {
  cat >"$1" <<CFG
global
  nbthread 1
  maxconn 4096
  # One descriptor per connection for rustica's eventfds, which HAProxy
  # counts for an ENGINE only (docs/security.md).
  maxpipes 2048
  tune.ssl.cachesize 0
  ssl-mode-async
  stats socket $2/haproxy.sock
defaults
  mode http
  timeout connect 5s
  timeout client 60s
  timeout server 60s
frontend tls
  bind 127.0.0.1:$port ssl crt $2/server.pem no-tls-tickets
  http-request return status 200 content-type text/plain string ok
CFG
}

haproxy_info() {
  python3 - "$1" "$2" 2>/dev/null <<'PY' || true
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
s.sendall(b"show info\n")
data = b""
while True:
    b = s.recv(65536)
    if not b:
        break
    data += b
for line in data.decode().splitlines():
    if line.startswith(sys.argv[2] + ":"):
        print(line.split(":", 1)[1].strip())
PY
}
