# shellcheck shell=bash
# Sourced by scripts/test-interposer.sh: the cases of rustica's
# `backend = zcrypt` (its header lists them), run with the stock `openssl`
# command loading target/debug/rustica.so, through the z90crypt
# interposer, against a rustica-card of their own.
#
#   zcrypt_run WORK [CASE...]   builds rustica, starts the card in
#                               WORK/zcrypt, runs the cases (all when none
#                               is named); status 1 when one failed
#   zcrypt_card_stop            stops that card (the caller's cleanup)
#
# Each case starts from a reset card (counters and sysfs request counts
# zero, both cards online) and an empty rustica counters file.
# shellcheck source-path=SCRIPTDIR
. scripts/lib/card.sh
. scripts/lib/openssl-cnf.sh
. scripts/lib/module.sh

ZCRYPT_CASES=(zcrypt-sign zcrypt-verify zcrypt-no-socket zcrypt-no-device zcrypt-too-big
  zcrypt-offline-back zcrypt-online-later zcrypt-async zcrypt-keygen zcrypt-doctor)
zc="" zc_lib="" zc_bad=0 zc_sockdir=""

zcrypt_card_stop() {
  card_stop
  [ -z "$zc_sockdir" ] || rm -rf "$zc_sockdir"
}

# A failed check of the running case: says which, marks the case failed.
zc_check() { # what, then a command that must succeed
  local what=$1
  shift
  if ! "$@"; then
    echo "    check failed: $what" >&2
    zc_bad=1
  fi
}
zc_eq() { [ "$1" = "$2" ] || { echo "    got '$1', want '$2'" >&2; return 1; }; }

# A command with rustica (backend = zcrypt) in MODE: card (the interposer
# and the card's socket), nosocket (the interposer, nothing listening),
# nodevice (no interposer: no /dev/z90crypt on this host). ZC_CONF picks
# another configuration.
zc_run() { # mode, command...
  local mode=$1
  shift
  local env=(OPENSSL_CONF="${ZC_CONF:-$zc/zcrypt.cnf}" RUSTICA_STATS_PATH="$zc/stats")
  case $mode in
    card) env+=(Z90CRYPT_CARD_SOCKET="$zc/card.sock" LD_PRELOAD="$zc_lib") ;;
    nosocket) env+=(Z90CRYPT_CARD_SOCKET="$zc/none.sock" LD_PRELOAD="$zc_lib") ;;
    nodevice) ;;
  esac
  env "${env[@]}" "$@"
}
# The default provider alone: the reference signatures and verification.
zc_stock() { OPENSSL_CONF="$zc/stock.cnf" "$@"; }

# rustica's count of OP on BACKEND (its `stats --json`).
zc_stat() { # op backend
  RUSTICA_STATS_PATH="$zc/stats" target/debug/rustica stats --json | python3 -c '
import json, sys
print(json.load(sys.stdin)["ops"][sys.argv[1]][sys.argv[2]])' "$1" "$2"
}
# The kernel's request counters the card keeps (every card's sysfs
# request_count): requests put on a queue.
zc_sysfs() { cat "$zc"/sys/devices/ap/card*/request_count | awk '{ s += $1 } END { print s + 0 }'; }

# Signs DOC with KEY in MODE into OUT and checks the signature: equal to
# the default provider's, and verified by it.
zc_sign() { # mode key out
  local mode=$1 key=$2 out=$3
  if ! zc_run "$mode" openssl dgst -sha256 -sign "$key" -out "$out" "$zc/doc" 2>>"$zc/stderr"; then
    echo "    check failed: openssl dgst -sign ($mode): $(tail -3 "$zc/stderr")" >&2
    zc_bad=1
  fi
  zc_check "the signature equals the default provider's" cmp -s "$out" "$key.sig"
  zc_check "the default provider verifies it" zc_stock openssl dgst -sha256 \
    -verify "$key.pub" -signature "$out" "$zc/doc" >/dev/null
}
zc_all_offline() { card_ctl offline 0 600000 >/dev/null && card_ctl offline 1 600000 >/dev/null; }

