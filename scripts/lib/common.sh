# The prologue of the scripts in scripts/: sourced first, as
#
#   . "$(dirname "$0")/lib/common.sh"
#
# It sets the shell options, sets `repo` to the repository's top directory
# and changes to it (`script_path` is the script's own absolute path), puts
# rustup's ~/.cargo/bin on PATH when it holds cargo and PATH lacks it, and
# defines the four functions every script reports with. One meaning each,
# so that an exit status tells CI what happened:
#
#   say MSG     a progress line on standard error: "NAME: MSG"
#   fail MSG    a check failed:    "NAME: FAILED: MSG", exit status 1
#   die MSG     could not run:     "NAME: could not run: MSG", exit status 2
#               (no root, a missing tool, a download, a build or a set-up
#               step that did not work: nothing was checked)
#   usage       prints the script's header comment from its "# Usage" line
#               to the header's end (the whole header when it has none),
#               without the lines that direct shellcheck
#
# NAME is $say_as, the script's file name without .sh unless the script
# sets it (e.g. say_as="card[$RELEASE]"). With say_clock=1 every line also
# carries the seconds since the script started: "NAME: [12s] MSG".
#
# The build cache (OpenSSL releases, cargo-fuzz, the Debian 13 chroot, the
# vendored crates, the package builds): what is reused from it is run, by
# root too, so it is a directory nobody else can have made or changed
# (docs/security.md, "What the build scripts trust"):
#
#   cache_dir           sets and exports RUSTICA_CACHE to the cache, made
#                       (mode 0755) when missing: $RUSTICA_CACHE if set, else
#                       /var/cache/rustica-build for root and
#                       ${XDG_CACHE_HOME:-$HOME/.cache}/rustica-build for
#                       anyone else. Dies (status 2) unless the directory is
#                       the effective user's and nobody else may write to it,
#                       and every directory and symbolic link on the way
#                       belongs to that user or root, with a directory others
#                       may write to only if sticky (harness/src/safe_fs.rs's
#                       rule).
#   cache_reuse [-r] PATH...
#                       before reusing PATH from the cache: dies (status 2)
#                       unless each PATH that exists, and the way to it, is
#                       trusted as above, PATH is the effective user's and
#                       nobody else may write to it; with -r the same for
#                       everything below PATH (symbolic links there: their
#                       owner only).
set -euo pipefail
unset CDPATH
script_path=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$repo"
# Rust installed by rustup (scripts/setup.sh) lives in ~/.cargo/bin, which a
# shell started before the installation does not have on PATH: put it first,
# as rustup's own ~/.cargo/env does, so that every script finds cargo.
cargo_bin=${CARGO_HOME:-$HOME/.cargo}/bin
case ":$PATH:" in
  *":$cargo_bin:"*) ;;
  *) if [ -x "$cargo_bin/cargo" ]; then PATH=$cargo_bin:$PATH; export PATH; fi ;;
esac
say_as=$(basename "$0" .sh)
say_clock=0
START=${START:-$SECONDS}

