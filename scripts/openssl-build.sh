#!/usr/bin/env bash
# Builds an OpenSSL release series from its upstream source into a cache
# outside the clone, and prints the install prefix on its last line.
#
#   scripts/openssl-build.sh 3.0|3.5|4.0           # for this machine
#   scripts/openssl-build.sh 3.0|3.5|4.0 s390x     # cross-built for s390x
#                                                  # (s390x-linux-gnu-gcc)
#   OPENSSL_BUILD_JOBS=N   make's jobs (default: every core)
#
# The source is Debian's copy of the upstream release tarball (the
# `.orig.tar.gz` of the openssl source package: 3.0 from bookworm, 3.5 from
# stable, 4.0 from experimental), checked against the SHA-256 in Debian's
# Sources index. The crates.io package openssl-src carries the same library
# source but leaves out test/, and OpenSSL's own evp_test and its RSA test
# data are part of what the callers need.
#
# Cache: $RUSTICA_CACHE (default /var/cache/rustica-build for root,
# ~/.cache/rustica-build for others; scripts/lib/common.sh's cache_dir)/openssl-<series>/
# (openssl-<series>-s390x/ for the cross build)
#   src/      the unpacked, built source tree (test/evp_test is built too,
#             not for s390x)
#   install/  bin/openssl, lib/libcrypto.so.* and ossl-modules/ (3.5 for
#             this machine: fips.so too), include/
# A completed build is reused, and only when it and everything in it is
# yours alone (cache_reuse: status 2 otherwise); delete the directory to
# rebuild. Its .complete names the tree's format: a tree of yours in an
# older format whose files others may write to (before format 2 the
# tarball's 664 modes were kept) is removed and built again, not refused.
# shellcheck source-path=SCRIPTDIR source-path=.
. "$(dirname "$0")/lib/common.sh"
series=${1:?usage: scripts/openssl-build.sh 3.0|3.5|4.0 [s390x]}
arch=${2:-host}
case $arch in
  host|s390x) ;;
  *) die "unknown architecture '$arch' (s390x, or none for this machine)" ;;
esac
case $series in
  3.0) suite=bookworm ;;
  3.5) suite=stable ;;
  4.0) suite=experimental ;;
  *) die "unknown series '$series' (3.0, 3.5 or 4.0)" ;;
esac
cache_dir
cache=$RUSTICA_CACHE
top=$cache/openssl-$series
[ "$arch" = host ] || top=$top-$arch
prefix=$top/install
label=$series
[ "$arch" = host ] || label="$series $arch"
say_as="openssl-build[$label]"
# 3.5 for this machine is built with its FIPS provider too (fips.so, for
# scripts/test-fips.sh); an older cache without it is rebuilt once.
fips=(); [ "$series" = 3.5 ] && [ "$arch" = host ] && fips=(enable-fips)
# What is reused below, or removed and rebuilt, is judged first: the entry
# itself and the way to it, then (unless it is an older format of ours, to
# be removed) everything in it.
format="tree format 2"
# One build of a tree at a time: a second caller (.ci/run builds some in
# the background) waits here, then finds the first one's tree complete.
exec 9>"$top.lock"
flock 9
cache_reuse "$top"
if [ -f "$top/.complete" ] && ! grep -qF "$format" "$top/.complete" &&
  [ -n "$(find "$top" -mindepth 1 ! -type l -perm /022 -print -quit)" ]; then
  # Ours (just judged), so removing it is safe: rm does not follow the
  # symbolic links it finds. One holding anything of another user's is
  # left for the deep check to refuse.
  if [ -z "$(find "$top" -mindepth 1 ! -user "$(id -u)" -print -quit)" ]; then
    say "$top is an older build of this script ($(head -c 200 "$top/.complete")): building it again"
    rm -rf -- "$top"
  fi
