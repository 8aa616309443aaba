#!/usr/bin/env bash
# The constant-time check on the generated code: the steps of a private
# operation that take secrets run under valgrind's memcheck with those
# secrets marked undefined, so that memcheck reports every conditional
# jump and every memory address that depends on them.
#
# Usage: scripts/check-ct.sh
#
# The driver, ct-check/src/main.rs, is built in the release profile (the
# one rustica ships in) and calls Garner's CRT recombination, the
# unblinding of a decryption, and the decryption padding checks (PKCS#1
# v1.5 with and without implicit rejection, the TLS premaster rule, OAEP),
# checking each result too. Three steps:
#
# 1. The driver must run the shipped machine code: each of those functions
#    is compared, instruction by instruction (addresses aside), with its
#    copy in target/release/librustica.so. Without LTO each is compiled
#    once, in its own crate, and both link that code; a function inlined
#    into the driver, or compiled differently, fails here (status 1).
# 2. `ct_check self-test` branches on a marked byte on purpose: memcheck
#    must report it, or the marks do not reach memcheck here and the check
#    could not fail (status 2).
# 3. The driver under memcheck: no report, and every result right.
#
# Status 0: passed; 1: memcheck reported a use of a secret (the report is
# printed), a result was wrong, or the driver's code is not the module's;
# 2: could not run (no valgrind or objdump, an architecture the driver's
# client requests are not written for, a build that failed). About 3 s
# once built (docs/security.md, "Constant time as compiled").
# shellcheck source-path=SCRIPTDIR source-path=.
. "$(dirname "$0")/lib/common.sh"

case "$(uname -m)" in
  x86_64 | aarch64 | s390x) ;;
  *) die "the driver's client requests are written for x86_64, aarch64 and s390x, not $(uname -m)" ;;
esac
command -v valgrind >/dev/null || die "needs valgrind (scripts/setup.sh tests)"
command -v objdump >/dev/null || die "needs objdump (binutils)"
say "building librustica.so and the driver, ct-check (release)"
cargo build --release --quiet -p rustica -p ct-check || die "the build failed"
release=${CARGO_TARGET_DIR:-$repo/target}/release
driver=$release/ct_check
module=$release/librustica.so
[ -x "$driver" ] && [ -f "$module" ] || die "no driver or module under $release"

# 1. The same machine code as the module's.
functions=(
  ibmca_shim::bn::ct_mont::garner
  ibmca_shim::bn::ct_mont::mont_mul_be
  rustica::enc_padding::pkcs1_type2_decode
  rustica::enc_padding::pkcs1_type2_decode_implicit
  rustica::enc_padding::tls_premaster
  rustica::enc_padding::Oaep::decode
)
# symbol FILE NAME: the mangled name of the function NAME defined in FILE.
symbol() {
  paste <(nm --defined-only "$1" | awk '{print $3}') \
    <(nm --defined-only -C "$1" | awk '{$1 = ""; $2 = ""; sub(/^  /, ""); print}') |
    awk -F '\t' -v name="$2" '$2 == name && !found {print $1; found = 1}'
}
# code FILE SYMBOL: its instructions, with addresses and offsets taken out.
code() {
  objdump -d --no-show-raw-insn --no-addresses "--disassemble=$2" "$1" | grep -P '^\t' |
    sed -E 's/<[^>]*>//g; s/-?0x[0-9a-f]+\(%rip\)/RIP/g; s/\b[0-9a-f]{4,}\b/ADDR/g; s/#.*//; s/[[:space:]]+$//'
}
for f in "${functions[@]}"; do
  in_module=$(symbol "$module" "$f")
  in_driver=$(symbol "$driver" "$f")
  [ -n "$in_module" ] || die "$f is not in $module"
  [ -n "$in_driver" ] || fail "the driver does not call $f as the module has it (inlined?)"
  a=$(code "$module" "$in_module")
  b=$(code "$driver" "$in_driver")
  [ -n "$a" ] || die "no instructions for $f in $module"
  [ "$a" = "$b" ] || fail "$f is not the same machine code in the driver as in the module"
done
say "the driver runs the module's code for ${#functions[@]} functions"

log=$(mktemp) || die "mktemp failed"
trap 'rm -f "$log"' EXIT
memcheck() {
  valgrind --tool=memcheck --error-exitcode=1 --track-origins=yes --log-file="$log" "$driver" "$@"
}

# The marks must reach memcheck: a branch on a marked byte is reported.
rc=0
memcheck self-test >/dev/null || rc=$?
if [ "$rc" != 1 ] || ! grep -q 'Conditional jump or move depends on uninitialised value' "$log"; then
  cat "$log" >&2
  die "memcheck did not report the self-test's branch on a marked byte (status $rc)"
fi

rc=0
memcheck || rc=$?
errors=$(sed -n 's/.*ERROR SUMMARY: \([0-9]*\) errors.*/\1/p' "$log" | tail -n 1)
case "$rc/$errors" in
  0/0) say "passed: no branch or address depends on a marked secret ($(grep -c . "$log") log lines)" ;;
  1/0) fail "a result was wrong (the driver says which above)" ;;
  1/*)
    cat "$log" >&2
    fail "memcheck: $errors uses of a secret (above)"
    ;;
  *)
    cat "$log" >&2
    die "the driver stopped with status $rc"
    ;;
esac
