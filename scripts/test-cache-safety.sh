#!/usr/bin/env bash
# The build cache's rule (scripts/lib/common.sh's cache_dir and
# cache_reuse; docs/security.md, "What the build scripts trust"), with
# uid 65534 (nobody) as the other user:
#
#   scripts/test-cache-safety.sh
#
# Issue 60's finding first: a cache directory another user made, holding a
# fake completed OpenSSL build (a bin/openssl that says who ran it), is
# refused by scripts/openssl-build.sh (status 2) and nothing in it runs.
# Then each thing the rule judges: an entry, a file deep in the reused
# tree, a group-writable file, an ancestor others may write to, another
# user's symbolic link on the way, scripts/fuzz.sh's cargo-fuzz and
# scripts/lib/trixie-chroot.sh's chroot; and what it accepts: the same
# trees when they are root's alone (openssl-build.sh prints the cached
# prefix, the cached chroot is used), a sticky root-owned ancestor, the
# defaults (/var/cache/rustica-build for root, made 0755; for nobody
# $XDG_CACHE_HOME or ~/.cache, a relative XDG_CACHE_HOME ignored).
# Nothing is built or downloaded: every case ends at the check or at the
# cached fake.
#
# Needs root (to give files to uid 65534); as anyone else it skips, status
# 0, saying so. Status 1 when a case is not judged as it should be, 2 when
# it could not run. Takes about a second.
# shellcheck source-path=SCRIPTDIR source-path=.
. "$(dirname "$0")/lib/common.sh"
if [ "$(id -u)" != 0 ]; then
  echo "test-cache-safety: SKIPPED: needs root to give files to another user" >&2
  exit 0
fi
command -v setpriv >/dev/null || die "needs setpriv (util-linux)"
other=65534
base=$(mktemp -d /var/tmp/rustica-cache-test.XXXXXX) || die "mktemp failed"
trap 'rm -rf "$base"' EXIT
chmod 755 "$base"
cases=0

# expect RC WHAT CMD...: runs CMD (RUSTICA_CACHE as set by the caller) and
# requires status RC; with RC 2 also the refusal's wording.
expect() {
  local want=$1 what=$2 rc=0
  shift 2
  out=$("$@" 2>&1) || rc=$?
  if [ "$rc" != "$want" ] || { [ "$want" = 2 ] && ! grep -q "could not run: refusing" <<<"$out"; }; then
    printf '%s\n' "$out" | sed 's/^/  | /' >&2
    fail "$what: status $rc, expected $want"
  fi
  if grep -q "marker ran" <<<"$out"; then
    printf '%s\n' "$out" | sed 's/^/  | /' >&2
    fail "$what: the cached program ran"
  fi
  cases=$((cases + 1))
  say "ok: $what (status $rc)"
}

# A fake completed OpenSSL 3.0 build in cache $1: bin/openssl only says
# who ran it. Made by root; the cases hand parts of it to $other.
fake_openssl() { # CACHE
  local top=$1/openssl-3.0
  (umask 077 && mkdir -p "$1" && mkdir -p "$top/install/bin" "$top/src")
  printf '#!/bin/sh\necho "marker ran as $(id)" >&2\necho "OpenSSL 3.0.99 fake"\n' >"$top/install/bin/openssl"
  chmod 700 "$top/install/bin/openssl"
  echo "a fake build; tree format 2" >"$top/.complete"
}
build() { scripts/openssl-build.sh 3.0; }
# Runs the prefix openssl-build.sh prints, as a caller does.
build_and_run() { local p; p=$(build | tail -n 1) && "$p/bin/openssl" version; }

# 1. The finding: the whole cache is the other user's.
c=$base/finding
fake_openssl "$c"
chown -R "$other:$other" "$c"
RUSTICA_CACHE=$c expect 2 "a cache another user made (issue 60's finding)" build_and_run

# 2. The same tree, root's alone: reused, and the prefix printed.
c=$base/ok
fake_openssl "$c"
RUSTICA_CACHE=$c expect 0 "a cache of root's alone is reused" build
grep -qx "$c/openssl-3.0/install" <<<"$out" || fail "openssl-build.sh printed no prefix: $out"

# 3. Each part the rule judges, one at a time.
c=$base/entry
fake_openssl "$c"
chown "$other" "$c/openssl-3.0"
RUSTICA_CACHE=$c expect 2 "the reused entry is another user's" build

c=$base/deep
fake_openssl "$c"
chown "$other" "$c/openssl-3.0/install/bin/openssl"
RUSTICA_CACHE=$c expect 2 "a file deep in the reused tree is another user's" build_and_run

c=$base/groupw
fake_openssl "$c"
chmod 770 "$c/openssl-3.0/install/bin"
RUSTICA_CACHE=$c expect 2 "a directory in the reused tree is group-writable" build

c=$base/mode
fake_openssl "$c"
chmod 1777 "$c"
RUSTICA_CACHE=$c expect 2 "the cache itself is writable by others, even sticky" build

mkdir -m 777 "$base/open"
c=$base/open/cache
fake_openssl "$c"
chmod 777 "$base/open"
RUSTICA_CACHE=$c expect 2 "an ancestor others may write to without the sticky bit" build
chmod 1777 "$base/open"
RUSTICA_CACHE=$c expect 0 "a sticky root-owned ancestor (as /var/tmp)" build

mkdir -m 755 "$base/theirs"
c=$base/theirs/cache
fake_openssl "$c"
chown "$other" "$base/theirs"
RUSTICA_CACHE=$c expect 2 "an ancestor belongs to another user" build

