#!/usr/bin/env bash
# Every side on one card: the shared card model (rustica-card, native on
# the host) answers /dev/z90crypt for unmodified s390x programs under
# qemu-user, through the z90crypt-card interposer (testbed/card/interposer/,
# docs/card-model.md "The kernel interface"). Four sides, one card:
#
#   A   stock OpenSSL, with its own offload (OpenSSL 3.2+: ioctls on
#       /dev/z90crypt from libcrypto; Debian 12's 3.0 has none)
#   A0  stock with that offload off (OPENSSL_s390xcap=nocex; 3.2+ only)
#   B   rustica on Debian's real libica3, through libica's hardware path
#   C   Debian's ibmca ENGINE on the same libica
#
# The card counts every request by process, type, size and outcome, so
# each row below is the card's own count, not a trace. Called by
# scripts/s390x-lane.sh for Debian 12 and 13:
#
#   scripts/s390x-card.sh --release R --sysroot DIR --module SO --engine-deb DEB \
#       --keys DIR --out DIR --card BIN --interposer SO --rustica BIN
#
# Writes facts.tsv (section, item, A, A0, B, C, note, "varies" or empty)
# for workshop/scripts/comparison.py. With S390X_CARD_SPEED=1 it also measures
# throughput with the card as the bottleneck (minutes under qemu; the lane
# records it, CI does not run it; workshop/scripts/lib/s390x-card-speed.sh says
# what it measures, at which card speeds). With S390X_CARD_MAINT=1 it also
# runs one TLS server per side (A, B, C) across a card outage and a stalled
# queue, and records what each does: falls back, fails, returns wrong
# results, comes back to the card or not (about 90 s under qemu; OpenSSL
# 3.2 and later; scripts/lib/s390x-card-maint.sh), into maint-facts.tsv.
# S390X_CARD_SPEED_ONLY=1 or S390X_CARD_MAINT_ONLY=1 skips sections 1 and
# 2 (the requests per operation and the single-operation faults).
# Exits non-zero, saying what failed,
# when a side's result is wrong where it must not be, or a side does not
# reach the card as its design says.
# shellcheck source-path=SCRIPTDIR source-path=.
. "$(dirname "$0")/lib/common.sh"
RELEASE="" SYSROOT="" MODULE="" ENGINE_DEB="" KEYS="" OUT="" CARD_BIN="" INTERPOSER="" RUSTICA=""
while [ $# -gt 0 ]; do
  case "$1" in
    --release) RELEASE=$2; shift 2 ;;
    --sysroot) SYSROOT=$2; shift 2 ;;
    --module) MODULE=$2; shift 2 ;;
    --engine-deb) ENGINE_DEB=$2; shift 2 ;;
    --keys) KEYS=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --card) CARD_BIN=$2; shift 2 ;;
    --interposer) INTERPOSER=$2; shift 2 ;;
    --rustica) RUSTICA=$2; shift 2 ;;
    *) die "unknown argument $1" ;;
  esac
done
for v in RELEASE SYSROOT MODULE ENGINE_DEB KEYS OUT CARD_BIN INTERPOSER RUSTICA; do
  [ -n "${!v}" ] || die "$(echo "--${v,,} is required" | tr _ -)"
