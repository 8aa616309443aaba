#!/usr/bin/env bash
# Builds rustica's Debian package from the source package in debian/
# (debhelper, dh_shlibdeps) and checks it with lintian:
#
#   scripts/package.sh [amd64|s390x]     -> target/deb/rustica_<version>_<arch>.deb
#
# A thin wrapper over `dpkg-buildpackage -b`, which also works by hand
# (debian/rules says how). It adds what a build machine here lacks:
#  - the crates, vendored from Cargo.lock into the cache
#    (scripts/cargo-vendor.sh): the build runs cargo --frozen, offline;
#  - a build directory of its own under $RUSTICA_CACHE/deb-build, a copy of
#    this tree (dpkg-buildpackage writes its results beside the source
#    directory, and cargo's target directory there is kept between runs);
#  - -d: the Rust toolchain is rustup's (Debian 12's rustc is too old for
#    the crates), which dpkg does not know about;
#  - for s390x, the cross sysroot of scripts/s390x-lane.sh (Debian 12's
#    s390x libc and OpenSSL) and a dpkg database describing its packages,
#    so dh_shlibdeps reads their symbols files as it would on s390x.
# Then lintian (the build machine's, Debian 12's) must report no error and
# no warning. None is overridden today; an override would go in
# debian/rustica.lintian-overrides with its reason in a comment.
# shellcheck source-path=SCRIPTDIR source-path=.
. "$(dirname "$0")/lib/common.sh"
REPO=$(pwd)
ARCH=${1:-amd64}
cache_dir
CACHE=$RUSTICA_CACHE

scripts/setup.sh build packaging
for tool in dpkg-buildpackage dh lintian cargo; do
  command -v "$tool" >/dev/null \
    || die "$tool is missing (scripts/setup.sh packaging installs debhelper and lintian)"
done
case "$ARCH" in amd64|s390x) ;; *) die "usage: $0 [amd64|s390x]" ;; esac
VERSION=$(dpkg-parsechangelog -l debian/changelog -S Version)
CARGO_VERSION=$(sed -n '/^\[workspace.package\]/,/^\[/s/^version = "\(.*\)"/\1/p' Cargo.toml)
[ "${VERSION%%-*}" = "$CARGO_VERSION" ] \
  || fail "debian/changelog's version $VERSION is not Cargo.toml's $CARGO_VERSION: add a changelog entry"

VENDOR=$(scripts/cargo-vendor.sh) || die "the crates could not be vendored"

BUILD=$CACHE/deb-build/$ARCH
# Its cargo target directory's build scripts run: yours alone, or refused.
cache_reuse "$CACHE/deb-build" "$BUILD" "$BUILD/cargo-target"
SRC=$BUILD/rustica-$VERSION
mkdir -p "$SRC"
# The tree as git sees it (tracked and new files), never target/ or .git;
# modification times are kept, so cargo rebuilds only what changed.
git ls-files -z --cached --others --exclude-standard \
  | xargs -0 -r sh -c 'for f; do [ -e "$f" ] && printf "%s\0" "$f"; done' sh \
  | tar --null -T - -cf - | tar -C "$SRC" -xf -
