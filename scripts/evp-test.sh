#!/usr/bin/env bash
# OpenSSL's own RSA test data (evp_test) with rustica preferred.
#
#   scripts/evp-test.sh [VERSION]     # VERSION: 3.0 (default)
#
# Builds OpenSSL's evp_test from the OpenSSL source of VERSION, then runs it
# with its own libcrypto on the RSA evp_test files, in a library context
# loaded from an openssl.cnf that activates rustica (built from this tree)
# and the default provider with default_properties = ?provider=rustica.
# evp_test puts only the "null" provider into the default context, as
# hardened applications do, so this also proves rustica draws its random
# numbers from the context it was loaded into.
#
# Each failing test line is compared with scripts/evp-test-allow-VERSION.txt
# (known differences, each explained in docs/evp-test.md). Exits non-zero on
# a failure not in that list, on a crash, or when rustica's counters did not
# move (rustica did not run).
#
# EVP_TEST_KEEP_LOGS=DIR keeps evp_test's logs; EVP_TEST_MODULE=FILE tests
# that rustica.so instead of this tree's.
#
# Source and build: scripts/openssl-build.sh VERSION (Debian's copy of the
# upstream release tarball: 3.0 from bookworm, 3.5 from stable, 4.0 from
# experimental; built once into $RUSTICA_CACHE/openssl-VERSION,
# /var/cache/rustica-build/openssl-VERSION for root).
# rustica is built with cargo's current settings: scripts/test-openssl.sh
# points them (OPENSSL_DIR, CARGO_TARGET_DIR) at the same OpenSSL.
# shellcheck source-path=SCRIPTDIR source-path=.
. "$(dirname "$0")/lib/common.sh"
REPO=$(pwd)
. scripts/lib/counted.sh
VERSION=${1:-3.0}

step() { say "[$((SECONDS - START))s] $*"; }

# --- 1. OpenSSL VERSION with its evp_test ----------------------------------------
step "OpenSSL $VERSION (scripts/openssl-build.sh; cached after the first run)"
PREFIX=$(scripts/openssl-build.sh "$VERSION" | tail -1)
OSSL=$(dirname "$PREFIX")/src
[ -x "$OSSL/test/evp_test" ] || die "$OSSL/test/evp_test is missing"

# --- 3. rustica ------------------------------------------------------------------
step "building rustica"
cargo build -q -p rustica --lib
cargo build -q -p rustica-harness
WORK=$(mktemp -d /tmp/rustica-evp-test.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$WORK/modules"
# EVP_TEST_MODULE: another build of rustica.so to test (e.g. an older one,
# to compare); default: the one just built from this tree.
TARGET_DIR=${CARGO_TARGET_DIR:-$REPO/target}
cp "${EVP_TEST_MODULE:-$TARGET_DIR/debug/librustica.so}" "$WORK/modules/rustica.so"
cat >"$WORK/openssl.cnf" <<EOF
openssl_conf = openssl_init
[openssl_init]
providers = provider_sect
alg_section = evp_properties
[provider_sect]
rustica = rustica_sect
default = default_sect
[rustica_sect]
module = $WORK/modules/rustica.so
activate = 1
[default_sect]
activate = 1
[evp_properties]
default_properties = ?provider=rustica
EOF
export RUSTICA_STATS_PATH=$WORK/stats
unset RUSTICA_BACKEND RUSTICA_DEBUG OPENSSL_CONF
RUSTICA=$TARGET_DIR/debug/rustica
# Every operation of every kind rustica counted, failed ones included.
ops_total() {
  "$RUSTICA" stats --json --path "$RUSTICA_STATS_PATH" 2>/dev/null \
    | rustica_counted --failed 2>/dev/null || echo 0
}

# --- 4. run ------------------------------------------------------------------------
DATA=$OSSL/test/recipes/30-test_evp_data
FILES=()
# evppkey_rsa_sigalg.txt (3.4+): the composite algorithms (RSA-SHA2-256,
# ...) and the message-signing API.
for f in evppkey_rsa_common.txt evppkey_rsa.txt evppkey_rsa_sigalg.txt; do
  [ -f "$DATA/$f" ] && FILES+=("$DATA/$f")
done
[ ${#FILES[@]} -gt 0 ] || die "no RSA evp_test data under $DATA"
ALLOW=$REPO/scripts/evp-test-allow-$VERSION.txt
unexpected=0
before=$(ops_total)
for f in "${FILES[@]}"; do
  name=$(basename "$f")
  step "evp_test $name"
  file_before=$(ops_total)
  set +e
  LD_LIBRARY_PATH=$OSSL OPENSSL_MODULES=$WORK/modules \
    "$OSSL/test/evp_test" -config "$WORK/openssl.cnf" "$f" >"$WORK/$name.log" 2>&1
  rc=$?
  set -e
  if [ $rc -gt 1 ]; then
    tail -20 "$WORK/$name.log" >&2
    fail "evp_test on $name exited with status $rc (crash?)"
  fi
  # evp_test names each failing test "FILE:LINE: Source of above error" or
  # "FILE:LINE: Expected ...":
  # keep "file:line" keys.
  grep -Eo '[A-Za-z0-9_.-]+\.txt:[0-9]+: (Source of above error|Expected)' "$WORK/$name.log" \
    | cut -d: -f1,2 | sort -u -t: -k2,2n >"$WORK/$name.failed" || true
  total=$(grep -c '^' "$WORK/$name.failed" || true)
  summary=$(grep -Eo 'Completed [0-9]+ tests with [0-9]+ errors and [0-9]+ skipped' \
    "$WORK/$name.log" | tail -1 || true)
  [ -n "$summary" ] || { tail -20 "$WORK/$name.log" >&2; fail "evp_test on $name did not complete"; }
  file_ops=$(($(ops_total) - file_before))
  say "$name: $total failing test lines; $summary; rustica operations: $file_ops"
  # Every file has RSA work that rustica must have done itself. In the
  # composite file every test reaches the operation (none fails at init),
  # so each must be counted: a composite algorithm that fell through to
  # the default provider would leave a test uncounted.
  need=1
  if [ "$name" = evppkey_rsa_sigalg.txt ]; then
    need=$(grep -cE '^(Sign|Verify|VerifyRecover|Sign-Message|Verify-Message|Verify-Message-Public) *=' "$f")
  fi
  [ "$file_ops" -ge "$need" ] ||
    fail "rustica counted $file_ops operations during $name, fewer than the $need it must have done: the rest ran elsewhere"
  while read -r key; do
    [ -n "$key" ] || continue
    if ! { [ -f "$ALLOW" ] && grep -q "^$key\b" "$ALLOW"; }; then
      say "unexpected failure: $key"
      grep -B3 "$key: " "$WORK/$name.log" | head -4 >&2 || true
      unexpected=$((unexpected + 1))
    fi
  done <"$WORK/$name.failed"
  if [ -n "${EVP_TEST_KEEP_LOGS:-}" ]; then
    cp "$WORK/$name.log" "$WORK/$name.failed" "$EVP_TEST_KEEP_LOGS"/
  fi
done
after=$(ops_total)
delta=$((after - before))
say "rustica operations counted during evp_test: $delta"
[ "$delta" -gt 0 ] || fail "rustica's counters did not move: rustica did not run"
[ "$unexpected" -eq 0 ] || fail "$unexpected unexpected failure(s) (allowlist: $ALLOW)"
step "done: OpenSSL $VERSION RSA evp_test data passes under rustica (known differences: docs/evp-test.md)"
