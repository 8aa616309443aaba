#!/usr/bin/env bash
# The workshop's own setup beside rustica, on s390x under qemu-user: three
# sides run the same RSA work through the same s390x openssl, and every
# result is compared.
#
#   A  stock OpenSSL (the sysroot's own configuration)
#   B  rustica (backend = libica)
#   C  Debian's ibmca ENGINE (openssl-ibmca), loaded by the sample
#      configuration it ships, unchanged
#
# Called by scripts/s390x-lane.sh for Debian 12 and 13 (not meant to be run
# by hand; the lane makes the sysroot, the s390x module and the emulator):
#
#   scripts/s390x-three-sides.sh --release R --sysroot DIR --module SO \
#       --engine-deb DEB --emulator SO --keys DIR --out DIR [--libica-version V]
#
# Two adapters:
#   real      Debian's libica3. Under qemu-user there is no crypto card, so
#             the engine, which takes RSA only from a card that sysfs shows
#             online, is first run as it is (it leaves RSA to OpenSSL), then
#             with an online CEX7A card under the sysroot's /sys/devices/ap
#             and no device node, so that libica takes the engine's RSA and
#             computes it in its software path, as it does rustica's.
#   emulated  the project's libica emulator, cross-built for s390x, in place
#             of libica.so.3 for B and C alike (the same adapter model:
#             latency, units, faults): what each side does when the
#             adapter fails or lies, and with THREE_SIDES_SPEED=1 speed B/C
#             with intervals (THREE_SIDES_ROUNDS pairs, 6 by default).
#
# libica's own counters (/dev/shm/icastats_<uid>, libica 3.9's layout)
# are kept private to the run: qemu resolves /dev/shm inside the sysroot
# copy, where an empty file is made first. The emulator's counts come from
# its call log (LIBICA_EMU_COUNTS).
#
# Writes facts.tsv (section, item, A, B, C, note, "varies" or empty; one
# line per measurement) and logs into --out; workshop/scripts/comparison.py renders
# docs/comparison.md from the facts of both releases. Exits non-zero,
# saying what failed, when C's signatures differ from A's and B's, a
# cross-verification fails, or a side's counts are not what its design
# says.
# shellcheck source-path=SCRIPTDIR source-path=.
. "$(dirname "$0")/lib/common.sh"
REPO=$(pwd)
RELEASE="" SYSROOT="" MODULE="" ENGINE_DEB="" EMULATOR="" KEYS="" OUT="" LIBICA_VERSION=""
while [ $# -gt 0 ]; do
  case "$1" in
    --release) RELEASE=$2; shift 2 ;;
    --sysroot) SYSROOT=$2; shift 2 ;;
    --module) MODULE=$2; shift 2 ;;
    --engine-deb) ENGINE_DEB=$2; shift 2 ;;
    --emulator) EMULATOR=$2; shift 2 ;;
    --keys) KEYS=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --libica-version) LIBICA_VERSION=$2; shift 2 ;;
    *) die "unknown argument $1" ;;
  esac
done
for v in RELEASE SYSROOT MODULE ENGINE_DEB EMULATOR KEYS OUT; do
  [ -n "${!v}" ] || die "$(echo "--${v,,} is required" | tr _ -)"
done
ROUNDS=${THREE_SIDES_ROUNDS:-6}
say_as="three-sides[$RELEASE]" say_clock=1
rm -rf "$OUT"
mkdir -p "$OUT"
FACTS=$OUT/facts.tsv
: >"$FACTS"
fact() { # section item A B C note
  say "measured: $1: $2"
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" "$5" "${6:-}" "${VARIES:-}" >>"$FACTS"
}
# Facts that differ from run to run (timings, random primes) or with the
# mirror's point releases: VARIES=varies before `fact` (workshop/scripts/comparison.py
# compares the others exactly).
uid=$(id -u)