done
# The sides run from the root's directory tree too: the module's path must
# not depend on the working directory.
case $MODULE in /*) ;; *) MODULE=$PWD/$MODULE ;; esac
say_as="card[$RELEASE]" say_clock=1
rm -rf "$OUT"
mkdir -p "$OUT"
FACTS=$OUT/facts.tsv
: >"$FACTS"
fact() { # section item A A0 B C note
  say "measured: $1: $2"
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" "$5" "$6" "${7:-}" "${VARIES:-}" >>"$FACTS"
}
uid=$(id -u)

# --- the root: two online CEX8A cards, as the card model has --------------------
. scripts/lib/s390x-root.sh
. scripts/lib/openssl-cnf.sh
ROOT=$OUT/root
CARDS=2
s390x_make_root "$ROOT" "$SYSROOT" "$ENGINE_DEB" "$CARDS" CEX8A
SAMPLE=$ROOT/usr/share/doc/openssl-ibmca/examples/openssl.cnf.sample
[ -f "$SAMPLE" ] || die "the engine package has no openssl.cnf.sample"
cp "$SAMPLE" "$OUT/c.cnf"
rustica_conf "$OUT/b.cnf" "$MODULE" "backend = libica" "libica = libica.so.3"
# Bnd: B without the offload deadline, so each call runs in the caller's
# thread (what the speed rows' host CPU of a thread hand-off is read from).
rustica_conf "$OUT/bnd.cnf" "$MODULE" "backend = libica" "libica = libica.so.3" "offload-timeout-ms = 0"

# --- the card ----------------------------------------------------------------------
SOCKET=$OUT/card.sock
. scripts/lib/card.sh
start_card() { card_start "$CARD_BIN" "$SOCKET" "$OUT/card.log" --cards "$CARDS" --unit-us "$1" || die "no card"; }
trap card_stop EXIT

# The command that runs one s390x openssl for SIDE on the card, in
# SIDE_CMD (extra environment from $SIDE_ENV).
side_cmd() { # side
  SIDE_CMD=(env -u OPENSSL_CONF -u RUSTICA_BACKEND -u RUSTICA_LIBICA -u RUSTICA_DEBUG
            -u LIBICA_STATS_MODE -u LD_LIBRARY_PATH -u OPENSSL_s390xcap
            QEMU_SET_ENV=LD_PRELOAD="$INTERPOSER" Z90CRYPT_CARD_SOCKET="$SOCKET")
  case "$1" in
    A) ;;
    A0) SIDE_CMD+=(OPENSSL_s390xcap=nocex) ;;
    B) SIDE_CMD+=(OPENSSL_CONF="$OUT/b.cnf" RUSTICA_STATS_PATH="$OUT/stats-B") ;;
    Bnd) SIDE_CMD+=(OPENSSL_CONF="$OUT/bnd.cnf" RUSTICA_STATS_PATH="$OUT/stats-B") ;;
    C) SIDE_CMD+=(OPENSSL_CONF="$OUT/c.cnf") ;;
    *) die "no side $1" ;;
  esac
  # shellcheck disable=SC2206
  SIDE_CMD+=(${SIDE_ENV:-} qemu-s390x-static -L "$ROOT" "$ROOT/usr/bin/openssl")
}
run_side() { # side args...
  side_cmd "$1"
  shift
  "${SIDE_CMD[@]}" "$@"
}
host_openssl() { OPENSSL_CONF=/dev/null openssl "$@"; }

# The card's requests since the last reset, over every process: "ME CRT"
# (any outcome), and the busy time in ns.
card_counts() {
  card_ctl stats | python3 -c '
import json, sys
d = json.load(sys.stdin)
n = {"me": 0, "crt": 0}
for r in d["requests"]:
    n[r["type"]] += r["count"]
print(n["me"], n["crt"], d["busy_ns"])'
}
# Outcomes other than ok since the last reset, e.g. "eio 3, enodev 1".
card_faults() {
  card_ctl stats | python3 -c '
import json, sys
out = {}
for r in json.load(sys.stdin)["requests"]:
    if r["outcome"] != "ok":
        out[r["outcome"]] = out.get(r["outcome"], 0) + r["count"]
print(", ".join(f"{k} {v}" for k, v in sorted(out.items())) or "none")'
}
# libica's own RSA counters in the root, hardware and software apart
# (3.9's layout: entries of 4 big-endian u64, enc.hw enc.sw dec.hw dec.sw;
# RSA-ME is entry 30, RSA-CRT 31): "hw sw" over both.
ICASTATS=$ROOT/dev/shm/icastats_$uid
libica_hw_sw() {
  [ -s "$ICASTATS" ] || { echo "0 0"; return; }
  od -v -A n -t u8 --endian=big -j $((30 * 32)) -N 64 "$ICASTATS" | tr -s ' \n' ' ' \
    | awk '{print $1 + $3 + $5 + $7, $2 + $4 + $6 + $8}'
}
calls() { echo "ME $1, CRT $2"; }

# Runs one command on SIDE with the card's counts reset first; prints
# "ME CRT busy_ns libica_hw libica_sw".
counted() { # side args...
  : >"$ICASTATS"
  card_ctl reset >/dev/null
  run_side "$@" >>"$OUT/run.log" 2>&1 || return 1
  echo "$(card_counts) $(libica_hw_sw)"
}

SIDES=(A A0 B C)
VERSION_OPENSSL=$(run_side A version | awk '{print $2}')
STOCK_OFFLOADS=1
[[ "$VERSION_OPENSSL" == 3.0.* || "$VERSION_OPENSSL" == 3.1.* ]] && STOCK_OFFLOADS=0
start_card "${CARD_UNIT_US:-20}"
VARIES=varies fact card-versions "card model" "" "" \
  "$CARDS cards x 1 domain, queue depth 8" "$CARDS cards x 1 domain, queue depth 8" \
  "rustica-card, CEX8A weights (docs/card-model.md)"
VARIES=varies fact card-versions openssl "$VERSION_OPENSSL" \
  "$([ $STOCK_OFFLOADS = 1 ] && echo "$VERSION_OPENSSL, OPENSSL_s390xcap=nocex" || echo "–")" \
  "$VERSION_OPENSSL" "$VERSION_OPENSSL"

# S390X_CARD_SPEED_ONLY=1 (with S390X_CARD_SPEED=1) skips sections 1 and 2:
# the speed rows alone, to be spliced into the recorded facts by hand.
# S390X_CARD_MAINT_ONLY=1 (with S390X_CARD_MAINT=1) skips them too: the
# outage rows have a file of their own (maint-facts.tsv).
if [ -z "${S390X_CARD_SPEED_ONLY:-}" ] && [ -z "${S390X_CARD_MAINT_ONLY:-}" ]; then
# --- 1. requests per operation, by type -----------------------------------------
key=$KEYS/key-2048.pem pub=$OUT/pub-2048.pem
host_openssl pkey -in "$key" -pubout -out "$pub"
host_openssl dgst -sha256 -sign "$key" -out "$OUT/ref.sig" "$KEYS/doc.bin"
head -c 32 /dev/urandom >"$OUT/secret.bin"
host_openssl pkeyutl -encrypt -pubin -inkey "$pub" -pkeyopt rsa_padding_mode:pkcs1 -in "$OUT/secret.bin" \
  -out "$OUT/ct-pkcs1.bin"
host_openssl pkeyutl -encrypt -pubin -inkey "$pub" -pkeyopt rsa_padding_mode:oaep -in "$OUT/secret.bin" \
  -out "$OUT/ct-oaep.bin"
# A side that is not there on this release gets "–" in its cell.
present() { [ "$1" != A0 ] || [ "$STOCK_OFFLOADS" = 1 ]; }

# Each side's last row_for counts: "ME CRT busy_ns libica_hw libica_sw".
declare -A LAST
row_for() { # label check-function command-args...
  local label=$1 check=$2 side n me crt
  shift 2
  local -a row=()
  for side in "${SIDES[@]}"; do
    present "$side" || { row+=("–"); continue; }
    n=$(counted "$side" "$@") || fail "side $side failed: $label"
    read -r me crt _ <<<"$n"
    "$check" "$side" || fail "side $side: wrong result: $label"
    row+=("$(calls "$me" "$crt")")
    LAST[$side]=$n
  done
  fact card-requests "$label" "${row[@]}" "${NOTE:-}"
}
same_sig() { cmp -s "$OUT/out.bin" "$OUT/ref.sig"; }
same_secret() { cmp -s "$OUT/out.bin" "$OUT/secret.bin"; }
key_ok() { host_openssl pkey -in "$OUT/out.bin" -check -noout >/dev/null 2>&1; }
always() { true; }

NOTE="identical to the default provider's signature" row_for "PKCS#1 v1.5 SHA-256 signature, 2048 bits" same_sig \
  dgst -sha256 -sign "$key" -out "$OUT/out.bin" "$KEYS/doc.bin"
# The sides' design, checked: rustica one CRT request; the engine one
# private-exponent ME; stock 3.5 offloads, 3.0 and A0 do not.
read -r me crt _ hw sw <<<"${LAST[B]}"
[ "$me $crt" = "0 1" ] || fail "rustica's signature was not one CRT request on the card (ME $me, CRT $crt)"
[ "$hw" -ge 1 ] && [ "$sw" = 0 ] || fail "libica did not take rustica's request through its hardware path (hw $hw, sw $sw)"
read -r me crt _ hw sw <<<"${LAST[C]}"
[ "$me" -ge 1 ] && [ "$hw" -ge 1 ] || fail "the engine's signature did not reach the card through libica (ME $me, hw $hw)"
read -r me crt _ _ _ <<<"${LAST[A]}"
if [ "$STOCK_OFFLOADS" = 1 ]; then
  [ "$crt" -ge 1 ] || fail "stock $VERSION_OPENSSL's own offload sent no CRT request to the card"
  read -r me crt _ _ _ <<<"${LAST[A0]}"
  [ "$me $crt" = "0 0" ] || fail "OPENSSL_s390xcap=nocex still reached the card (ME $me, CRT $crt)"
else
  [ "$me $crt" = "0 0" ] || fail "stock $VERSION_OPENSSL reached the card (ME $me, CRT $crt)"
fi
signed=$(env -u RUSTICA_MODULE "$RUSTICA" stats --path "$OUT/stats-B" --json \
  | python3 -c 'import json, sys; print(json.load(sys.stdin)["ops"]["sign"]["libica"])')
[ "$signed" -ge 1 ] || fail "rustica's counters show no signature on libica"

NOTE="verified" row_for "verification, 2048 bits" always \
  dgst -sha256 -verify "$pub" -signature "$OUT/ref.sig" "$KEYS/doc.bin"
NOTE="the plaintext" row_for "PKCS#1 v1.5 decryption, 2048 bits" same_secret \
  pkeyutl -decrypt -inkey "$key" -pkeyopt rsa_padding_mode:pkcs1 -in "$OUT/ct-pkcs1.bin" -out "$OUT/out.bin"
NOTE="the plaintext" row_for "OAEP decryption, 2048 bits" same_secret \
  pkeyutl -decrypt -inkey "$key" -pkeyopt rsa_padding_mode:oaep -in "$OUT/ct-oaep.bin" -out "$OUT/out.bin"
NOTE="every key passes pkey -check; the count follows the primes drawn" VARIES=varies \
  row_for "2048-bit key generation" key_ok genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$OUT/out.bin"

# One TLS handshake per server, the server on the side, the client the
# host's openssl (not on the card). TLS 1.3: an RSA-PSS signature; TLS 1.2
# with RSA key exchange: a PKCS#1 v1.5 decryption. ChaCha20 and AES-CBC:
# ciphers the engine leaves to OpenSSL (its AES-GCM needs CPACF
# instructions qemu does not have).
run_side A req -x509 -new -key "$key" -subj /CN=card -days 2 -out "$OUT/cert.pem" >>"$OUT/run.log" 2>&1 \
  || die "could not make the server's certificate"
handshake() { # side client-options [count]: prints "ME CRT busy_ns" of the server's requests
  local side=$1 opts=$2 count=${3:-1} port server n ok=0 i
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  (exec > "$OUT/s_server.out" 2>&1; run_side "$side" s_server -accept "$port" -cert "$OUT/cert.pem" -key "$key" \
    -www -quiet </dev/null) &
  server=$!
  for _ in $(seq 100); do
    python3 -c "import socket; socket.create_connection(('127.0.0.1',$port),0.2)" 2>/dev/null && break
    sleep 0.2
  done
  # The probe connections above make no handshake; count from here.
  card_ctl reset >/dev/null
  for ((i = 0; i < count; i++)); do
    # shellcheck disable=SC2086
    echo "GET / HTTP/1.0" | host_openssl s_client -connect "127.0.0.1:$port" $opts -brief -ign_eof \
      >"$OUT/s_client.out" 2>&1 || true
    grep -q "CONNECTION ESTABLISHED" "$OUT/s_client.out" && ok=$((ok + 1))
  done
  n=$(card_counts)
  pkill -P "$server" 2>/dev/null || true
  kill "$server" 2>/dev/null || true
  wait "$server" 2>/dev/null || true
  [ "$ok" = "$count" ] || return 1
  echo "$n"
}
for tls in "TLS 1.3 handshake (TLS_CHACHA20_POLY1305_SHA256), server side|-tls1_3 -ciphersuites TLS_CHACHA20_POLY1305_SHA256" \
           "TLS 1.2 handshake (RSA key exchange, AES128-SHA256), server side|-tls1_2 -cipher AES128-SHA256"; do
  row=()
  for side in "${SIDES[@]}"; do
    present "$side" || { row+=("–"); continue; }
    read -r me crt _ < <(handshake "$side" "${tls#*|}") || fail "side $side: no handshake: ${tls%%|*}"
    [ -n "${me:-}" ] || fail "side $side: no handshake: ${tls%%|*}"
    row+=("$(calls "$me" "$crt")")
  done
  fact card-requests "${tls%%|*}" "${row[@]}" "one handshake"
done
# A long-lived server: 64 TLS 1.3 handshakes with one s_server, one RSA key.
# OpenSSL renews a key's blinding factor every 32 uses, so what a
# one-operation process shows once is amortised here. The busy time gives
# the card units one private operation costs each side in a running
# server.
row=()
for side in "${SIDES[@]}"; do
  present "$side" || { row+=("–"); continue; }
  read -r me crt busy < <(handshake "$side" "-tls1_3 -ciphersuites TLS_CHACHA20_POLY1305_SHA256" 64) \
    || fail "side $side: 64 handshakes failed"
  [ -n "${busy:-}" ] || fail "side $side: 64 handshakes failed"
  units=$(awk -v b="$busy" -v u="$((${CARD_UNIT_US:-20} * 1000))" 'BEGIN {printf "%.1f", b / u / 64}')
  row+=("$(calls "$me" "$crt"); $units units per handshake")
done
# A private-exponent ME's charge follows the exponent's length, and the
# lane draws a new key each run: C's units move with its d (215 or 216 for
# a 2048-bit key), so the row varies.
VARIES=varies fact card-requests "64 TLS 1.3 handshakes with one server (one key)" "${row[@]}" \
  "card units: the CEX8A weights, 2048-bit CRT = 54 (docs/card-model.md)"

# --- 2. faults on the card: what each side's caller gets ---------------------------
# Every request during the run fails (EIO), every card is offline (the
# kernel answers ENODEV), the run's first result has a flipped bit, or
# every result has one (a card that has gone bad). Per side: two
# signatures (right = identical to the default provider's) and a PKCS#1
# v1.5 and an OAEP decryption (right = the plaintext).
rustica_fallbacks() {
  env -u RUSTICA_MODULE "$RUSTICA" stats --path "$OUT/stats-B" --json \
    | python3 -c 'import json, sys; o = json.load(sys.stdin)["ops"]; print(o["sign"]["fallback"] + o["decrypt"]["fallback"])'
}
fallbacks_before=$(rustica_fallbacks)
b_corrupt=0
for fault in "EIO|fail EIO 100000" "card offline|offline" "one corrupt answer|corrupt 1" \
             "every answer corrupt|corrupt 100000"; do
  for what in sign pkcs1 oaep; do
    row=()
    for side in "${SIDES[@]}"; do
      present "$side" || { row+=("–"); continue; }
      card_ctl reset >/dev/null
      good=0 error=0 wrong=0 runs=1
      [ "$what" = sign ] && runs=2
      for ((i = 0; i < runs; i++)); do
        case "${fault#*|}" in
          offline) for ((c = 0; c < CARDS; c++)); do card_ctl offline "$c" 600000 >/dev/null; done ;;
          *) card_ctl "${fault#*|}" >/dev/null ;;
        esac
        rm -f "$OUT/out.bin"
        case $what in
          sign) args=(dgst -sha256 -sign "$key" -out "$OUT/out.bin" "$KEYS/doc.bin") ref=$OUT/ref.sig ;;
          pkcs1) args=(pkeyutl -decrypt -inkey "$key" -pkeyopt rsa_padding_mode:pkcs1 -in "$OUT/ct-pkcs1.bin" -out "$OUT/out.bin") ref=$OUT/secret.bin ;;
          oaep) args=(pkeyutl -decrypt -inkey "$key" -pkeyopt rsa_padding_mode:oaep -in "$OUT/ct-oaep.bin" -out "$OUT/out.bin") ref=$OUT/secret.bin ;;
        esac
        if run_side "$side" "${args[@]}" >>"$OUT/run.log" 2>&1; then
          cmp -s "$OUT/out.bin" "$ref" && good=$((good + 1)) || wrong=$((wrong + 1))
        else
          error=$((error + 1))
        fi
      done
      faults=$(card_faults)
      # Back to a healthy card for the next side.
      card_ctl fail EIO 0 >/dev/null; card_ctl corrupt 0 >/dev/null
      for ((c = 0; c < CARDS; c++)); do card_ctl online "$c" >/dev/null; done
      row+=("$good right, $error errors, $wrong wrong (card: $faults)")
      if [ "$side" = B ]; then
        b_corrupt=$((b_corrupt + $(echo "$faults" | sed -n 's/.*corrupt \([0-9]*\).*/\1/p' | grep . || echo 0)))
      fi
      [ "$side" = B ] && [ "$wrong" != 0 ] && fail "rustica returned a wrong result under ${fault%%|*} ($what)"
    done
    label="signature (2 runs)"
    [ "$what" = pkcs1 ] && label="PKCS#1 v1.5 decryption"
    [ "$what" = oaep ] && label="OAEP decryption"
    fact card-faults "${fault%%|*}: $label" "${row[@]}"
  done
