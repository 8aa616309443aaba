# shellcheck shell=bash
# Sourced by the bench scripts that record their tables as facts
# (BENCH_FACTS=FILE; workshop/scripts/comparison.py renders docs/performance.md's
# x86 card tables from them), right after scripts/lib/common.sh and
# before anything gives a variable its default: it defines functions
# only.
#
#   bench_command SCRIPT "VARIABLES" ARGS...
#       the command as given: each of VARIABLES that is set, then SCRIPT
#       and its arguments (quoted where empty or holding a space)
#   bench_fact FACTS KIND FIELDS...
#       one tab-separated line "KIND FIELDS...", appended to FACTS when
#       FACTS is not empty
#   bench_row FACTS ON_CARD CAPACITY_1 CAPACITY_2 SAMPLING CELLS...
#       one table row: Markdown on stdout (CELLS, the two capacity cells
#       when ON_CARD is not empty, SAMPLING), and a "row" fact with the
#       capacity cells always in their place (empty off the card), so
#       that workshop/scripts/comparison.py reads one layout

bench_command() {
  local command=$1 vars=$2 v arg
  shift 2
  for v in $vars; do
    [ -z "${!v:-}" ] || command="$v=${!v} $command"
  done
  for arg in "$@"; do
    case "$arg" in *" "* | "") arg="\"$arg\"" ;; esac
    command+=" $arg"
  done
  echo "$command"
}

bench_fact() {
  local facts=$1
  shift
  [ -z "$facts" ] || {
    printf '%s' "$1"
    shift
    printf '\t%s' "$@"
    echo
  } >>"$facts"
}

bench_row() {
  local facts=$1 on_card=$2 c1=$3 c2=$4 sampling=$5
  shift 5
  local shown=("$@")
  [ -z "$on_card" ] || shown+=("$c1" "$c2")
  shown+=("$sampling")
  printf '|'
  printf ' %s |' "${shown[@]}"
  echo
  bench_fact "$facts" row "$@" "$c1" "$c2" "$sampling"
}