# --- roots: the sysroot, hard-linked, with the engine installed ----------------
# plain: as the package leaves a host with no crypto card; card: the same
# with one online accelerator card in sysfs (no /dev/z90crypt, so libica
# computes in software whatever reaches it).
. scripts/lib/s390x-root.sh
PLAIN=$OUT/root-plain
CARD=$OUT/root-card
s390x_make_root "$PLAIN" "$SYSROOT" "$ENGINE_DEB" 0
s390x_make_root "$CARD" "$SYSROOT" "$ENGINE_DEB" 1
ENGINE_SO=/usr/lib/s390x-linux-gnu/openssl-1.0.2/engines/libibmca.so
[ -f "$CARD$ENGINE_SO" ] || die "the engine package has no $ENGINE_SO"
SAMPLE=$CARD/usr/share/doc/openssl-ibmca/examples/openssl.cnf.sample
[ -f "$SAMPLE" ] || die "the engine package has no openssl.cnf.sample"
cp "$SAMPLE" "$OUT/c.cnf"
grep -q "^dynamic_path *= *$ENGINE_SO" "$OUT/c.cnf" || die "the sample does not load $ENGINE_SO"
. scripts/lib/openssl-cnf.sh
. scripts/lib/bench-stats.sh # bench_median
rustica_conf "$OUT/b.cnf" "$MODULE" "backend = libica" "libica = libica.so.3"
EMU_DIR=$OUT/emulator
mkdir -p "$EMU_DIR"
cp "$EMULATOR" "$EMU_DIR/libica.so.3"

ROOT=$CARD
ADAPTER=real
# One s390x openssl for SIDE, in $ROOT, on $ADAPTER; extra environment
# from $SIDE_ENV (words NAME=VALUE).
run_side() { # side args...
  local side=$1
  shift
  local -a envs=(env -u OPENSSL_CONF -u RUSTICA_BACKEND -u RUSTICA_LIBICA -u RUSTICA_DEBUG
                 -u LIBICA_STATS_MODE -u LD_LIBRARY_PATH)
  case "$side" in
    A) ;;
    B) envs+=(OPENSSL_CONF="$OUT/b.cnf" RUSTICA_STATS_PATH="$OUT/stats-B") ;;
    C) envs+=(OPENSSL_CONF="$OUT/c.cnf") ;;
    *) die "no side $side" ;;
  esac
  if [ "$ADAPTER" = emulated ]; then
    envs+=(LD_LIBRARY_PATH="$EMU_DIR")
    # The call log numbers calls across processes (so that "every Nth
    # call" spans one-operation processes) but serialises them: not for
    # throughput runs.
    [ -n "${NO_EMU_LOG:-}" ] || envs+=(LIBICA_EMU_COUNTS="$OUT/emu-$side.log")
  fi
  # shellcheck disable=SC2086
  "${envs[@]}" ${SIDE_ENV:-} qemu-s390x-static ${QEMU_FLAGS:-} -L "$ROOT" "$ROOT/usr/bin/openssl" "$@"
}
host_openssl() { OPENSSL_CONF=/dev/null openssl "$@"; }

# libica's RSA counters in $ROOT (3.9: entries of 4 big-endian u64, enc.hw
# enc.sw dec.hw dec.sw; RSA-ME is entry 30, RSA-CRT 31): "me crt" summed
# over hardware and software.
ICASTATS_SIZE=1664
libica_counts() {
  local f=$ROOT/dev/shm/icastats_$uid me crt
  if [ ! -s "$f" ]; then echo "0 0"; return; fi
  [ "$(stat -c %s "$f")" = "$ICASTATS_SIZE" ] || die "$f is not libica 3.9's counters layout"
  me=$(od -A n -t u8 --endian=big -j $((30 * 32)) -N 16 "$f" | awk '{print $1 + $2}')
  crt=$(od -A n -t u8 --endian=big -j $((31 * 32)) -N 16 "$f" | awk '{print $1 + $2}')
  echo "$me $crt"
}
# "ME CRT" after minus "ME CRT" before.
delta() { echo "$(( ${2% *} - ${1% *} )) $(( ${2#* } - ${1#* } ))"; }
reset_counts() {
  for root in "$PLAIN" "$CARD"; do : >"$root/dev/shm/icastats_$uid"; done
  rm -f "$OUT"/emu-?.log
}
# Runs `run_side SIDE ARGS` and prints libica's RSA calls it made ("ME
# CRT"), from icastats on the real adapter, from the emulator's log on the
# emulated one.
counted() { # side args...
  local side=$1 before after
  before=$(libica_counts)
  [ "$ADAPTER" = emulated ] && rm -f "$OUT/emu-$side.log"
  run_side "$@" >>"$OUT/run.log" 2>&1 || return 1
  if [ "$ADAPTER" = emulated ]; then
    emu_counts "$side"
  else
    after=$(libica_counts)
    delta "$before" "$after"
  fi
}
emu_counts() { # side: "ME CRT" calls answered (any outcome) in its log
  local log=$OUT/emu-$1.log
  [ -f "$log" ] || { echo "0 0"; return; }
  echo "$(grep -c ' rsa_mod_expo ' "$log" || true) $(grep -c ' rsa_crt ' "$log" || true)"
}
calls() { echo "ME ${1% *}, CRT ${1#* }"; }

