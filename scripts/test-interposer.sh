#!/usr/bin/env bash
# scripts/test-interposer.sh: the z90crypt-card interposer's tests, run
# natively on the build host (docs/card-model.md, "The kernel interface").
#
# Builds testbed/card/interposer/z90crypt-*.c and its test program
# (testbed/card/interposer/test-z90crypt-card.c) for the host with
# -Wall -Wextra -Werror, against the s390x UAPI header asm/zcrypt.h from
# the cross headers (linux-libc-dev-s390x-cross, which the s390x lane's
# gcc-s390x-linux-gnu brings; the host's linux-libc-dev has no zcrypt.h).
# Its structures are pointers and unsigned ints, so they have the same
# layout on any 64-bit little-endian build, and the ioctl numbers come from
# the same asm-generic encoding. Then it starts one rustica-card (cargo
# build -p rustica-card --bin rustica-card) and runs the tests with the
# interposer preloaded; the tests script their own cards for the faults.
# When s390x-linux-gnu-gcc is installed the interposer is also
# cross-compiled once, with the lane's flags.
#
# Then 10 cases of rustica's `backend = zcrypt` (docs/libica.md), with the
# stock `openssl` command loading target/debug/rustica.so (no libica in
# the process) through the interposer against a second rustica-card (2
# cards, `--sysfs` request counters, reset before each case):
#   zcrypt-sign          a 2048-bit signature: equal to the default
#                        provider's and verified by it; rustica counts it
#                        under libica, the card has 1 CRT request
#   zcrypt-verify        a verification sends nothing to the card
#   zcrypt-no-socket     interposer, no card listening: right, a fallback
#   zcrypt-no-device     no interposer (no /dev/z90crypt): right, a
#                        fallback, and the init trace says why
#   zcrypt-too-big       7680 bits with offload-max-bits = 16384: the
#                        card's size limit (ENODEV), right, a fallback
#   zcrypt-offline-back  every card offline, then back: card, fallback, card
#   zcrypt-online-later  an s_server started with every card offline signs
#                        its first handshake in software, its second on the
#                        card once one is online
#   zcrypt-async         openssl speed -async_jobs 4: offload threads keep
#                        several requests at the card, each counted
#   zcrypt-keygen        a 2048-bit key: its Miller-Rabin exponentiations
#                        are the card's ME requests, one for one
#   zcrypt-doctor        `rustica doctor` names the route and why it falls
#                        back (no card online; no device)
#
# Usage: scripts/test-interposer.sh [TEST...]   (names: see the test program,
#                                                and the zcrypt-* cases above)
# The peer-uid test needs root (it runs a card as uid 65534); as another
# user it is skipped.
# shellcheck source-path=SCRIPTDIR source-path=.
. "$(dirname "$0")/lib/common.sh"
# shellcheck source=scripts/lib/zcrypt-cases.sh
. scripts/lib/zcrypt-cases.sh


header=/usr/s390x-linux-gnu/include/asm/zcrypt.h
scripts/setup.sh s390x >&2 || die "could not install linux-libc-dev-s390x-cross (asm/zcrypt.h; scripts/setup.sh s390x)"
[ -f "$header" ] || die "$header is missing after scripts/setup.sh s390x"

work=$(mktemp -d /tmp/test-interposer.XXXXXX)
card_pid=""
cleanup() {
  zcrypt_card_stop
  if [ -n "$card_pid" ]; then
    kill "$card_pid" 2>/dev/null || true
    wait "$card_pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

# Only asm/zcrypt.h from the s390x headers; everything else is the host's.
mkdir -p "$work/include/asm"
ln -s "$header" "$work/include/asm/zcrypt.h"
cflags=(-O2 -g -Wall -Wextra -Werror -I"$work/include")
gcc "${cflags[@]}" -shared -fPIC -o "$work/libz90crypt-card.so" \
  testbed/card/interposer/z90crypt-card.c testbed/card/interposer/z90crypt-exchange.c \
    testbed/card/interposer/z90crypt-requests.c -ldl || die "building the interposer failed"
gcc "${cflags[@]}" -o "$work/test-z90crypt-card" \
  testbed/card/interposer/test-z90crypt-card.c || die "building the test program failed"
if command -v s390x-linux-gnu-gcc >/dev/null; then
  s390x-linux-gnu-gcc -shared -fPIC -O2 -Wall -Wextra -Werror -o "$work/s390x.so" \
    testbed/card/interposer/z90crypt-card.c testbed/card/interposer/z90crypt-exchange.c \
    testbed/card/interposer/z90crypt-requests.c -ldl || die "cross-compiling the interposer failed"
  say "cross-compiled for s390x with the lane's flags"
fi

nice -n 5 cargo build -q -p rustica-card --bin rustica-card || die "building rustica-card failed"
chmod 0700 "$work"
target/debug/rustica-card --socket "$work/card.sock" --unit-us 1 >"$work/card.log" 2>&1 &
card_pid=$!
for _ in $(seq 100); do
  grep -q "listening on" "$work/card.log" && break
  sleep 0.1
done
grep -q "listening on" "$work/card.log" || die "rustica-card did not start: $(cat "$work/card.log")"

# The test program's names, and the zcrypt cases', from the arguments.
c_tests=() zcrypt_cases=()
for a in "$@"; do
  case $a in
    zcrypt-*) zcrypt_cases+=("$a") ;;
    *) c_tests+=("$a") ;;
  esac
done
if [ $# -eq 0 ] || [ ${#c_tests[@]} -gt 0 ]; then
  TMPDIR=$work REAL_CARD_SOCKET=$work/card.sock LD_PRELOAD=$work/libz90crypt-card.so \
    "$work/test-z90crypt-card" "${c_tests[@]}" || fail "interposer tests failed"
fi
if [ $# -eq 0 ] || [ ${#zcrypt_cases[@]} -gt 0 ]; then
  zcrypt_run "$work" "${zcrypt_cases[@]}" || fail "backend = zcrypt cases failed"
fi
say "passed"
