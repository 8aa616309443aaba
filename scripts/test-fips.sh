#!/usr/bin/env bash
# rustica on a FIPS host: OpenSSL's own FIPS provider (OpenSSL 3.5 built
# with enable-fips by scripts/openssl-build.sh, then `openssl fipsinstall`)
# with `default_properties = fips=yes`, rustica loaded beside it the way
# `rustica config` loads it. What docs/security.md ("FIPS hosts") decides
# must hold:
#   - every RSA operation still works, done by the FIPS provider;
#   - rustica is loaded and active, and counts nothing (its algorithms carry
#     no fips=yes, so OpenSSL never fetches them);
#   - `rustica doctor` fails `routing` and says why;
#   - the same file without fips=yes does route to rustica (so the first
#     three would fail if rustica were fetched).
#
#   scripts/test-fips.sh OPENSSL_PREFIX MODULE RUSTICA_COMMAND
#
# Called by scripts/test-openssl.sh 3.5.
# shellcheck source-path=SCRIPTDIR source-path=.
. "$(dirname "$0")/lib/common.sh"
. scripts/lib/counted.sh
prefix=${1:?usage: scripts/test-fips.sh OPENSSL_PREFIX MODULE RUSTICA_COMMAND}
module=${2:?module}
rustica=${3:?rustica command}
openssl=$prefix/bin/openssl
fips_so=$prefix/lib/ossl-modules/fips.so
[ -f "$fips_so" ] || die "$fips_so is missing: scripts/openssl-build.sh 3.5 builds it"
work=$(mktemp -d "${TMPDIR:-/tmp}/rustica-fips.XXXXXX")
trap 'rm -rf "$work"' EXIT

# The module's self-test and its configuration, as an installer makes them.
"$openssl" fipsinstall -module "$fips_so" -out "$work/fipsmodule.cnf" >"$work/fipsinstall.log" 2>&1 \
  || { cat "$work/fipsinstall.log" >&2; die "openssl fipsinstall failed"; }
host_conf() { # file default-properties
  cat >"$1" <<CNF
config_diagnostics = 1
openssl_conf = openssl_init
.include $work/fipsmodule.cnf
[openssl_init]
providers = provider_sect
alg_section = algorithm_sect
[provider_sect]
fips = fips_sect
base = base_sect
rustica = rustica_sect
[base_sect]
activate = 1
[rustica_sect]
module = $module
activate = 1
[algorithm_sect]
default_properties = $2
CNF
}
host_conf "$work/fips.cnf" "fips=yes"
host_conf "$work/plain.cnf" "?provider=rustica"
stats=$work/stats
run() { # conf args...
  local conf=$1
  shift
  env -u RUSTICA_BACKEND -u RUSTICA_LIBICA OPENSSL_CONF="$conf" RUSTICA_STATS_PATH="$stats" \
    OPENSSL_MODULES="$prefix/lib/ossl-modules" "$openssl" "$@"
}
signed() { # counted signatures so far, failed ones included
  env -u RUSTICA_MODULE "$rustica" stats --path "$stats" --json 2>/dev/null \
    | rustica_counted --failed sign 2>/dev/null || echo 0
}

run "$work/fips.cnf" list -providers >"$work/providers.txt" 2>&1 || { cat "$work/providers.txt" >&2; fail "the FIPS configuration does not load"; }
for p in fips rustica; do
  awk -v p="$p" '$1 == p {f = 1} f && /status: active/ {print; exit}' "$work/providers.txt" | grep -q active \
    || { cat "$work/providers.txt" >&2; fail "provider $p is not active on the FIPS host"; }
done
head -c 4096 /dev/urandom >"$work/doc.bin"
run "$work/fips.cnf" genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$work/key.pem" 2>"$work/genpkey.log" \
  || { cat "$work/genpkey.log" >&2; fail "key generation failed on the FIPS host"; }
run "$work/fips.cnf" dgst -sha256 -sign "$work/key.pem" -out "$work/sig.bin" "$work/doc.bin" 2>"$work/sign.log" \
  || { cat "$work/sign.log" >&2; fail "signing failed on the FIPS host"; }
run "$work/fips.cnf" pkey -in "$work/key.pem" -pubout -out "$work/pub.pem"
run "$work/fips.cnf" dgst -sha256 -verify "$work/pub.pem" -signature "$work/sig.bin" "$work/doc.bin" \
  | grep -q "Verified OK" || fail "verification failed on the FIPS host"
n=$(signed)
[ "$n" = 0 ] || fail "rustica counted $n signatures on a fips=yes host: it was fetched"
say "fips=yes: key generation, signature and verification done by the FIPS provider; rustica active, 0 operations"

out=$(env -u RUSTICA_MODULE OPENSSL_MODULES="$prefix/lib/ossl-modules" \
  "$rustica" doctor --config "$work/fips.cnf" --module "$module" 2>&1) && fail "doctor passed on a fips=yes host: $out"
echo "$out" | grep -q "FAIL  routing" || fail "doctor did not fail routing: $out"
echo "$out" | grep -q "requires fips=yes, which no rustica algorithm carries" || fail "doctor did not say why: $out"
say "doctor: $(echo "$out" | grep -m1 'FAIL  routing')"

# The control: the same host without fips=yes routes signatures to rustica.
run "$work/plain.cnf" dgst -sha256 -sign "$work/key.pem" -out "$work/sig-plain.bin" "$work/doc.bin" \
  || fail "signing without fips=yes failed"
cmp -s "$work/sig.bin" "$work/sig-plain.bin" || fail "rustica's signature differs from the FIPS provider's"
n=$(signed)
[ "$n" = 1 ] || fail "without fips=yes rustica counted $n signatures, expected 1"
say "control: without fips=yes the signature is rustica's (counted 1), identical to the FIPS provider's"
say "passed"
