#!/usr/bin/env bash
# Builds rustica's RPM from packaging/rpm/rustica.spec with rpmbuild (Debian's
# rpm package) and checks it with rpmlint:
#
#   scripts/package-rpm.sh [x86_64|s390x]   -> target/rpm/rustica-<version>-1.<arch>.rpm
#
# Sources: Source0 is this tree (tracked and new files, as git sees them),
# Source1 the vendored crates (scripts/cargo-vendor.sh --tarball); the spec
# builds with cargo --frozen, offline. Here the spec takes the crates from
# the unpacked vendor directory itself (rustica_vendor_dir), which lets it
# share cargo's target directory with scripts/package.sh. rpmbuild runs with --nodeps: the
# build requirements are RHEL's and SLES's package names, which this
# machine's empty rpm database cannot know (their Debian equivalents are
# installed by scripts/setup.sh, the Rust toolchain by rustup). s390x is
# cross-built against scripts/s390x-lane.sh's sysroot (Debian 12's s390x
# libc and OpenSSL), with the cross binutils for stripping. Then rpmlint
# must report no error (its warnings are printed).
# shellcheck source-path=SCRIPTDIR source-path=.
. "$(dirname "$0")/lib/common.sh"
REPO=$(pwd)
ARCH=${1:-x86_64}
cache_dir
CACHE=$RUSTICA_CACHE
scripts/setup.sh build packaging
for tool in rpmbuild rpmlint cargo; do
  command -v "$tool" >/dev/null || die "$tool is missing (scripts/setup.sh packaging installs rpm and rpmlint)"
done
case "$ARCH" in x86_64|s390x) ;; *) die "usage: $0 [x86_64|s390x]" ;; esac
SPEC=packaging/rpm/rustica.spec
VERSION=$(sed -n 's/^Version: *//p' "$SPEC")
CARGO_VERSION=$(sed -n '/^\[workspace.package\]/,/^\[/s/^version = "\(.*\)"/\1/p' Cargo.toml)
[ "$VERSION" = "$CARGO_VERSION" ] || fail "$SPEC's Version $VERSION is not Cargo.toml's $CARGO_VERSION"

TOP=$CACHE/rpm-build/$ARCH
cache_reuse "$CACHE/rpm-build" "$TOP"
rm -rf "$TOP/SOURCES" "$TOP/RPMS" "$TOP/SRPMS" "$TOP/BUILDROOT"
mkdir -p "$TOP/SOURCES" "$TOP/SPECS" "$TOP/BUILD"
git ls-files -z --cached --others --exclude-standard \
  | xargs -0 -r sh -c 'for f; do [ -e "$f" ] && printf "%s\0" "$f"; done' sh \
  | tar --null -T - --transform "s|^|rustica-$VERSION/|" -cf - | gzip -1n >"$TOP/SOURCES/rustica-$VERSION.tar.gz"
ln -sf "$(scripts/cargo-vendor.sh --tarball)" "$TOP/SOURCES/"
cp "$SPEC" "$TOP/SPECS/"

# As RHEL's and SUSE's build systems do: the packager set at build time
# (not in the spec), the doc and license directories named after the
# package alone (RHEL's layout; SLES puts docs in /usr/share/doc/packages),
# and man pages compressed by brp-compress, which Debian's rpm runs under
# /bin/sh although it needs bash (`read -d`).
# The crates from the vendor directory the Debian build uses, and cargo's
# target directory shared with the Debian build of the same architecture:
# compiled crates are reused (only rustica's own crates build again), which
# halves a cold package stage.
case "$ARCH" in x86_64) DEB_ARCH=amd64 ;; s390x) DEB_ARCH=s390x ;; esac
VENDOR=$(scripts/cargo-vendor.sh) || die "the crates could not be vendored"
DEFS=(--define "_topdir $TOP" --define "rustica_cargo_target_dir $CACHE/deb-build/$DEB_ARCH/cargo-target"
      --define "rustica_vendor_dir $VENDOR"
      --define "packager rustica maintainers <maintainers@users.noreply.a-seed-80ea45b3.example>"
      --define "_docdir_fmt %%{NAME}"
      --define "__brp_compress bash %{_rpmconfigdir}/brp-compress %{?_prefix}")