done

# rustica checks each CRT result with the public exponent: every corrupt
# answer it got is a software recomputation in its counters. EIO and
# ENODEV never reach it: libica's own software fallback answers instead.
fallbacks=$(( $(rustica_fallbacks) - fallbacks_before ))
[ "$fallbacks" = "$b_corrupt" ] \
  || fail "rustica counted $fallbacks fallbacks for the $b_corrupt corrupt answers the card gave it"
fact card-faults "rustica's counters over the runs above" "" "" \
  "$b_corrupt corrupt answers, $fallbacks counted as fallback (recomputed in software)" "" \
  "EIO and ENODEV are answered by libica's own software fallback and counted by it (icastats: software)"

fi # S390X_CARD_SPEED_ONLY, S390X_CARD_MAINT_ONLY

# --- 3. throughput with the card as the bottleneck (S390X_CARD_SPEED=1) -----------
if [ -n "${S390X_CARD_SPEED:-}" ]; then
  . workshop/scripts/lib/s390x-card-speed.sh
fi

# --- 4. one process per side across a card outage (S390X_CARD_MAINT=1) ----------
if [ -n "${S390X_CARD_MAINT:-}" ]; then
  . scripts/lib/s390x-card-maint.sh
fi

card_stop
rm -f "$ICASTATS"
say "facts in $FACTS"
sed 's/^/card['"$RELEASE"']:   /' "$FACTS" >&2
