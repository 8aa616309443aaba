#!/usr/bin/env bash
# rustica against another OpenSSL release series, end to end.
#
#   scripts/test-openssl.sh 3.5|4.0|3.0
#
# 1. builds that OpenSSL (scripts/openssl-build.sh; cached under
#    /var/tmp/rustica-cache, so a second run reuses it);
# 2. builds rustica against its headers and libcrypto (target dir
#    target/openssl-<series>, libcrypto found through an rpath);
# 3. runs the workspace's tests with that version's `openssl` first on PATH
#    (end-to-end suite, conformance vectors, lab, emulated libica); the
#    tests that drive the host's own programs (nginx, curl, Python) link the
#    host's OpenSSL and are skipped (RUSTICA_FOREIGN_OPENSSL);
# 4. runs OpenSSL's own RSA evp_test data of that version with rustica
#    preferred (scripts/evp-test.sh), when that script is present.
#
# Its last two lines are exactly
#   OPENSSL=<an executable running that version's openssl with its own libraries>
#   RUSTICA_MODULE=<rustica.so built for it>
set -euo pipefail
cd "$(dirname "$0")/.."
series=${1:?usage: scripts/test-openssl.sh 3.5|4.0|3.0}
scripts/setup.sh
prefix=$(scripts/openssl-build.sh "$series" | tail -1)
say() { echo "test-openssl[$series]: $*" >&2; }

export OPENSSL_DIR=$prefix OPENSSL_LIB_DIR=$prefix/lib OPENSSL_INCLUDE_DIR=$prefix/include
export CARGO_TARGET_DIR=$PWD/target/openssl-$series
# Test binaries and the module find this libcrypto, not the host's.
export RUSTFLAGS="-C link-arg=-Wl,-rpath,$prefix/lib"
bindir=$CARGO_TARGET_DIR/openssl-bin
mkdir -p "$bindir"
ln -sf "$prefix/bin/openssl" "$bindir/openssl"
export PATH=$bindir:$PATH
export RUSTICA_FOREIGN_OPENSSL=$series
say "$(openssl version)"
openssl version | grep -q "^OpenSSL $series\." || { say "PATH does not run OpenSSL $series"; exit 1; }

cargo build --workspace --all-targets
module=$CARGO_TARGET_DIR/debug/rustica.so
cp -f "$CARGO_TARGET_DIR/debug/librustica.so" "$module"
export RUSTICA_MODULE=$module
cargo test --workspace --no-fail-fast -- --test-threads="${RUSTICA_TEST_THREADS:-2}"
if [ -x scripts/evp-test.sh ]; then
  scripts/evp-test.sh "$series"
fi
say "passed"
echo "OPENSSL=$prefix/bin/openssl"
echo "RUSTICA_MODULE=$module"