say() {
  if [ "$say_clock" = 1 ]; then
    echo "$say_as: [$((SECONDS - START))s] $*" >&2
  else
    echo "$say_as: $*" >&2
  fi
}
fail() { say "FAILED: $*"; exit 1; }
die() { say "could not run: $*"; exit 2; }
usage() {
  awk 'NR == 1 { next }
       !/^#/ { exit }
       /^# shellcheck / { next }
       /^# [Uu]sage/ { from = 1 }
       { text[NR] = $0; if (from && !start) start = NR }
       END { for (i = (start ? start : 2); i in text; i++) { sub(/^# ?/, "", text[i]); print text[i] } }' "$script_path"
}

# The cache's rule, as harness/src/safe_fs.rs applies it, in shell.
_cache_euid=$(id -u)

# A directory on the way: the effective user's or root's; one that its
# group or others may write to only with the sticky bit. Sets _cache_why.
_cache_judge_dir() { # PATH UID MODE(octal)
  if [ "$2" != 0 ] && [ "$2" != "$_cache_euid" ]; then
    _cache_why="$1 (a directory) belongs to uid $2, neither to you (uid $_cache_euid) nor to root"
    return 1
  fi
  if (( (8#$3 & 8#022) != 0 && (8#$3 & 8#1000) == 0 )); then
    _cache_why="$1 is a directory other users may write to (mode $3) without the sticky bit"
    return 1
  fi
}

# Follows absolute PATH one component at a time, judging every directory
# reached (the last one too) and the owner of every symbolic link met, as
# safe_fs's resolve() does. Sets _cache_real (the name with no link left)
# and _cache_stat ("UID MODE TYPE" of what it names), or _cache_why.
_cache_links=0
_cache_resolve() { # PATH
  local path=$1 cur=/ comp next st uid mode type target
  local -a comps
  case $path in /*) ;; *) _cache_why="$path: not an absolute path"; return 1 ;; esac
  case $path in *$'\n'*) _cache_why="a path with a newline in it"; return 1 ;; esac
  st=$(stat -c '%u %a %F' -- /) || { _cache_why="cannot look at /"; return 1; }
  read -r uid mode type <<<"$st"
  _cache_judge_dir / "$uid" "$mode" || return 1
  IFS=/ read -r -a comps <<<"$path"
  for comp in "${comps[@]}"; do
    case $comp in
      '' | .) continue ;;
      ..)
        cur=$(dirname -- "$cur")
        st=$(stat -c '%u %a %F' -- "$cur") || { _cache_why="cannot look at $cur"; return 1; }
        continue
        ;;
    esac
    [ "${st#* * }" = directory ] || { _cache_why="$cur: not a directory"; return 1; }
    next=${cur%/}/$comp
    st=$(stat -c '%u %a %F' -- "$next" 2>/dev/null) || { _cache_why="cannot look at $next"; return 1; }
    read -r uid mode type <<<"$st"
    if [ "$type" = "symbolic link" ]; then
      if [ "$uid" != 0 ] && [ "$uid" != "$_cache_euid" ]; then
        _cache_why="$next (a symbolic link) belongs to uid $uid, neither to you (uid $_cache_euid) nor to root"
        return 1
      fi
      _cache_links=$((_cache_links + 1))
      [ "$_cache_links" -le 16 ] || { _cache_why="$path: too many symbolic links"; return 1; }
      target=$(readlink -- "$next") || { _cache_why="cannot read the link $next"; return 1; }
      case $target in /*) ;; *) target=${cur%/}/$target ;; esac
      _cache_resolve "$target" || return 1
      cur=$_cache_real
      st=$_cache_stat
      read -r uid mode type <<<"$st"
    else
      cur=$next
    fi
    if [ "$type" = directory ]; then
      _cache_judge_dir "$cur" "$uid" "$mode" || return 1
    fi
  done
  _cache_real=$cur
  _cache_stat=$st
}

# Dies unless PATH is trusted on the way and is the effective user's and
# writable by that user alone. Sets _cache_real.
_cache_own() { # PATH WHAT
  local uid mode type
  _cache_links=0
  _cache_resolve "$1" || _cache_refuse "$2 $1: $_cache_why"
  read -r uid mode type <<<"$_cache_stat"
  [ "$uid" = "$_cache_euid" ] ||
    _cache_refuse "$2 $_cache_real: it ($type) belongs to uid $uid, not to you (uid $_cache_euid)"
  (( (8#$mode & 8#022) == 0 )) ||
    _cache_refuse "$2 $_cache_real: it ($type) may be written by other users (mode $mode)"
}

_cache_refuse() { # WHY
  die "refusing $1. Whoever can change it chooses what these scripts build with and run; remove it, or set RUSTICA_CACHE to a directory of your own (docs/security.md)"
}

cache_dir() {
  local dir=${RUSTICA_CACHE:-}
  if [ -z "$dir" ]; then
    if [ "$_cache_euid" = 0 ]; then
      dir=/var/cache/rustica-build
    else
      local base=${XDG_CACHE_HOME:-}
      # The XDG rule: a relative XDG_CACHE_HOME is ignored.
      case $base in /*) ;; *) base=${HOME:?HOME is not set}/.cache ;; esac
      dir=$base/rustica-build
    fi
  fi
  case $dir in /*) ;; *) die "RUSTICA_CACHE must be an absolute path, not '$dir'" ;; esac
  if [ ! -e "$dir" ] && [ ! -L "$dir" ]; then
    (umask 022 && mkdir -p -- "$dir") || die "cannot make the build cache $dir"
  fi
  _cache_own "$dir" "the build cache"
  RUSTICA_CACHE=$_cache_real
  export RUSTICA_CACHE
}

cache_reuse() { # [-r] PATH...
  local deep=0 p bad
  [ "${1:-}" != -r ] || { deep=1; shift; }
  for p in "$@"; do
    [ -e "$p" ] || [ -L "$p" ] || continue
    _cache_own "$p" "the cached"
    [ "$deep" = 1 ] || continue
    bad=$(find "$_cache_real" -mindepth 1 \( ! -user "$_cache_euid" -o ! -type l -perm /022 \) \
      -printf '%p (uid %U, mode %m)\n' -quit) || _cache_refuse "the cached $_cache_real: cannot read all of it"
    [ -z "$bad" ] || _cache_refuse "the cached $_cache_real: $bad is not yours alone"
  done
}
