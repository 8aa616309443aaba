#!/usr/bin/env bash
# Installs what building and testing rustica needs on Debian 12, once.
# Safe to run repeatedly: it only installs what is missing.
# shellcheck source-path=SCRIPTDIR source-path=.
. "$(dirname "$0")/lib/common.sh"
need=()
# nginx-light, curl and python3 are peers of the system-wide tests; valgrind
# runs the library-context lifecycle test (tests/lifecycle.rs); dpkg-dev
# unpacks the OpenSSL source for scripts/evp-test.sh; debhelper, lintian,
# rpm, rpmlint and debootstrap build and check the packages
# (scripts/package.sh, scripts/package-rpm.sh, scripts/test-trixie.sh);
# prometheus-node-exporter, prometheus (with promtool) and
# python3-prometheus-client read rustica's metrics (scripts/test-metrics.sh);
# bind9-utils (dnssec-keygen, dnssec-signzone, dnssec-verify) is the signer
# of the lab's DNSSEC step, and binutils' nm reads which RSA functions the
# host's PowerDNS imports (docs/lab.md, "DNSSEC zone signing").
for pkg in libclang-dev libssl-dev openssl pkg-config gcc nginx-light curl python3 valgrind dpkg-dev make perl \
           debhelper lintian rpm rpmlint debootstrap prometheus-node-exporter prometheus python3-prometheus-client \
           bind9-utils binutils; do
  dpkg -s "$pkg" >/dev/null 2>&1 || need+=("$pkg")
done
if [ ${#need[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  say "installing ${need[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need[@]}" >/dev/null
fi
command -v cargo >/dev/null || die "cargo is required (https://rustup.rs)"