reset_counts
VERSION_OPENSSL=$(run_side A version | awk '{print $2}')
VERSION_ENGINE=$(dpkg-deb -f "$ENGINE_DEB" Version)
VARIES=varies fact versions openssl "$VERSION_OPENSSL" "$VERSION_OPENSSL" "$VERSION_OPENSSL"
VARIES=varies fact versions "openssl-ibmca package" "" "" "$VERSION_ENGINE"
VARIES=varies fact versions "libica3 package" "" "${LIBICA_VERSION:-unknown}" "${LIBICA_VERSION:-unknown}"

# --- 1. the engine as it is on a host with no card -----------------------------
ROOT=$PLAIN
caps=$(run_side C engine -c ibmca 2>&1 | sed -n 's/^ *\[\(.*\)\]$/\1/p' | head -n1)
say "engine capabilities, no card online: ${caps:-none}"
fact "no card" "engine registers" "" "" "${caps:-nothing}" "libica lists RSA as software only without an online card"
c_plain=$(counted C dgst -sha256 -sign "$KEYS/key-2048.pem" -out "$OUT/c-plain.sig" "$KEYS/doc.bin") \
  || fail "side C could not sign with no card online"
b_plain=$(counted B dgst -sha256 -sign "$KEYS/key-2048.pem" -out "$OUT/b-plain.sig" "$KEYS/doc.bin") \
  || fail "side B could not sign with no card online"
cmp -s "$OUT/c-plain.sig" "$OUT/b-plain.sig" || fail "B's and C's signatures differ with no card"
fact "no card" "libica RSA calls, one 2048-bit signature" "" "$(calls "$b_plain")" "$(calls "$c_plain")"
[ "$c_plain" = "0 0" ] || fail "with no card the engine still reached libica ($c_plain)"
[ "$b_plain" != "0 0" ] || fail "with no card rustica did not reach libica"

# --- 2. one online card: both reach the real libica ------------------------------
ROOT=$CARD
caps=$(run_side C engine -c ibmca 2>&1 | sed -n 's/^ *\[\(.*\)\]$/\1/p' | head -n1)
say "engine capabilities, card online: $caps"
fact card "engine registers" "" "" "$caps"
echo "$caps" | grep -q RSA || fail "with an online card the engine does not register RSA"

for bits in 2048 4096; do
  key=$KEYS/key-$bits.pem pub=$OUT/pub-$bits.pem
  host_openssl pkey -in "$key" -pubout -out "$pub"
  row=()
  for side in A B C; do
    n=$(counted "$side" dgst -sha256 -sign "$key" -out "$OUT/sig-$side-$bits.bin" "$KEYS/doc.bin") \
      || fail "side $side could not sign at $bits bits"
    row+=("$(calls "$n")")
    eval "sign_$side=\$n"
  done
  cmp -s "$OUT/sig-A-$bits.bin" "$OUT/sig-B-$bits.bin" && cmp -s "$OUT/sig-A-$bits.bin" "$OUT/sig-C-$bits.bin" \
    || fail "the PKCS#1 v1.5 signatures of A, B and C differ at $bits bits"
  fact card "PKCS#1 v1.5 SHA-256 signature, $bits bits: libica RSA calls" "${row[@]}" "signatures identical byte for byte"
  [ "$sign_A" = "0 0" ] || fail "side A reached libica"
  [ "$sign_B" = "0 1" ] || fail "rustica's $bits-bit signature was not one ica_rsa_crt call ($sign_B)"
  [ "${sign_C% *}" -ge 1 ] || fail "the engine's $bits-bit signature did not reach libica ($sign_C)"
  # Each side verifies the others' signatures (C through the engine's
  # public exponentiation).
  row=()
  for side in A B C; do
    ok=0
    for signer in A B C; do
      [ "$signer" = "$side" ] && continue
      run_side "$side" dgst -sha256 -verify "$pub" -signature "$OUT/sig-$signer-$bits.bin" "$KEYS/doc.bin" \
        2>&1 | grep -q "Verified OK" && ok=$((ok + 1))
    done
    [ "$ok" = 2 ] || fail "side $side does not verify the other sides' $bits-bit signatures"
    row+=("verifies both")
  done
  n=$(counted C dgst -sha256 -verify "$pub" -signature "$OUT/sig-A-$bits.bin" "$KEYS/doc.bin")
  nb=$(counted B dgst -sha256 -verify "$pub" -signature "$OUT/sig-A-$bits.bin" "$KEYS/doc.bin")
  fact card "verification, $bits bits: libica RSA calls" "ME 0, CRT 0" "$(calls "$nb")" "$(calls "$n")" \
    "each side verified the other two's signatures"
