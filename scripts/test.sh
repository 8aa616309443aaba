#!/usr/bin/env bash
# The test command: installs what the tests need, builds the workspace
# (the tests load the cdylib cargo builds), and runs every test.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cargo build --workspace --all-targets
cargo test --workspace -- --test-threads="${RUSTICA_TEST_THREADS:-2}"