case_zcrypt_sign() {
  zc_sign card "$zc/k2048.pem" "$zc/s.sig"
  zc_check "rustica counts it under libica" zc_eq "$(zc_stat sign libica)" 1
  zc_check "no fallback" zc_eq "$(zc_stat sign fallback)" 0
  zc_check "the card has 1 CRT request" zc_eq "$(card_requests crt ok)" 1
  zc_check "and no other" zc_eq "$(card_requests '*' '*')" 1
  zc_check "the kernel's counters: 1 request" zc_eq "$(zc_sysfs)" 1
}
case_zcrypt_verify() {
  zc_stock openssl dgst -sha256 -sign "$zc/k2048.pem" -out "$zc/v.sig" "$zc/doc"
  zc_check "verified" zc_run card openssl dgst -sha256 -verify "$zc/k2048.pem.pub" \
    -signature "$zc/v.sig" "$zc/doc" >/dev/null
  zc_check "rustica verified it in software" zc_eq "$(zc_stat verify software)" 1
  zc_check "the card has no request" zc_eq "$(card_requests '*' '*')" 0
  zc_check "the kernel's counters: none" zc_eq "$(zc_sysfs)" 0
}
case_zcrypt_no_socket() {
  zc_sign nosocket "$zc/k2048.pem" "$zc/n.sig"
  zc_check "counted a fallback" zc_eq "$(zc_stat sign fallback)" 1
  zc_check "not on libica" zc_eq "$(zc_stat sign libica)" 0
}
case_zcrypt_no_device() {
  RUSTICA_DEBUG=stderr zc_sign nodevice "$zc/k2048.pem" "$zc/d.sig"
  zc_check "counted a fallback" zc_eq "$(zc_stat sign fallback)" 1
  zc_check "the trace says the device did not open" \
    grep -q "backend = zcrypt: /dev/z90crypt.*cannot be opened" "$zc/stderr"
  zc_check "and why the signature fell back" \
    grep -q "backend=fallback (ICARSACRT returned ENODEV" "$zc/stderr"
}
case_zcrypt_too_big() {
  ZC_CONF=$zc/wide.cnf zc_sign card "$zc/k7680.pem" "$zc/b.sig"
  zc_check "counted a fallback" zc_eq "$(zc_stat sign fallback)" 1
  zc_check "the card has no request" zc_eq "$(card_requests '*' '*')" 0
}
case_zcrypt_offline_back() {
  zc_sign card "$zc/k2048.pem" "$zc/o1.sig"
  zc_all_offline
  zc_sign card "$zc/k2048.pem" "$zc/o2.sig"
  zc_check "offline: a fallback" zc_eq "$(zc_stat sign fallback)" 1
  card_ctl online 0 >/dev/null
  card_ctl online 1 >/dev/null
  zc_sign card "$zc/k2048.pem" "$zc/o3.sig"
  zc_check "back on the card" zc_eq "$(zc_stat sign libica)" 2
  zc_check "the card answered 2 CRT requests" zc_eq "$(card_requests crt ok)" 2
  zc_check "the kernel's counters: 2 requests" zc_eq "$(zc_sysfs)" 2
}
# One stock s_server process, started while every card is offline, two
# TLS 1.3 handshakes (one signature each), a card brought online between.
# Its Unix socket sits in a directory of its own with a short name:
# OpenSSL 3.0's s_server fails on socket paths of about 32 characters.
case_zcrypt_online_later() {
  local sock pid
  zc_sockdir=$(mktemp -d /tmp/zc.XXXXXX)
  sock=$zc_sockdir/s
  zc_all_offline
  zc_run card timeout 60 openssl s_server -unix "$sock" -cert "$zc/cert.pem" \
    -key "$zc/k2048.pem" -naccept 2 -tls1_3 -quiet >"$zc/server.log" 2>&1 &
  pid=$!
  for _ in $(seq 100); do
    [ -S "$sock" ] && break
    sleep 0.1
  done
  zc_check "first handshake" zc_handshake "$sock"
  zc_check "with every card offline, in software" zc_eq "$(zc_stat sign fallback)" 1
  card_ctl online 1 >/dev/null
  zc_check "second handshake" zc_handshake "$sock"
  zc_check "s_server ends after its two" wait "$pid"
  zc_check "the second on the card that came online" zc_eq "$(zc_stat sign libica)" 1
  zc_check "the card answered 1 CRT request" zc_eq "$(card_requests crt ok)" 1
  [ "$zc_bad" -eq 0 ] || sed 's/^/    s_server: /' "$zc/server.log" >&2
  rm -rf "$zc_sockdir"
  zc_sockdir=""
}
zc_handshake() {
  zc_stock timeout 20 openssl s_client -unix "$1" -tls1_3 -CAfile "$zc/cert.pem" \
    -verify_return_error -brief </dev/null 2>&1 | grep -q "CONNECTION ESTABLISHED"
}
# `openssl speed` with 4 ASYNC jobs for a second: the requests go out from
# rustica's offload threads, several at once, and each answer the card
# gives rustica counts under libica (counts only; nothing timed).
case_zcrypt_async() {
  zc_check "openssl speed -async_jobs 4" zc_run card openssl speed -elapsed -seconds 1 \
    -async_jobs 4 rsa2048 >"$zc/speed.log" 2>&1
  local on_card async failed
  on_card=$(zc_stat sign libica) async=$(zc_stat sign async) failed=$(zc_stat sign failed)
  zc_check "signatures on the card ($on_card)" [ "${on_card:-0}" -gt 0 ]
  zc_check "from ASYNC jobs ($async)" [ "${async:-0}" -gt 0 ]
  zc_check "none failed" zc_eq "$failed" 0
  zc_check "each one the card answered" [ "$(card_requests crt ok)" -ge "${on_card:-1}" ]
  zc_check "several in flight at once" [ "$(zc_inflight)" -gt 1 ]
}
# Key generation: its Miller-Rabin exponentiations as ICARSAMODEXPO
# requests, each one the card answered, and a key the default provider
# checks.
case_zcrypt_keygen() {
  zc_check "openssl genpkey" zc_run card openssl genpkey -algorithm RSA \
    -pkeyopt rsa_keygen_bits:2048 -out "$zc/g.pem" 2>>"$zc/stderr"
  zc_check "the default provider checks the key" zc_stock openssl pkey -in "$zc/g.pem" \
    -check -noout >/dev/null
  local modexp
  modexp=$(zc_stat keygen_modexp libica)
  zc_check "the key counted under libica" zc_eq "$(zc_stat keygen libica)" 1
  zc_check "its exponentiations on the card ($modexp)" [ "${modexp:-0}" -gt 10 ]
  zc_check "as many ME requests answered" zc_eq "$(card_requests me ok)" "$modexp"
  zc_check "and no CRT" zc_eq "$(card_requests crt '*')" 0
}
zc_inflight() {
  RUSTICA_STATS_PATH="$zc/stats" target/debug/rustica stats --json | python3 -c '
import json, sys
print(json.load(sys.stdin)["async_max_inflight"])'
}
zc_doctor() { # mode
  zc_run "$1" target/debug/rustica doctor --module "$PWD/target/debug/rustica.so" \
    --config "$zc/zcrypt.cnf" >"$zc/doctor.out" 2>&1 || true
}
case_zcrypt_doctor() {
  zc_doctor card
  zc_check "the route" grep -q "^ok    backend: zcrypt (backend = zcrypt: /dev/z90crypt" \
    "$zc/doctor.out"
  zc_check "a card answers" grep -q "^ok    zcrypt: .*answered right: a card is online" \
    "$zc/doctor.out"
  zc_all_offline
  zc_doctor card
  zc_check "no card online" grep -q "^warn  zcrypt: .*got ENODEV: no card is online" \
    "$zc/doctor.out"
  zc_doctor nodevice
  zc_check "no device" grep -q "^warn  zcrypt: /dev/z90crypt cannot be opened" "$zc/doctor.out"
}