if [ "$ARCH" = s390x ]; then
  LANE=${S390X_LANE_DIR:-$REPO/target/s390x-lane}
  SYSROOT=$(S390X_LANE_DIR=$LANE scripts/s390x-lane.sh --sysroot-only) \
    || die "the s390x sysroot could not be set up (scripts/s390x-lane.sh --sysroot-only)"
  DEFS+=(--target s390x --define "rustica_sysroot $SYSROOT"
         --define "__strip s390x-linux-gnu-strip" --define "__objdump s390x-linux-gnu-objdump")
fi
# openssl-sys's and rustica's build scripts rerun when CFLAGS or
# SOURCE_DATE_EPOCH change, and with them everything above them: in the
# shared target directory the RPM build sees what dpkg-buildpackage gives
# the Debian build (Debian's hardening flags for the one C file), so
# neither build undoes the other's work.
cache_reuse "$CACHE/deb-build" "$CACHE/deb-build/$DEB_ARCH" "$CACHE/deb-build/$DEB_ARCH/cargo-target"
DEB_SRC=$CACHE/deb-build/$DEB_ARCH/rustica-$(dpkg-parsechangelog -l debian/changelog -S Version)
mkdir -p "$DEB_SRC"
CFLAGS=$(cd "$DEB_SRC" && dpkg-architecture -a "$DEB_ARCH" -c dpkg-buildflags --get CFLAGS 2>/dev/null)
SOURCE_DATE_EPOCH=$(dpkg-parsechangelog -l debian/changelog -S Timestamp)
export CFLAGS SOURCE_DATE_EPOCH
# And OpenSSL's location as debian/rules gives it (not pkg-config, whose
# PKG_CONFIG_PATH rpmbuild sets and dpkg-buildpackage does not), for the
# build machine's own build too when cross-building.
export X86_64_UNKNOWN_LINUX_GNU_OPENSSL_LIB_DIR=/usr/lib/x86_64-linux-gnu
export X86_64_UNKNOWN_LINUX_GNU_OPENSSL_INCLUDE_DIR=/usr/include
say "rpmbuild -bb $SPEC for $ARCH (log: $TOP/build.log)"
nice -n 19 rpmbuild -bb --nodeps "${DEFS[@]}" "$TOP/SPECS/rustica.spec" >"$TOP/build.log" 2>&1 \
  || { tail -n 40 "$TOP/build.log" >&2; die "rpmbuild failed (whole log: $TOP/build.log)"; }
RPM=$(ls "$TOP"/RPMS/"$ARCH"/rustica-"$VERSION"-*."$ARCH".rpm | head -n1)
[ -f "$RPM" ] || die "no rpm after the build"
say "Requires: $(rpm -qp --requires "$RPM" 2>/dev/null | grep -v '^rpmlib(' | tr '\n' ' ')"

say "rpmlint $(rpmlint --version) on $(basename "$RPM") and the spec"
# packaging/rpm/rpmlint.toml filters what is not the spec's to fix, each
# with its reason; everything else rpmlint says is printed.
rpmlint -c packaging/rpm/rpmlint.toml "$RPM" "$SPEC" >"$TOP/rpmlint.log" 2>&1 || true
sed 's/^/package-rpm: rpmlint: /' "$TOP/rpmlint.log" >&2
summary=$(grep -E '[0-9]+ errors?, [0-9]+ warnings?' "$TOP/rpmlint.log" | tail -n1)
[ -n "$summary" ] || die "rpmlint printed no summary"
echo "$summary" | grep -E '(^| )0 errors' >/dev/null || fail "rpmlint reported errors: $summary"

mkdir -p target/rpm
cp "$RPM" target/rpm/
say "built target/rpm/$(basename "$RPM")"
echo "$REPO/target/rpm/$(basename "$RPM")"