done

# Over 4096 bits: libica's software path takes any size; rustica keeps
# keys over its offload-max-bits (4096 by default) in its own software.
row=()
for side in A B C; do
  n=$(counted "$side" dgst -sha256 -sign "$KEYS/key-8192.pem" -out "$OUT/sig-$side-8192.bin" "$KEYS/doc.bin") \
    || fail "side $side could not sign at 8192 bits"
  row+=("$(calls "$n")")
done
cmp -s "$OUT/sig-A-8192.bin" "$OUT/sig-B-8192.bin" && cmp -s "$OUT/sig-A-8192.bin" "$OUT/sig-C-8192.bin" \
  || fail "the 8192-bit signatures of A, B and C differ"
fact card "PKCS#1 v1.5 SHA-256 signature, 8192 bits: libica RSA calls" "${row[@]}" \
  "signatures identical; rustica keeps keys over offload-max-bits (4096) in software"

# PSS: salts follow the running OpenSSL's default provider on all sides.
key=$KEYS/key-2048.pem pub=$OUT/pub-2048.pem
for side in A B C; do
  run_side "$side" dgst -sha256 -sign "$key" -sigopt rsa_padding_mode:pss -out "$OUT/pss-$side.bin" \
    "$KEYS/doc.bin" >>"$OUT/run.log" 2>&1 || fail "side $side could not make a PSS signature"
done
for signer in A B C; do
  for side in A B C; do
    run_side "$side" dgst -sha256 -verify "$pub" -sigopt rsa_padding_mode:pss -signature "$OUT/pss-$signer.bin" \
      "$KEYS/doc.bin" 2>&1 | grep -q "Verified OK" || fail "side $side does not verify $signer's PSS signature"
  done
done
fact card "PSS signature, 2048 bits (default salt)" "accepted by A, B, C" "accepted by A, B, C" "accepted by A, B, C"

# OAEP with a label, and PKCS#1 v1.5: encrypted by each side, decrypted by
# the two others.
head -c 32 /dev/urandom >"$OUT/secret.bin"
for padding in oaep-label pkcs1; do
  case $padding in
    oaep-label) opts=(-pkeyopt rsa_padding_mode:oaep -pkeyopt rsa_oaep_md:sha256 -pkeyopt rsa_oaep_label:6c6162656c) ;;
    pkcs1) opts=(-pkeyopt rsa_padding_mode:pkcs1) ;;
  esac
  row=()
  for enc in A B C; do
    run_side "$enc" pkeyutl -encrypt -pubin -inkey "$pub" "${opts[@]}" -in "$OUT/secret.bin" \
      -out "$OUT/ct-$enc.bin" >>"$OUT/run.log" 2>&1 || fail "side $enc could not encrypt ($padding)"
  done
  for dec in A B C; do
    for enc in A B C; do
      [ "$enc" = "$dec" ] && continue
      run_side "$dec" pkeyutl -decrypt -inkey "$key" "${opts[@]}" -in "$OUT/ct-$enc.bin" \
        -out "$OUT/pt.bin" >>"$OUT/run.log" 2>&1 && cmp -s "$OUT/pt.bin" "$OUT/secret.bin" \
        || fail "side $dec does not decrypt $enc's $padding ciphertext"
    done
    n=$(counted "$dec" pkeyutl -decrypt -inkey "$key" "${opts[@]}" -in "$OUT/ct-A.bin" -out "$OUT/pt.bin")
    row+=("$(calls "$n")")
  done
  fact card "$padding decryption, 2048 bits: libica RSA calls" "${row[@]}" "each side decrypted the other two's ciphertexts"
