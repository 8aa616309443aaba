#!/usr/bin/env bash
# Builds rustica's Debian package for Debian 12 (bookworm):
#
#   scripts/package.sh [amd64|s390x]     -> target/deb/rustica_<version>_<arch>.deb
#
# The package holds the provider module in OpenSSL's modules directory, the
# `rustica` command, its manual pages rustica(1) (generated from the
# command's own --help by `rustica man`) and rustica-provider(7)
# (docs/man/rustica-provider.7), bash completion (`rustica completions
# bash`), an example openssl.cnf and the copyright file. Its maintainer
# scripts (packaging/debian/) never edit openssl.cnf: postinst prints how to
# enable rustica with `rustica config`; postrm warns loudly when a
# configuration still loads the removed module.
#
# s390x is cross-built as scripts/s390x-lane.sh does, against the lane's
# sysroot of Debian's s390x packages (`s390x-lane.sh --sysroot-only` sets it
# up, or reuses it, under target/s390x-lane).
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$(pwd)
ARCH=${1:-amd64}
say() { echo "package: $*" >&2; }
die() { say "FAILED: $*"; exit 1; }

for tool in dpkg-deb gzip; do
  command -v "$tool" >/dev/null || die "$tool is missing (Debian: apt-get install dpkg gzip)"
done
VERSION=$(sed -n '/^\[workspace.package\]/,/^\[/s/^version = "\(.*\)"/\1/p' Cargo.toml)
[ -n "$VERSION" ] || die "no version in Cargo.toml's [workspace.package]"

# The host's `rustica` writes the manual page and the completion script
# (text, the same for every architecture).
say "building the host's rustica command"
cargo build -q --release -p rustica-harness || die "host build failed"
HOST_RUSTICA=$REPO/target/release/rustica

case "$ARCH" in
  amd64)
    MULTIARCH=x86_64-linux-gnu
    say "building rustica (release, amd64)"
    cargo build -q --release -p rustica --lib || die "build failed"
    BUILT=$REPO/target/release
    STRIP=strip
    OBJDUMP=objdump
    LIBCRYPTO=/usr/lib/$MULTIARCH/libcrypto.so.3
    ;;
  s390x)
    MULTIARCH=s390x-linux-gnu
    TARGET=s390x-unknown-linux-gnu
    LANE=${S390X_LANE_DIR:-$REPO/target/s390x-lane}
    SYSROOT=$(S390X_LANE_DIR=$LANE scripts/s390x-lane.sh --sysroot-only) \
      || die "the s390x sysroot could not be set up (scripts/s390x-lane.sh --sysroot-only)"
    LIBDIR=$SYSROOT/usr/lib/$MULTIARCH
    say "cross-building rustica (release, s390x) against $SYSROOT"
    # The same cross settings as scripts/s390x-lane.sh's build step.
    export CARGO_TARGET_S390X_UNKNOWN_LINUX_GNU_LINKER=s390x-linux-gnu-gcc
    export CARGO_TARGET_S390X_UNKNOWN_LINUX_GNU_RUSTFLAGS="-C link-arg=--sysroot=$SYSROOT"
    export CC_s390x_unknown_linux_gnu=s390x-linux-gnu-gcc
    export CFLAGS_s390x_unknown_linux_gnu="--sysroot=$SYSROOT"
    export RUSTICA_SYSROOT=$SYSROOT
    for what in "-p rustica --lib" "-p rustica-harness --bin rustica"; do
      # shellcheck disable=SC2086 # $what is two words on purpose
      OPENSSL_LIB_DIR=$LIBDIR OPENSSL_INCLUDE_DIR=$SYSROOT/usr/include \
        cargo build -q --release --target "$TARGET" --target-dir "$LANE/target" $what \
        || die "cross build failed ($what)"
    done
    BUILT=$LANE/target/$TARGET/release
    STRIP=s390x-linux-gnu-strip
    OBJDUMP=s390x-linux-gnu-objdump
    LIBCRYPTO=$LIBDIR/libcrypto.so.3
    ;;
  *) die "usage: $0 [amd64|s390x]" ;;
