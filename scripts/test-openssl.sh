#!/usr/bin/env bash
# rustica against another OpenSSL release series, end to end.
#
#   scripts/test-openssl.sh 3.5|4.0|3.0
#
# 1. builds that OpenSSL (scripts/openssl-build.sh; cached under
#    the build cache, /var/cache/rustica-build for root, so a second run
#    reuses it);
# 2. builds rustica against its headers and libcrypto (target dir
#    target/openssl-3.5-4.0 for those two, target/openssl-3.0 for 3.0;
#    libcrypto found through an rpath);
# 3. runs the provider's tests with that version's `openssl` first on PATH
#    (end-to-end suite, conformance vectors, emulated libica; the tests that
#    drive nginx, curl and Python load this module into the host's 3.0
#    libcrypto, which works because the module needs only OPENSSL_3.0.0
#    symbols);
#    on 3.5, also a FIPS host (scripts/test-fips.sh);
# 4. runs OpenSSL's own RSA evp_test data of that version with rustica
#    preferred (scripts/evp-test.sh), when that script is present.
#
# Its last two lines are exactly
#   OPENSSL=<an executable running that version's openssl with its own libraries>
#   RUSTICA_MODULE=<rustica.so built for it>
# shellcheck source-path=SCRIPTDIR source-path=.
. "$(dirname "$0")/lib/common.sh"
series=${1:?usage: scripts/test-openssl.sh 3.5|4.0|3.0}
scripts/setup.sh build tests openssl
prefix=$(scripts/openssl-build.sh "$series" | tail -1)
say_as="test-openssl[$series]"

export OPENSSL_DIR=$prefix OPENSSL_LIB_DIR=$prefix/lib OPENSSL_INCLUDE_DIR=$prefix/include
# Test binaries and the module find this libcrypto, not the host's, through
# an rpath. 3.5 and 4.0 share a target directory and one rpath naming both
# their lib/ directories: their libraries' sonames differ (libcrypto.so.3
# and .so.4), so each build finds its own there, and with RUSTFLAGS the
# same the crates that do not use OpenSSL are built once for both (cargo
# rebuilds openssl-sys and what depends on it when OPENSSL_DIR changes).
case $series in
  3.5 | 4.0)
    export CARGO_TARGET_DIR=$PWD/target/openssl-3.5-4.0
    cache_dir # the cache openssl-build.sh built them in: RUSTICA_CACHE
    rpath=$RUSTICA_CACHE/openssl-3.5/install/lib:$RUSTICA_CACHE/openssl-4.0/install/lib
    ;;
  *)
    export CARGO_TARGET_DIR=$PWD/target/openssl-$series
    rpath=$prefix/lib
    ;;
esac
export RUSTFLAGS="-C link-arg=-Wl,-rpath,$rpath"
bindir=$CARGO_TARGET_DIR/openssl-bin-$series
mkdir -p "$bindir"
ln -sf "$prefix/bin/openssl" "$bindir/openssl"
export PATH=$bindir:$PATH
say "$(openssl version)"
openssl version | grep -q "^OpenSSL $series\." || die "PATH does not run OpenSSL $series"

# The provider's end-to-end suite and conformance vectors (tests/), with the
# emulated libica and the `rustica` command they use; the harness's and the
# primitive's own unit tests do not depend on the OpenSSL version and run
# in scripts/test.sh.
cargo build -p rustica --all-targets
cargo build -p libica-emu -p rustica-card -p rustica-harness --bins --lib
module=$CARGO_TARGET_DIR/rustica-$series.so
. scripts/lib/module.sh
place_module "$CARGO_TARGET_DIR/debug/librustica.so" "$module"
export RUSTICA_MODULE=$module
cargo test -p rustica --no-fail-fast -- --test-threads="${RUSTICA_TEST_THREADS:-2}"
# Same randomness, same key, in software and on the (emulated) adapter,
# against this OpenSSL's libcrypto (docs/libica.md).
cargo test -p ibmca-shim --lib same_randomness_same_key
# A FIPS host: OpenSSL's own FIPS provider with fips=yes (3.5 is built with
# it): rustica loaded and unused, doctor saying so (docs/security.md).
if [ "$series" = 3.5 ]; then
  scripts/test-fips.sh "$prefix" "$module" "$CARGO_TARGET_DIR/debug/rustica"
fi
if [ -x scripts/evp-test.sh ]; then
  scripts/evp-test.sh "$series"
fi
say "passed"
echo "OPENSSL=$prefix/bin/openssl"
echo "RUSTICA_MODULE=$module"