done

# A certificate made on C verifies on A and B; a TLS server on C.
run_side C req -x509 -new -key "$key" -subj /CN=three-sides -days 2 -out "$OUT/cert-C.pem" \
  >>"$OUT/run.log" 2>&1 || fail "side C could not make a certificate"
for side in A B; do
  run_side "$side" verify -CAfile "$OUT/cert-C.pem" "$OUT/cert-C.pem" 2>&1 | grep -q ": OK" \
    || fail "side $side does not verify C's certificate"
done
# One s_server on C per call; the client is the host's openssl. Prints
# "handshakes ME CRT" and leaves the server's exit status in $OUT/server.rc.
c_server_handshakes() { # client-options (one string per handshake)...
  local port before after ok=0 server rc proto
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  before=$(libica_counts)
  (exec env OPENSSL_CONF="$OUT/c.cnf" qemu-s390x-static -L "$ROOT" "$ROOT/usr/bin/openssl" s_server \
    -accept "$port" -cert "$OUT/cert-C.pem" -key "$key" -www -quiet </dev/null >"$OUT/s_server.out" 2>&1) &
  server=$!
  for _ in $(seq 100); do
    python3 -c "import socket; socket.create_connection(('127.0.0.1',$port),0.2)" 2>/dev/null && break
    sleep 0.2
  done
  for proto in "$@"; do
    # shellcheck disable=SC2086
    echo "GET / HTTP/1.0" | host_openssl s_client -connect "127.0.0.1:$port" $proto -brief -ign_eof \
      >"$OUT/s_client.out" 2>&1 || true
    grep -q "CONNECTION ESTABLISHED" "$OUT/s_client.out" && ok=$((ok + 1))
  done
  # A server still running is stopped here (143); one that died has its own status.
  kill -0 "$server" 2>/dev/null && kill "$server" 2>/dev/null
  rc=0
  wait "$server" 2>/dev/null || rc=$?
  echo "$rc" >"$OUT/server.rc"
  after=$(libica_counts)
  echo "$ok $(delta "$before" "$after")"
}
# TLS 1.3 (an RSA-PSS signature) and 1.2 with RSA key exchange (a PKCS#1
# v1.5 decryption), with ciphers the engine does not take over.
read -r tls me crt < <(c_server_handshakes "-tls1_3 -ciphersuites TLS_CHACHA20_POLY1305_SHA256" \
  "-tls1_2 -cipher AES128-SHA256")
[ "$tls" = 2 ] || fail "a TLS handshake with side C's s_server failed"
fact card "certificate made by C (req -x509), verified" "verified" "verified" ""
fact card "TLS 1.3 and 1.2 handshakes with s_server on C" "" "" "2 of 2, libica $(calls "$me $crt")" \
  "TLS_CHACHA20_POLY1305_SHA256 and AES128-SHA256"
# AES-GCM, which the engine takes (libica's CPACF path): under qemu-user.
read -r tls _ _ < <(c_server_handshakes "-tls1_3 -ciphersuites TLS_AES_128_GCM_SHA256")
rc=$(cat "$OUT/server.rc")
gcm="established"
[ "$tls" = 1 ] || gcm="no handshake; s_server exit status $rc$( [ "$rc" = 132 ] && echo ' (SIGILL)')"
fact card "TLS 1.3 with TLS_AES_128_GCM_SHA256 on C (the engine's AES-GCM)" "" "" "$gcm" \
  "under qemu-user only: libica's CPACF instructions are not all emulated"