fi
cache_reuse -r "$top"
if [ -f "$top/.complete" ] && { [ ${#fips[@]} = 0 ] || [ -f "$prefix/lib/ossl-modules/fips.so" ]; }; then
  say "cached in $top ($(cat "$top/.complete"))"
  echo "$prefix"
  exit 0
fi
rm -f "$top/.complete"
compiler=gcc groups=(openssl)
[ "$arch" = s390x ] && compiler=s390x-linux-gnu-gcc groups+=(s390x)
scripts/setup.sh "${groups[@]}" >&2
for tool in curl xz make perl $compiler; do
  command -v $tool >/dev/null || die "needs $tool (scripts/setup.sh ${groups[*]} installs it)"
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
[ -n "$candidates" ] || die "no openssl $series source in Debian $suite ($mirror)"
mkdir -p "$cache/src"
# The host's and the s390x build of one series share a tarball: one
# download at a time.
exec 8>"$cache/src/.download.lock"
flock 8
tarball=
while read -r version file sha; do
  t=$cache/src/$file
  if [ -f "$t" ] && echo "$sha  $t" | sha256sum -c --status; then tarball=$t; break; fi
  if curl -sfL -o "$t.part" "$mirror/pool/main/o/openssl/$file"; then
    echo "$sha  $t.part" | sha256sum -c --status || die "checksum mismatch for $file"
    mv "$t.part" "$t"
    tarball=$t
    break
  fi
  rm -f "$t.part"
  say "$file is listed in $suite but not served by $mirror; trying an older one"
done <<<"$candidates"
[ -n "$tarball" ] || die "no openssl $series tarball could be downloaded from $mirror"
exec 8>&-
say "OpenSSL $version from Debian $suite: $file"
rm -rf "$top/src" "$prefix"
mkdir -p "$top/src"
# The tarball's own modes (664 for some files) are not kept: the tree is
# then ours alone, as its reuse check (cache_reuse -r, above) requires.
umask 022
tar xzf "$tarball" -C "$top/src" --strip-components=1 --no-same-permissions
cd "$top/src"
start=$SECONDS
say "configuring"
# (no-docs exists from 3.2; the targets below never build the manuals anyway.)
docs=(); [ "$series" = 3.0 ] || docs=(no-docs)
# The cross build uses the cross compiler's own C library (libc6-dev-s390x-cross);
# the binaries run under qemu-user against any newer s390x glibc.
target=(); [ "$arch" = s390x ] && target=(linux64-s390x --cross-compile-prefix=s390x-linux-gnu-)
./Configure "${target[@]}" --prefix="$prefix" --libdir=lib --openssldir="$prefix/ssl" shared \
  "${docs[@]}" "${fips[@]}" -Wl,-rpath,"$prefix/lib" >/dev/null
jobs=${OPENSSL_BUILD_JOBS:-$(nproc)}
say "building (make -j$jobs)"
# Only what rustica and its tests use: the shared libraries, the legacy
# and FIPS providers, the openssl command and evp_test. `make build_libs`
# would compile libcrypto twice (its static archive has objects of its
# own, about a third of the build) and `make build_modules` adds test
# engines and providers; nothing here links statically, so neither is
# built, and the install below is by hand (make's install targets depend
# on build_libs).
soversion=${series%%.*} # libcrypto.so.3 for 3.x, .so.4 for 4.0
targets=(libcrypto.so libssl.so providers/legacy.so apps/openssl)
[ ${#fips[@]} = 0 ] || targets+=(providers/fips.so)
[ "$arch" = host ] && targets+=(test/evp_test)
{ make -s build_generated && make -s -j"$jobs" "${targets[@]}"; } \
  >/dev/null 2>"$top/build.log" || { tail -20 "$top/build.log" >&2; die "the build failed (log: $top/build.log)"; }
mkdir -p "$prefix/include/openssl" "$prefix/lib/ossl-modules" "$prefix/bin"
install -m 0644 include/openssl/*.h "$prefix/include/openssl/"
for lib in libcrypto libssl; do
  install -m 0755 "$lib.so.$soversion" "$prefix/lib/"
  ln -sf "$lib.so.$soversion" "$prefix/lib/$lib.so"
done
install -m 0755 providers/legacy.so "$prefix/lib/ossl-modules/"
# The FIPS module is all scripts/test-fips.sh needs (it runs fipsinstall
# itself).
[ ${#fips[@]} = 0 ] || install -m 0755 providers/fips.so "$prefix/lib/ossl-modules/fips.so"
install -D -m 0755 apps/openssl "$prefix/bin/openssl"
[ "$arch" = host ] && "$prefix/bin/openssl" version >&2
with=""; [ ${#fips[@]} = 0 ] || with=", with its FIPS provider"
# Nothing the build made may be writable by others either.
chmod -R go-w "$top"
echo "OpenSSL $version ($arch$with), built in $((SECONDS - start)) s; $format" >"$top/.complete"
say "done in $((SECONDS - start)) s"
echo "$prefix"