# Files that left the tree since the last copy go from the copy too.
(cd "$SRC" && find . -type f ! -path './debian/*' -printf '%P\n') | sort >"$BUILD/copied"
git ls-files --cached --others --exclude-standard | sort >"$BUILD/wanted"
comm -23 "$BUILD/copied" "$BUILD/wanted" | (cd "$SRC" && xargs -r rm -f --)
rm -f "$BUILD"/*.deb "$BUILD"/*.ddeb "$BUILD"/*.changes "$BUILD"/*.buildinfo

export RUSTICA_VENDOR_DIR=$VENDOR
export RUSTICA_CARGO_TARGET_DIR=$BUILD/cargo-target
ARGS=(-b -d -us -uc)
if [ "$ARCH" = s390x ]; then
  LANE=${S390X_LANE_DIR:-$REPO/target/s390x-lane}
  SYSROOT=$(S390X_LANE_DIR=$LANE scripts/s390x-lane.sh --sysroot-only) \
    || die "the s390x sysroot could not be set up (scripts/s390x-lane.sh --sysroot-only)"
  # The sysroot's packages as dpkg would record them had they been
  # installed there: status, file lists (with the sysroot's prefix, as
  # dpkg-shlibdeps finds the libraries there) and control files (symbols,
  # shlibs). Made once per sysroot.
  ADMIN=$(dirname "$SYSROOT")/dpkg-admin
  if [ ! -f "$ADMIN/.complete" ]; then
    say "a dpkg database for the s390x sysroot's packages ($ADMIN)"
    rm -rf "$ADMIN" && mkdir -p "$ADMIN/info" "$ADMIN/updates"
    : >"$ADMIN/status"
    echo 1 >"$ADMIN/info/format"   # the multiarch layout: pkg:arch.* for Multi-Arch: same
    for deb in "$(dirname "$SYSROOT")"/apt/debs/*.deb; do
      pkg=$(dpkg-deb -f "$deb" Package)
      name=$pkg
      [ "$(dpkg-deb -f "$deb" Multi-Arch)" = same ] && name=$pkg:s390x
      ctl=$(mktemp -d)
      dpkg-deb -e "$deb" "$ctl"
      for f in symbols shlibs; do
        if [ -f "$ctl/$f" ]; then cp "$ctl/$f" "$ADMIN/info/$name.$f"; fi
      done
      rm -rf "$ctl"
      dpkg-deb -c "$deb" | awk '{print $6}' | sed -e 's|^\./|/|' -e 's|/$||' \
        | grep -v '^$' | sed "s|^|$SYSROOT|" >"$ADMIN/info/$name.list"
      { echo "Package: $pkg"; echo "Status: install ok installed"
        dpkg-deb -f "$deb" Version Architecture Multi-Arch Maintainer Source Provides Depends
        echo "Description: $pkg (s390x sysroot)"; echo; } >>"$ADMIN/status"
    done
    touch "$ADMIN/.complete"
  fi
  export RUSTICA_SYSROOT=$SYSROOT RUSTICA_DPKG_ADMINDIR=$ADMIN
  ARGS+=(-a s390x)
  command -v s390x-linux-gnu-strip >/dev/null || die "s390x-linux-gnu-strip is missing (binutils-s390x-linux-gnu)"
fi

say "dpkg-buildpackage ${ARGS[*]} in $SRC (log: $BUILD/build.log)"
(cd "$SRC" && nice -n 19 dpkg-buildpackage "${ARGS[@]}") >"$BUILD/build.log" 2>&1 \
  || { tail -n 40 "$BUILD/build.log" >&2; die "dpkg-buildpackage failed (whole log: $BUILD/build.log)"; }
DEB=$BUILD/rustica_${VERSION}_$ARCH.deb
[ -f "$DEB" ] || die "no $DEB after the build"
CHANGES=$BUILD/rustica_${VERSION}_$ARCH.changes
say "Depends: $(dpkg-deb -f "$DEB" Depends)"

say "lintian $(lintian --version | awk '{print $2}') on $(basename "$CHANGES")"
lintian --fail-on error,warning --display-level '>=warning' --show-overrides \
  "$CHANGES" >"$BUILD/lintian.log" 2>&1 || { cat "$BUILD/lintian.log" >&2; fail "lintian reported errors or warnings"; }
# Overridden tags are shown with an "O:"; anything else is a finding.
if grep -Ev '^O: ' "$BUILD/lintian.log" | grep -E '^[EW]: ' >/dev/null; then
  cat "$BUILD/lintian.log" >&2; fail "lintian reported errors or warnings"
fi
sed 's/^/package: lintian: /' "$BUILD/lintian.log" >&2
say "lintian: 0 errors, 0 warnings ($(grep -c '^O: ' "$BUILD/lintian.log" || true) overridden, each with its reason)"

mkdir -p target/deb
cp "$DEB" "target/deb/"
for ddeb in "$BUILD"/rustica-dbgsym_*"_$ARCH".*deb; do
  [ -f "$ddeb" ] && cp "$ddeb" target/deb/
done
say "built target/deb/$(basename "$DEB")"
echo "$REPO/target/deb/$(basename "$DEB")"