# Key generation: whose exponentiations reach libica.
row=()
for side in A B C; do
  n=$(counted "$side" genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$OUT/gen-$side.pem") \
    || fail "side $side could not generate a key"
  host_openssl pkey -in "$OUT/gen-$side.pem" -check -noout >/dev/null 2>&1 || fail "side $side's key fails the check"
  row+=("$(calls "$n")")
  eval "gen_$side=\$n"
done
VARIES=varies fact card "2048-bit key generation: libica RSA calls" "${row[@]}" "every key passes pkey -check"
[ "$gen_C" = "0 0" ] || say "note: the engine's key generation reached libica ($gen_C)"
[ "${gen_B% *}" -ge 20 ] || fail "rustica's key generation made ${gen_B% *} exponentiations on libica"

# Where each side's exponentiations would go on a host with the kernel's
# crypto device: the same root with a /dev/z90crypt (a plain file: the
# requests fail, with ENOSYS from qemu, and every side computes in
# software instead), each side's system calls traced by qemu. Counted:
# the zcrypt requests ICARSAMODEXPO (0xc0007a05) and ICARSACRT
# (0xc0007a06) on the descriptor that opened the device; OpenSSL 3.5's
# libcrypto makes them itself, libica makes them for B and C.
: >"$ROOT/dev/z90crypt"
zcrypt_requests() { # strace-log: "ME CRT"
  awk '/openat\(.*"\/dev\/z90crypt"/ && $NF ~ /^[0-9]+$/ {fd[$NF] = 1}
       /ioctl\(/ {split($2, a, /[(,]/); if (a[2] in fd) {if (a[3] == "0xc0007a05") me++; if (a[3] == "0xc0007a06") crt++}}
       END {printf "%d %d\n", me, crt}' "$1"
}
row=()
for side in A B C; do
  QEMU_FLAGS=-strace run_side "$side" dgst -sha256 -sign "$key" -out "$OUT/z-$side.sig" "$KEYS/doc.bin" \
    2>"$OUT/strace-$side.log" >/dev/null || fail "side $side could not sign with /dev/z90crypt present"
  cmp -s "$OUT/z-$side.sig" "$OUT/sig-A-2048.bin" || fail "side $side's signature differs with /dev/z90crypt present"
  row+=("$(calls "$(zcrypt_requests "$OUT/strace-$side.log")")")
done
fact card "z90crypt ioctls under qemu-user (device a plain file), one 2048-bit signature" "${row[@]}" \
  "qemu answers ENOSYS and stock 3.5 still offers every exponentiation; a kernel answers ENOTTY and stock stops after one ioctl; what reaches a card: the lab on the card; signatures identical"
rm -f "$ROOT/dev/z90crypt" "$OUT"/strace-?.log

# --- 3. the emulated adapter, the same for B and C ---------------------------
ADAPTER=emulated
export LIBICA_EMU_LATENCY_US=${LIBICA_EMU_LATENCY_US:-2000} LIBICA_EMU_UNITS=${LIBICA_EMU_UNITS:-16}
fact emulated "adapter model" "" "$LIBICA_EMU_UNITS units x $LIBICA_EMU_LATENCY_US us" \
  "$LIBICA_EMU_UNITS units x $LIBICA_EMU_LATENCY_US us"
row=()
for side in B C; do
  n=$(counted "$side" dgst -sha256 -sign "$key" -out "$OUT/emu-sig-$side.bin" "$KEYS/doc.bin") \
    || fail "side $side could not sign on the emulated adapter"
  cmp -s "$OUT/emu-sig-$side.bin" "$OUT/sig-A-2048.bin" || fail "side $side's signature on the emulator differs from A's"
  row+=("$(calls "$n")")
done
fact emulated "one 2048-bit signature: adapter calls" "" "${row[@]}" "identical to A's"

# speed, sync and -async_jobs 32, alternating C and B round by round; B/C
# with its interval from `rustica compare` (pairs "C B").
RUSTICA=${RUSTICA_HOST_COMMAND:-$REPO/target/debug/rustica}
speed_rate() { # side args...: sign/s from +R1
  local side=$1
  shift
  NO_EMU_LOG=1 run_side "$side" speed -seconds 1 -mr "$@" rsa2048 2>&1 | awk -F: '/^\+R1:/ {printf "%.2f\n", $2 / $4; exit}'
}
# OpenSSL 3.5's speed also times key generation, under -async_jobs 32
# generations at once, which under qemu-user takes minutes a round: the
# throughput rows come from Debian 12's OpenSSL 3.0, whose speed times
# signatures and verifications only. They are a workshop figure (qemu's
# speed, "varies"), a minute of qemu, so measured only when asked for
# (THREE_SIDES_SPEED=1; the lane sets it with S390X_SPEED=1 or when it
# records the facts).
if [[ "$VERSION_OPENSSL" == 3.0.* ]] && [ "${THREE_SIDES_SPEED:-}" = 1 ]; then
  for mode in sync async; do
    extra=()
    [ "$mode" = async ] && extra=(-async_jobs 32)
    : >"$OUT/speed-$mode.pairs"
    for _ in $(seq "$ROUNDS"); do
      c=$(speed_rate C "${extra[@]}")
      b=$(speed_rate B "${extra[@]}")
      [ -n "$c" ] && [ -n "$b" ] || fail "openssl speed ($mode) gave no rate"
      echo "$c $b" >>"$OUT/speed-$mode.pairs"
    done
    cmp_line=$(env -u RUSTICA_MODULE "$RUSTICA" compare <"$OUT/speed-$mode.pairs")
    medians="$(awk '{print $2}' "$OUT/speed-$mode.pairs" | bench_median) $(awk '{print $1}' "$OUT/speed-$mode.pairs" | bench_median)"
    say "speed $mode: B/C $cmp_line (medians B ${medians% *}, C ${medians#* } sign/s)"
    label="speed rsa2048 sign/s"
    [ "$mode" = async ] && label="speed -async_jobs 32 rsa2048 sign/s"
    VARIES=varies fact speed "$label (median of $ROUNDS)" "" "${medians% *}" "${medians#* }" "B/C $(echo "$cmp_line" | tr '\t' ' ')"
  done
fi

# Faults: what a caller gets when the adapter fails (errno) or answers
# wrongly (a flipped bit), six signatures and six decryptions per side.
host_openssl pkeyutl -encrypt -pubin -inkey "$pub" -pkeyopt rsa_padding_mode:pkcs1 -in "$OUT/secret.bin" \
  -out "$OUT/ct-pkcs1.bin"
host_openssl pkeyutl -encrypt -pubin -inkey "$pub" -pkeyopt rsa_padding_mode:oaep -in "$OUT/secret.bin" \
  -out "$OUT/ct-oaep.bin"
for fault in "LIBICA_EMU_ERRNO_EVERY=2" "LIBICA_EMU_CORRUPT_EVERY=2"; do
  for what in sign pkcs1 oaep; do
    row=()
    for side in B C; do
      good=0 error=0 wrong=0
      rm -f "$OUT/emu-$side.log"
      for _ in 1 2 3 4 5 6; do
        rm -f "$OUT/f.out"
        case $what in
          sign) args=(dgst -sha256 -sign "$key" -out "$OUT/f.out" "$KEYS/doc.bin") ;;
          pkcs1) args=(pkeyutl -decrypt -inkey "$key" -pkeyopt rsa_padding_mode:pkcs1 -in "$OUT/ct-pkcs1.bin" -out "$OUT/f.out") ;;
          oaep) args=(pkeyutl -decrypt -inkey "$key" -pkeyopt rsa_padding_mode:oaep -in "$OUT/ct-oaep.bin" -out "$OUT/f.out") ;;
        esac
        if SIDE_ENV="$fault" run_side "$side" "${args[@]}" >>"$OUT/run.log" 2>&1; then
          if [ "$what" = sign ]; then
            cmp -s "$OUT/f.out" "$OUT/sig-A-2048.bin" && good=$((good + 1)) || wrong=$((wrong + 1))
          else
            cmp -s "$OUT/f.out" "$OUT/secret.bin" && good=$((good + 1)) || wrong=$((wrong + 1))
          fi
        else
          error=$((error + 1))
        fi
      done
      row+=("$good right, $error errors, $wrong wrong")
      eval "fault_$side=\$wrong"
    done
    label="signature"
    [ "$what" = pkcs1 ] && label="PKCS#1 v1.5 decryption"
    [ "$what" = oaep ] && label="OAEP decryption"
    fact faults "$label, ${fault#LIBICA_EMU_} (6 runs)" "" "${row[@]}"
    [ "$fault_B" = 0 ] || fail "rustica returned a wrong answer under $fault ($what)"
  done
