#!/usr/bin/env bash
# Builds an OpenSSL release series from its upstream source into a cache
# outside the clone, and prints the install prefix on its last line.
#
#   scripts/openssl-build.sh 3.0|3.5|4.0
#
# The source is Debian's copy of the upstream release tarball (the
# `.orig.tar.gz` of the openssl source package: 3.0 from bookworm, 3.5 from
# stable, 4.0 from experimental), checked against the SHA-256 in Debian's
# Sources index. The crates.io package openssl-src carries the same library
# source but leaves out test/, and OpenSSL's own evp_test and its RSA test
# data are part of what the callers need.
#
# Cache: $RUSTICA_CACHE (default /var/tmp/rustica-cache)/openssl-<series>/
#   src/      the unpacked, built source tree (test/evp_test is built too)
#   install/  bin/openssl, lib/libcrypto.so.* and ossl-modules/, include/
# A completed build is reused; delete the directory to rebuild.
set -euo pipefail
series=${1:?usage: scripts/openssl-build.sh 3.0|3.5|4.0}
case $series in
  3.0) suite=bookworm ;;
  3.5) suite=stable ;;
  4.0) suite=experimental ;;
  *) echo "openssl-build: unknown series '$series' (3.0, 3.5 or 4.0)" >&2; exit 2 ;;
esac
cache=${RUSTICA_CACHE:-/var/tmp/rustica-cache}
top=$cache/openssl-$series
prefix=$top/install
say() { echo "openssl-build[$series]: $*" >&2; }
if [ -f "$top/.complete" ]; then
  say "cached in $top ($(cat "$top/.complete"))"
  echo "$prefix"
  exit 0
fi
for tool in curl xz make perl gcc; do
  command -v $tool >/dev/null || { say "needs $tool (scripts/setup.sh installs it)"; exit 1; }
done
mkdir -p "$top"
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
# The openssl sources of the suite whose upstream version is in the series,
# newest first; the first whose tarball the mirror serves is used (a suite
# can list a version whose files a mirror does not carry yet).
candidates=$(curl -sfL "$mirror/dists/$suite/main/source/Sources.xz" | xz -d |
  awk -v s="$series" '
    /^Package: /        { pkg = $2 }
    /^Version: /        { ver = $2 }
    /^Checksums-Sha256:/ { inck = 1; next }
    inck && /^ /        { if ($3 ~ /\.orig\.tar\.gz$/) { f = $3; h = $1 }; next }
    inck                { inck = 0 }
    /^$/ {
      up = ver; sub(/-[^-]*$/, "", up)
      if (pkg == "openssl" && index(up, s ".") == 1 && f != "") print up, f, h
      pkg = ""; f = ""
    }' | sort -u -V -r) || true
[ -n "$candidates" ] || { say "no openssl $series source in Debian $suite ($mirror)"; exit 1; }
mkdir -p "$cache/src"
tarball=
while read -r version file sha; do
  t=$cache/src/$file
  if [ -f "$t" ] && echo "$sha  $t" | sha256sum -c --status; then tarball=$t; break; fi
  if curl -sfL -o "$t.part" "$mirror/pool/main/o/openssl/$file"; then
    echo "$sha  $t.part" | sha256sum -c --status || { say "checksum mismatch for $file"; exit 1; }
    mv "$t.part" "$t"
    tarball=$t
    break
  fi
  rm -f "$t.part"
  say "$file is listed in $suite but not served by $mirror; trying an older one"
done <<<"$candidates"
[ -n "$tarball" ] || { say "no openssl $series tarball could be downloaded from $mirror"; exit 1; }
say "OpenSSL $version from Debian $suite: $file"
rm -rf "$top/src" "$prefix"
mkdir -p "$top/src"
tar xzf "$tarball" -C "$top/src" --strip-components=1
cd "$top/src"
start=$SECONDS
say "configuring"
# (no-docs exists from 3.2; the targets below never build the manuals anyway.)
docs=(); [ "$series" = 3.0 ] || docs=(no-docs)
./Configure --prefix="$prefix" --libdir=lib --openssldir="$prefix/ssl" shared "${docs[@]}" \
  -Wl,-rpath,"$prefix/lib" >/dev/null
say "building (make -j$(nproc))"
# Only what rustica and its tests use: the libraries, the providers, the
# openssl command and evp_test (a plain `make` builds every test program).
make -s -j"$(nproc)" build_libs build_modules apps/openssl test/evp_test \
  >/dev/null 2>"$top/build.log" || { tail -20 "$top/build.log" >&2; exit 1; }
make -s install_dev install_modules >/dev/null 2>>"$top/build.log"
install -D -m 0755 apps/openssl "$prefix/bin/openssl"
"$prefix/bin/openssl" version >&2
echo "OpenSSL $version, built in $((SECONDS - start)) s" >"$top/.complete"
say "done in $((SECONDS - start)) s"
echo "$prefix"