ln -s ok "$base/link"
chown -h "$other" "$base/link"
RUSTICA_CACHE=$base/link expect 2 "another user's symbolic link on the way" build
chown -h 0 "$base/link"
RUSTICA_CACHE=$base/link expect 0 "root's symbolic link on the way" build

# 3b. A tree an older openssl-build.sh made (no format in .complete; it
# kept the tarball's 664 modes: CI's failure at 9e0bf19..3cc348c) is
# removed and built again, not refused. The build is stopped at its
# download (an unreachable mirror), after the removal.
c=$base/older
fake_openssl "$c"
echo "OpenSSL 3.0.20 (host), built in 146 s" >"$c/openssl-3.0/.complete"
touch "$c/openssl-3.0/src/NEWS.md" && chmod 664 "$c/openssl-3.0/src/NEWS.md"
rc=0; out=$(RUSTICA_CACHE=$c DEBIAN_MIRROR=http://127.0.0.1:9 build 2>&1) || rc=$?
grep -q "is an older build of this script" <<<"$out" && ! grep -q refusing <<<"$out" &&
  [ ! -e "$c/openssl-3.0/install/bin/openssl" ] ||
  { printf '%s\n' "$out" | sed 's/^/  | /' >&2; fail "an older tree of root's: not rebuilt (status $rc)"; }
cases=$((cases + 1))
say "ok: an older format of root's own tree is built again (stopped at the download, status $rc)"
# An older tree with nothing loose in it is reused as it is.
c=$base/older-clean
fake_openssl "$c"
echo "OpenSSL 3.0.20 (host), built in 146 s" >"$c/openssl-3.0/.complete"
RUSTICA_CACHE=$c expect 0 "an older tree of root's alone is reused" build
# The same older tree holding another user's file is not removed: refused.
c=$base/older-theirs
fake_openssl "$c"
echo "OpenSSL 3.0.20 (host), built in 146 s" >"$c/openssl-3.0/.complete"
touch "$c/openssl-3.0/src/NEWS.md" && chown "$other" "$c/openssl-3.0/src/NEWS.md"
RUSTICA_CACHE=$c expect 2 "an older tree holding another user's file" build_and_run
[ -e "$c/openssl-3.0/src/NEWS.md" ] || fail "the older tree holding another user's file was removed"

# 4. The other users of the cache.
c=$base/fuzz
(umask 077 && mkdir -p "$c/cargo-fuzz/bin")
printf '#!/bin/sh\necho "marker ran as $(id)" >&2\n' >"$c/cargo-fuzz/bin/cargo-fuzz"
chmod 755 "$c/cargo-fuzz/bin/cargo-fuzz"
chown "$other" "$c/cargo-fuzz/bin/cargo-fuzz"
# (refused before fuzz.sh reaches rustup or cargo)
RUSTICA_CACHE=$c expect 2 "fuzz.sh: another user's program in cargo-fuzz/bin" scripts/fuzz.sh --replay

c=$base/chroot
(umask 077 && mkdir -p "$c/trixie-chroot")
touch "$c/trixie-chroot/.complete"
chroot_ensure() { bash -c '. scripts/lib/common.sh; . scripts/lib/trixie-chroot.sh; trixie_chroot_ensure'; }
RUSTICA_CACHE=$c expect 0 "trixie-chroot.sh: root's cached chroot is used" chroot_ensure
chown "$other" "$c/trixie-chroot"
RUSTICA_CACHE=$c expect 2 "trixie-chroot.sh: another user's chroot" chroot_ensure

# 5. The defaults.
default=$(unset RUSTICA_CACHE; cache_dir; echo "$RUSTICA_CACHE")
[ "$default" = /var/cache/rustica-build ] || fail "root's default cache is $default, not /var/cache/rustica-build"
st=$(stat -c '%u %a' /var/cache/rustica-build)
case $st in "0 700" | "0 "[0-7][0-5][0-5]) ;; *) fail "root's default cache has owner and mode $st" ;; esac
cases=$((cases + 1))
say "ok: root's default is /var/cache/rustica-build (owner and mode $st)"

home=$base/home
mkdir -m 755 "$home"
chown "$other:$other" "$home"
as_other() { # XDG_CACHE_HOME
  setpriv --reuid "$other" --regid "$other" --clear-groups env -u RUSTICA_CACHE \
    HOME="$home" XDG_CACHE_HOME="$1" bash -c '. scripts/lib/common.sh; cache_dir; echo "$RUSTICA_CACHE"'
}
got=$(as_other "") || fail "nobody's default cache could not be made"
[ "$got" = "$home/.cache/rustica-build" ] || fail "nobody's default cache is $got"
got=$(as_other relative/dir) || fail "nobody's default cache (relative XDG_CACHE_HOME) could not be made"
[ "$got" = "$home/.cache/rustica-build" ] || fail "a relative XDG_CACHE_HOME was used: $got"
got=$(as_other "$home/xdg") || fail "nobody's cache under XDG_CACHE_HOME could not be made"
[ "$got" = "$home/xdg/rustica-build" ] || fail "XDG_CACHE_HOME was not used: $got"
st=$(stat -c '%u %a' "$home/xdg/rustica-build")
[ "$st" = "$other 755" ] || fail "nobody's new cache has owner and mode $st"
cases=$((cases + 1))
say "ok: nobody's default is \${XDG_CACHE_HOME:-~/.cache}/rustica-build, made $st"

say "passed: $cases cases"