done
# A key above the adapter model's 4096 bits.
row=()
for side in B C; do
  if run_side "$side" dgst -sha256 -sign "$KEYS/key-8192.pem" -out "$OUT/sig-8192-$side.bin" "$KEYS/doc.bin" \
    >"$OUT/sign-8192-$side.log" 2>&1; then
    host_openssl pkey -in "$KEYS/key-8192.pem" -pubout -out "$OUT/pub-8192.pem"
    host_openssl dgst -sha256 -verify "$OUT/pub-8192.pem" -signature "$OUT/sig-8192-$side.bin" "$KEYS/doc.bin" \
      | grep -q "Verified OK" && row+=("signed, valid") || row+=("signed, INVALID")
  else
    # The first queued error's library, function and reason.
    row+=("error: $(grep -m1 '^[0-9A-F]*:error:' "$OUT/sign-8192-$side.log" | cut -d: -f4-6 || echo 'none queued')")
  fi
done
fact emulated "8192-bit signature (the adapter refuses keys over 4096 bits)" "" "${row[@]}"
# --- 4. the lab's matrix with side C, on the emulated adapter -----------------
# `rustica lab` (the host's command) drives the s390x openssl through a
# wrapper: A stock, B rustica, C the engine's sample configuration, the
# emulator as libica.so.3 for B and C, calls counted per side from its
# logs. TLS is left out (C's servers would negotiate AES-GCM, which the
# engine takes and qemu cannot run: the row above), and so is speed on
# OpenSSL 3.5 (it times key generation too: minutes under qemu).
WRAPPER=$OUT/openssl-s390x
cat >"$WRAPPER" <<WRAP
#!/bin/sh
exec env LD_LIBRARY_PATH="$EMU_DIR" qemu-s390x-static -L "$CARD" "$CARD/usr/bin/openssl" "\$@"
WRAP
chmod +x "$WRAPPER"
skip=newkey,multi,tls
[[ "$VERSION_OPENSSL" == 3.0.* ]] || skip=$skip,speed
LAB=$OUT/lab
env -u RUSTICA_MODULE LIBICA_EMU_LATENCY_US="$LIBICA_EMU_LATENCY_US" LIBICA_EMU_UNITS="$LIBICA_EMU_UNITS" \
  "$RUSTICA" lab --openssl "$WRAPPER" --module "$MODULE" --backend libica --libica libica.so.3 \
  --c-config "$OUT/c.cnf" --c-name "Debian's ibmca engine ($VERSION_ENGINE, openssl.cnf.sample)" \
  --count-libica-calls --sizes 2048 --count 3 --reps 1 --keygen-reps 1 --cell-budget 0 --skip "$skip" \
  --out "$LAB" >"$OUT/lab.log" 2>&1 || { tail -n 30 "$OUT/lab.log" >&2; fail "rustica lab with side C failed"; }
