#!/usr/bin/env bash
# The crates of Cargo.lock, vendored for offline package builds (what
# Debian's Rust packaging and Fedora's vendored Rust packages do with a
# vendor tarball): `cargo vendor --locked` into a cache directory named
# after Cargo.lock's hash, made once and reused. The package builds
# (debian/rules, packaging/rpm/rustica.spec) then run cargo --frozen
# against it and never reach the network. Nothing is committed.
#
#   scripts/cargo-vendor.sh              # prints the vendor directory
#   scripts/cargo-vendor.sh --tarball    # prints a .tar.gz holding vendor/ (the RPM's Source1)
# shellcheck source-path=SCRIPTDIR source-path=.
. "$(dirname "$0")/lib/common.sh"
cache_dir
CACHE=$RUSTICA_CACHE/cargo-vendor
LOCK_HASH=$(sha256sum Cargo.lock | cut -c1-16)
DIR=$CACHE/$LOCK_HASH/vendor
# The vendored crates' build scripts run in the package builds.
cache_reuse "$CACHE" "$CACHE/$LOCK_HASH" "$DIR" "$DIR/.complete" "$DIR.tmp" "$CACHE/$LOCK_HASH"/*.tar.gz*
if [ ! -f "$DIR/.complete" ]; then
  say "vendoring Cargo.lock's crates into $DIR"
  rm -rf "$DIR" "$DIR.tmp"
  mkdir -p "$(dirname "$DIR")"
  cargo vendor --locked --versioned-dirs -q "$DIR.tmp" >/dev/null \
    || die "cargo vendor failed (crates.io unreachable and crates not in cargo's cache?)"
  mv "$DIR.tmp" "$DIR"
  touch "$DIR/.complete"
fi
if [ "${1:-}" = --tarball ]; then
  VERSION=$(sed -n '/^\[workspace.package\]/,/^\[/s/^version = "\(.*\)"/\1/p' Cargo.toml)
  TARBALL=$CACHE/$LOCK_HASH/rustica-$VERSION-vendor.tar.gz
  if [ ! -f "$TARBALL" ]; then
    say "packing $TARBALL"
    tar -C "$(dirname "$DIR")" --exclude=vendor/.complete --sort=name --owner=0 --group=0 \
      -cf - vendor | gzip -1n >"$TARBALL.tmp"
    mv "$TARBALL.tmp" "$TARBALL"
  fi
  echo "$TARBALL"
else
  echo "$DIR"
fi