esac
[ "$ARCH" = amd64 ] && BUILT_RUSTICA=$HOST_RUSTICA || BUILT_RUSTICA=$BUILT/rustica
for f in "$BUILT/librustica.so" "$BUILT_RUSTICA"; do
  [ -f "$f" ] || die "no $f after the build"
done

# OpenSSL's modules directory on the target: where Debian 12's libcrypto
# (the one the package depends on) looks; checked against the library.
MODULES_DIR=/usr/lib/$MULTIARCH/ossl-modules
grep -aqF "$MODULES_DIR" "$LIBCRYPTO" \
  || die "$LIBCRYPTO does not name $MODULES_DIR as its modules directory"

STAGE=$REPO/target/deb/stage-$ARCH
DEB=$REPO/target/deb/rustica_${VERSION}_${ARCH}.deb
rm -rf "$STAGE"
install -d "$STAGE/DEBIAN" "$STAGE$MODULES_DIR" "$STAGE/usr/bin" \
  "$STAGE/usr/share/man/man1" "$STAGE/usr/share/man/man7" \
  "$STAGE/usr/share/bash-completion/completions" "$STAGE/usr/share/doc/rustica"

install -m 0644 "$BUILT/librustica.so" "$STAGE$MODULES_DIR/rustica.so"
install -m 0755 "$BUILT_RUSTICA" "$STAGE/usr/bin/rustica"
$STRIP --strip-unneeded "$STAGE$MODULES_DIR/rustica.so" "$STAGE/usr/bin/rustica"

"$HOST_RUSTICA" man >"$STAGE/usr/share/man/man1/rustica.1"
cp docs/man/rustica-provider.7 "$STAGE/usr/share/man/man7/rustica-provider.7"
gzip -9n "$STAGE/usr/share/man/man1/rustica.1" "$STAGE/usr/share/man/man7/rustica-provider.7"
"$HOST_RUSTICA" completions bash >"$STAGE/usr/share/bash-completion/completions/rustica"
sed "s|@MODULES_DIR@|$MODULES_DIR|g" packaging/openssl.cnf.example \
  >"$STAGE/usr/share/doc/rustica/openssl.cnf.example"
install -m 0644 packaging/copyright "$STAGE/usr/share/doc/rustica/copyright"

for script in postinst postrm; do
  sed "s|@MODULES_DIR@|$MODULES_DIR|g" "packaging/debian/$script" >"$STAGE/DEBIAN/$script"
  chmod 0755 "$STAGE/DEBIAN/$script"
done

# Depends: the newest glibc symbol version either binary needs.
GLIBC=$($OBJDUMP -T "$STAGE$MODULES_DIR/rustica.so" "$STAGE/usr/bin/rustica" \
  | grep -o 'GLIBC_[0-9][0-9.]*' | sed 's/GLIBC_//' | sort -uV | tail -n1)
[ -n "$GLIBC" ] || die "cannot tell which glibc the binaries need"
SIZE=$(du -sk --exclude=DEBIAN "$STAGE" | cut -f1)
sed -e "s|@VERSION@|$VERSION|" -e "s|@ARCH@|$ARCH|" -e "s|@GLIBC@|$GLIBC|" \
    -e "s|@SIZE@|$SIZE|" packaging/debian/control >"$STAGE/DEBIAN/control"
(cd "$STAGE" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | sort -z \
  | xargs -0 md5sum >DEBIAN/md5sums)
find "$STAGE" -type d -exec chmod 0755 {} +
find "$STAGE/usr/share" -type f -exec chmod 0644 {} +

mkdir -p "$(dirname "$DEB")"
dpkg-deb --root-owner-group -Zxz --build "$STAGE" "$DEB" >/dev/null || die "dpkg-deb failed"
rm -rf "$STAGE"
say "built $DEB"
echo "$DEB"
