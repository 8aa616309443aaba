# shellcheck shell=bash
# Sourced by scripts/test-trixie.sh, scripts/coverage-trixie.sh,
# scripts/test-sshd-adapter.sh and scripts/lab-dnssec-trixie.sh: the Debian 13
# (trixie) chroot they use, made with debootstrap (minbase plus
# openssl) from Debian's archive and cached as $CHROOT
# ($RUSTICA_CACHE/trixie-chroot; the cache is scripts/lib/common.sh's
# cache_dir, /var/cache/rustica-build for root). Needs common.sh.
# A cached chroot is used only when cache_reuse accepts it and its
# .complete: the chroot itself and the way to it are root's alone (what is
# inside has the owners and modes debootstrap gave it).
#
#   trixie_chroot_ensure   makes $CHROOT unless a complete one is cached;
#                          returns 3 when debootstrap cannot reach the
#                          archive
#   trixie_chroot_or_skip NAME
#                          trixie_chroot_ensure, and when the archive is
#                          unreachable says "NAME: SKIPPED" and ends the
#                          sourcing script with status 0
#   trixie_coverage_chroot makes $COV_CHROOT ($CACHE/trixie-coverage-chroot),
#                          a copy of $CHROOT kept apart so that the programs
#                          installed there never reach the minimal chroot
#                          (call after trixie_chroot_or_skip)
#   in_cov_chroot SCRIPT [ARG...]
#                          runs SCRIPT with bash -eu as root in $COV_CHROOT,
#                          in a mount namespace of its own with /proc,
#                          /dev/pts, a /dev/shm and an empty /run mounted
#                          there only (what daemons need)
#   in_chroot SCRIPT       runs SCRIPT with /bin/sh -eu as root in $CHROOT,
#                          in a mount namespace of its own with /proc
#                          mounted there only, and an empty environment
#                          but PATH, HOME and LANG

cache_dir
CACHE=$RUSTICA_CACHE
CHROOT=$CACHE/trixie-chroot
COV_CHROOT=$CACHE/trixie-coverage-chroot
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}

# The rustica amd64 package the chroot scripts install: $deb as given, or
# this tree's version in target/deb, built by scripts/package.sh when it is
# not there. Sets deb to its absolute path.
rustica_amd64_deb() {
  if [ -z "${deb:-}" ]; then
    deb=target/deb/rustica_$(dpkg-parsechangelog -l debian/changelog -S Version)_amd64.deb
    if [ ! -f "$deb" ]; then
      say "no $deb: scripts/package.sh amd64"
      scripts/package.sh amd64 >&2 || die "scripts/package.sh amd64 failed"
    fi
  fi
  [ -f "$deb" ] || die "package not found: $deb"
  deb=$(realpath "$deb")
  [ "$(dpkg-deb -f "$deb" Architecture)" = amd64 ] || die "$deb is not an amd64 package"
}

trixie_chroot_ensure() {
  cache_reuse "$CHROOT" "$CHROOT/.complete" "$CHROOT.tmp"
  [ ! -f "$CHROOT/.complete" ] || return 0
  command -v debootstrap >/dev/null || scripts/setup.sh chroot
  command -v debootstrap >/dev/null || die "debootstrap is missing (scripts/setup.sh chroot installs it)"
  mkdir -p "$CACHE" || die "cannot make $CACHE"
  say "debootstrap trixie (minbase + openssl) from $MIRROR into $CHROOT"
  rm -rf "$CHROOT" "$CHROOT.tmp" || die "cannot remove an incomplete $CHROOT"
  if ! nice -n 19 debootstrap --variant=minbase --include=openssl trixie "$CHROOT.tmp" "$MIRROR" \
      >"$CACHE/trixie-debootstrap.log" 2>&1; then
    if grep -E "Failed getting release file|Couldn't download|Temporary failure resolving|Could not resolve" \
        "$CACHE/trixie-debootstrap.log" >/dev/null; then
      tail -n 3 "$CACHE/trixie-debootstrap.log" >&2
      rm -rf "$CHROOT.tmp"
      return 3
    fi
    tail -n 20 "$CACHE/trixie-debootstrap.log" >&2
    die "debootstrap failed (log: $CACHE/trixie-debootstrap.log)"
  fi
  # Explicit checks: callers test the return code, which turns off set -e here.
  mv "$CHROOT.tmp" "$CHROOT" || die "cannot move the chroot into $CHROOT"
  touch "$CHROOT/.complete" || die "cannot mark $CHROOT complete"
}

trixie_chroot_or_skip() { # NAME
  local rc=0
  trixie_chroot_ensure || rc=$?
  [ "$rc" = 0 ] && return 0
  [ "$rc" = 3 ] || exit "$rc"
  echo "$1: SKIPPED: debootstrap cannot reach $MIRROR (log: $CACHE/trixie-debootstrap.log)" >&2
  exit 0
}

# shellcheck disable=SC2016 # expanded by the inner shell
in_chroot() { # SCRIPT
  unshare --mount --propagation private sh -c '
    mount -t proc proc "$1/proc" && exec chroot "$1" /usr/bin/env -i \
      PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 /bin/sh -euc "$2"' \
    sh "$CHROOT" "$1"
}

trixie_coverage_chroot() {
  cache_reuse "$COV_CHROOT" "$COV_CHROOT/.complete" "$COV_CHROOT.tmp"
  if [ ! -f "$COV_CHROOT/.complete" ]; then
    say "copying $CHROOT to $COV_CHROOT"
    rm -rf "$COV_CHROOT" "$COV_CHROOT.tmp" || die "cannot remove an incomplete $COV_CHROOT"
    cp -a "$CHROOT" "$COV_CHROOT.tmp" || die "cannot copy $CHROOT"
    rm -f "$COV_CHROOT.tmp/.complete"
    mv "$COV_CHROOT.tmp" "$COV_CHROOT" || die "cannot move the copy into $COV_CHROOT"
    touch "$COV_CHROOT/.complete" || die "cannot mark $COV_CHROOT complete"
  fi
  # apt-get in the chroot resolves the archive's name with the host's resolver.
  cp /etc/resolv.conf "$COV_CHROOT/etc/resolv.conf"
}

# shellcheck disable=SC2016 # expanded by the inner shells
in_cov_chroot() { # SCRIPT [ARG...]
  unshare --mount --propagation private bash -c '
    mount -t proc proc "$1/proc" &&
    mkdir -p "$1/dev/pts" "$1/dev/shm" &&
    mount -t devpts -o newinstance,ptmxmode=0666 devpts "$1/dev/pts" &&
    mount -t tmpfs -o mode=1777 tmpfs "$1/dev/shm" &&
    mount -t tmpfs -o mode=755 tmpfs "$1/run" &&
    exec chroot "$1" /usr/bin/env -i \
      PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 /bin/bash -euc "$2" bash "${@:3}"' \
    bash "$COV_CHROOT" "$@"
}
