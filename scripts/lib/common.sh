# The prologue of the scripts in scripts/: sourced first, as
#
#   . "$(dirname "$0")/lib/common.sh"
#
# It sets the shell options, sets `repo` to the repository's top directory
# and changes to it (`script_path` is the script's own absolute path), and
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
set -euo pipefail
unset CDPATH
script_path=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$repo"
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
