#!/usr/bin/env bash
# Runs rustica's test suite (unit, in-process and end-to-end tests) under
# AddressSanitizer, with nightly Rust's -Zsanitizer=address.
#
#   scripts/asan.sh [extra cargo test args...]   # e.g. --test e2e e2e_encrypt::
#
# How the pieces get the ASan runtime:
# - test binaries are instrumented executables: rustc links its static ASan
#   runtime into them, and --export-dynamic makes its symbols visible to
#   the instrumented rustica.so they dlopen (in-process tests);
# - end-to-end tests run the stock, uninstrumented `openssl` binary, which
#   dlopens the instrumented rustica.so: it gets gcc's libasan through
#   LD_PRELOAD, set only for `openssl` by a wrapper placed first on PATH (the
#   test binaries must not get a second runtime).
# Builds go to target/asan (override with ASAN_TARGET_DIR). Exits non-zero
# on any test failure or ASan report.
# shellcheck source-path=SCRIPTDIR source-path=.
. "$(dirname "$0")/lib/common.sh"
root=$PWD

rustup toolchain list | grep -q '^nightly' || rustup toolchain install nightly --profile minimal
host=$(rustc +nightly -vV | sed -n 's/^host: //p')
libasan=$(gcc -print-file-name=libasan.so)
[ -e "$libasan" ] || die "gcc's libasan not found (apt-get install libasan8)"
libasan=$(readlink -f "$libasan")

export CARGO_TARGET_DIR=${ASAN_TARGET_DIR:-$root/target/asan}
export RUSTFLAGS="-Zsanitizer=address -Cforce-frame-pointers=yes -Clink-arg=-Wl,--export-dynamic"
export RUSTDOCFLAGS="-Zsanitizer=address"
reports=$CARGO_TARGET_DIR/asan-reports
rm -rf "$reports"
mkdir -p "$reports"
# log_path: every process (test binaries and the openssl children) writes
# its reports to a file, so one buried in a test's captured output is not
# missed. Leak checking: on for openssl (set by its wrapper); off by default
# in the test binaries (ASAN_TEST_LEAKS=1 turns it on; see docs/testing.md
# for what it found and how it was fixed).
export ASAN_OPTIONS="detect_leaks=${ASAN_TEST_LEAKS:-0}:abort_on_error=0:halt_on_error=1:log_path=$reports/asan:symbolize=1:detect_stack_use_after_return=0"
export RUSTICA_STATS_PATH=${RUSTICA_STATS_PATH:-$CARGO_TARGET_DIR/stats}
# An ASYNC job runs on a fixed 32 KiB stack (OpenSSL 3.0 has no way to
# enlarge it), and under ASan rustica's instrumented frames fill most of
# it. On a machine with AVX-512 two things overflowed it, and every
# e2e_async_robust program died with SIGSEGV: a lazy symbol binding inside
# the first offload's pthread_create (the loader's resolver saves the whole
# AVX-512 register file), and libcrypto's AVX-512 IFMA exponentiation in
# the emulator when a job's operation runs synchronously. So symbols are
# bound at load, and libcrypto is told the CPU lacks AVX512F and IFMA
# (OPENSSL_ia32cap's second word masks CPUID leaf 7 EBX bits 16 and 21).
# Uninstrumented builds have room to spare (the plain test stage runs the
# same programs on the same machine).
export LD_BIND_NOW=1
export OPENSSL_ia32cap=":~0x210000"
# The tests' own C programs (tests/c) load the instrumented rustica.so
# directly: built with the runtime; and nothing under valgrind.
# tests/c/asan_job_stacks.c gives their ASYNC jobs' stacks room below
# OpenSSL's fixed 32 KiB for ASan's own frames (it says why).
export RUSTICA_TEST_CFLAGS="-fsanitize=address -fno-omit-frame-pointer $root/tests/c/asan_job_stacks.c"
export RUSTICA_NO_VALGRIND=1

wrap=$CARGO_TARGET_DIR/asan-bin
rm -rf "$wrap"
mkdir -p "$wrap"
openssl_bin=$(command -v openssl)
# openssl dlcloses rustica.so at exit, before LeakSanitizer runs: its
# frames could then not be symbolized, and heap blocks held only by the
# module's statics would show up as leaks of "<unknown module>". A
# one-line dlclose stand-in keeps modules mapped; ASAN_KEEP_MODULES=0 turns
# it off (then such static-held blocks are reported, unsymbolized).
preload=$libasan
if [ "${ASAN_KEEP_MODULES:-1}" != 0 ]; then
    printf 'int dlclose(void *h) { (void)h; return 0; }\n' >"$wrap/noclose.c"
    cc -shared -fPIC -o "$wrap/noclose.so" "$wrap/noclose.c"
    preload="$libasan:$wrap/noclose.so"
fi
# The programs the end-to-end tests start by name and that load rustica.
# Leak checking stays on for openssl (short-lived, cleans up at exit);
# nginx keeps its off: its exit-time leaks are not rustica's. Memory
# errors are caught in both. curl is left alone: the tests run it without
# rustica, and with libasan preloaded it deadlocks in setlocale at start.
for prog in openssl nginx; do
    real=$(command -v "$prog" || true)
    [ -n "$real" ] || continue
    leaks=0
    [ "$prog" = openssl ] && leaks=1
    cat >"$wrap/$prog" <<WRAP
#!/bin/sh
ASAN_OPTIONS="\${ASAN_OPTIONS}:detect_leaks=$leaks" \\
LD_PRELOAD="$preload\${LD_PRELOAD:+:\$LD_PRELOAD}" exec "$real" "\$@"
WRAP
    chmod +x "$wrap/$prog"
done
export PATH="$wrap:$PATH"

# --target keeps build scripts and proc macros uninstrumented.
cargo +nightly build --workspace --target "$host"
# Python is started by absolute path (/usr/bin/python3), out of the
# wrappers' reach, and cannot load an instrumented rustica.so without the
# runtime: its test is skipped unless arguments are given.
args=("$@")
if [ ${#args[@]} -eq 0 ]; then
    args=(-- --skip python_ssl_handshake_uses_rustica)
fi
status=0
cargo +nightly test --workspace --target "$host" --no-fail-fast "${args[@]}" || status=$?

# A process that switched stacks (OpenSSL's ASYNC jobs run on stacks of
# their own, through swapcontext) leaves a file holding only ASan's warning
# that it cannot follow the switch; that warning is not a report.
errors=()
switched=0
for f in "$reports"/asan*; do
    [ -e "$f" ] || continue
    if grep -q "ERROR: \(Address\|Leak\)Sanitizer" "$f"; then
        errors+=("$f")
    elif grep -q "ignoring requested __asan_handle_no_return" "$f"; then
        switched=$((switched + 1))
    else
        errors+=("$f")
    fi
done
if [ ${#errors[@]} -gt 0 ]; then
    echo "== AddressSanitizer reports (in $reports):"
    for f in "${errors[@]}"; do
        echo "--- $f"
        head -60 "$f"
    done
    status=1
else
    echo "== no AddressSanitizer reports ($switched process(es) warned only that they switched stacks: ASYNC jobs)"
fi
exit $status
