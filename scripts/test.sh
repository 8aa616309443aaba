#!/usr/bin/env bash
# The test command: installs what the tests need, builds the workspace
# (the tests load the cdylib cargo builds), and runs every test.
# shellcheck source-path=SCRIPTDIR source-path=.
. "$(dirname "$0")/lib/common.sh"
scripts/setup.sh build tests
cargo build --workspace --all-targets
# The harness tests run the lab against this build's module.
. scripts/lib/module.sh
place_module target/debug/librustica.so target/debug/rustica.so
export RUSTICA_MODULE="$PWD/target/debug/rustica.so"
cargo test --workspace -- --test-threads="${RUSTICA_TEST_THREADS:-2}"