# Keys, documents and configurations every case uses.
zc_setup() {
  stock_conf "$zc/stock.cnf"
  rustica_conf "$zc/zcrypt.cnf" "$PWD/target/debug/rustica.so" "backend = zcrypt"
  rustica_conf "$zc/wide.cnf" "$PWD/target/debug/rustica.so" "backend = zcrypt" \
    "offload-max-bits = 16384"
  echo "a document for backend = zcrypt" >"$zc/doc"
  zc_stock openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$zc/k2048.pem"
  cp tests/fixtures/private-7680.pem "$zc/k7680.pem"
  local k
  for k in "$zc/k2048.pem" "$zc/k7680.pem"; do
    zc_stock openssl pkey -in "$k" -pubout -out "$k.pub"
    zc_stock openssl dgst -sha256 -sign "$k" -out "$k.sig" "$zc/doc"
  done
  zc_stock openssl req -x509 -new -key "$zc/k2048.pem" -subj /CN=zcrypt -days 2 \
    -out "$zc/cert.pem"
}

zcrypt_run() { # work [case...]
  local work=$1 failed=0 ran=0 c
  shift
  nice -n 5 cargo build -q -p rustica -p rustica-harness || die "building rustica failed"
  place_module target/debug/librustica.so target/debug/rustica.so
  zc=$work/zcrypt zc_lib=$work/libz90crypt-card.so
  mkdir -m 0700 "$zc"
  zc_setup >"$zc/setup.log" 2>&1 || die "setting up the zcrypt cases failed: $(tail -5 "$zc/setup.log")"
  card_start target/debug/rustica-card "$zc/card.sock" "$zc/card.log" --unit-us 1 \
    --sysfs "$zc/sys" || die "the zcrypt cases' rustica-card did not start"
  for c in "${ZCRYPT_CASES[@]}"; do
    if [ $# -gt 0 ] && ! printf '%s\n' "$@" | grep -qx -- "$c"; then
      continue
    fi
    card_ctl reset >/dev/null && card_ctl online 0 >/dev/null && card_ctl online 1 >/dev/null
    rm -f "$zc/stats" "$zc/stderr"
    zc_bad=0
    "case_${c//-/_}"
    ran=$((ran + 1))
    if [ "$zc_bad" -eq 0 ]; then
      echo "ok   $c"
    else
      echo "FAIL $c"
      failed=$((failed + 1))
    fi
  done
  card_stop
  echo "$failed of $ran backend = zcrypt cases failed"
  [ "$failed" -eq 0 ] && [ "$ran" -gt 0 ]
}
