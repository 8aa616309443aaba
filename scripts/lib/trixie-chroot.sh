# shellcheck shell=bash
# Sourced by scripts/test-trixie.sh and scripts/coverage-trixie.sh: the
# Debian 13 (trixie) chroot both use, made with debootstrap (minbase plus
# openssl) from Debian's archive and cached as $CHROOT (default
# $RUSTICA_CACHE/trixie-chroot, RUSTICA_CACHE defaulting to
# /var/tmp/rustica-cache). Needs say and die from the sourcing script.
#
#   trixie_chroot_ensure   makes $CHROOT unless a complete one is cached;
#                          returns 3 when debootstrap cannot reach the
#                          archive
#   trixie_chroot_or_skip NAME
#                          trixie_chroot_ensure, and when the archive is
#                          unreachable says "NAME: SKIPPED" and ends the
#                          sourcing script with status 0
#   in_chroot SCRIPT       runs SCRIPT with /bin/sh -eu as root in $CHROOT,
#                          in a mount namespace of its own with /proc
#                          mounted there only, and an empty environment
#                          but PATH, HOME and LANG

CACHE=${RUSTICA_CACHE:-/var/tmp/rustica-cache}
CHROOT=$CACHE/trixie-chroot
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}

trixie_chroot_ensure() {
  [ ! -f "$CHROOT/.complete" ] || return 0
  command -v debootstrap >/dev/null || die "debootstrap is missing (scripts/setup.sh installs it)"
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
