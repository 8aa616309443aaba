#!/usr/bin/env bash
# The offload pool under ThreadSanitizer: the shim's pool unit tests
# (ibmca-shim/src/pool/tests.rs: real OpenSSL ASYNC jobs sharing a wait
# context, several application threads, wait contexts freed mid-flight),
# with nightly Rust's -Zsanitizer=thread and the standard library rebuilt
# instrumented (-Zbuild-std; without it, std's own locks are invisible to
# the sanitizer and every shared value looks racy).
#
#   scripts/tsan.sh [extra test filter]
#
# Builds go to target/tsan (override with TSAN_TARGET_DIR). Needs the
# nightly toolchain's rust-src component; installs it when missing, and
# says so and stops (exit 0) when it cannot be had.
# shellcheck source-path=SCRIPTDIR source-path=.
. "$(dirname "$0")/lib/common.sh"
rustup toolchain list | grep -q '^nightly' || rustup toolchain install nightly --profile minimal
if ! rustup component list --toolchain nightly --installed | grep -q '^rust-src'; then
    if ! rustup component add rust-src --toolchain nightly; then
        echo "tsan.sh: nightly's rust-src component cannot be installed here: ThreadSanitizer run skipped" >&2
        exit 0
    fi
fi
host=$(rustc +nightly -vV | sed -n 's/^host: //p')
export CARGO_TARGET_DIR=${TSAN_TARGET_DIR:-$PWD/target/tsan}
export RUSTFLAGS="-Zsanitizer=thread"
# halt_on_error: the first report fails the run; second_deadlock_stack
# helps reading lock-order reports.
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1"
cargo +nightly test -Zbuild-std --target "$host" -p ibmca-shim --lib "${1:-pool::}" -- --test-threads=2