python3 - "$LAB/report.json" "$FACTS" <<'PY' || fail "the lab's side C is not what the three sides showed"
import json, sys
report = json.load(open(sys.argv[1]))
row = report["rows"][0]
problems = []
if row["status"] != "valid":
    problems.append(f"row status {row['status']}")
failed = [c["name"] for c in row.get("C_checks", []) if not c["ok"]]
if failed or not row.get("C_checks"):
    problems.append(f"side C checks failed: {failed or 'none ran'}")
def calls(kind, side):
    col = next(c for c in row["columns"] if c["column"] == kind)
    return col.get("libica_calls", {}).get(side, {})
sig_b, sig_c = calls("signatures", "B"), calls("signatures", "C")
if sig_b != {"rsa_crt": 3} or sig_c != {"rsa_mod_expo": 3}:
    problems.append(f"signature calls B {sig_b}, C {sig_c}")
if problems:
    print("three-sides lab: " + "; ".join(problems), file=sys.stderr)
    sys.exit(1)
with open(sys.argv[2], "a") as facts:
    checks = row["C_checks"]
    facts.write(f"lab\tside C's checks in `rustica lab` (2048 bits)\t\t\t{len(checks)} of {len(checks)} passed\t" +
                "; ".join(c["name"] for c in checks) + "\t\n")
    for kind, label in [("signatures", "3 signing processes"), ("verifications", "3 verifying processes"),
                        ("certificates", "3 certificates"), ("keygen", "1 key generation")]:
        b = ", ".join(f"{f} {n}" for f, n in calls(kind, "B").items()) or "none"
        c = ", ".join(f"{f} {n}" for f, n in calls(kind, "C").items()) or "none"
        varies = "varies" if kind == "keygen" else ""
        facts.write(f"lab\t{label}: adapter calls\t\t{b}\t{c}\t\t{varies}\n")
PY
say "rustica lab with side C: valid, C's checks passed (report: $LAB/report.md)"

say "facts in $FACTS"
sed 's/^/three-sides['"$RELEASE"']:   /' "$FACTS" >&2
