# Sourced by the bench scripts: the lab's sampling rule and B/A statistics
# (docs/lab.md, "Intervals and verdicts") for samples a script takes, so
# every ratio a bench prints carries its 95 % interval and verdict.
#
# Sampling: at least BENCH_MIN_ROUNDS rounds (default 6: fewer pairs allow
# no 95 % interval), then more until every column's interval is within
# ±BENCH_TARGET_PCT (default 5) or the row has spent BENCH_BUDGET_S seconds
# (default 60), and at most BENCH_MAX_ROUNDS (default 30). The scripts' -r
# option sets the minimum.
#
# Needs $bench_rustica: the rustica command (`rustica compare`).

BENCH_MIN_ROUNDS=${BENCH_MIN_ROUNDS:-6}
BENCH_TARGET_PCT=${BENCH_TARGET_PCT:-5}
BENCH_BUDGET_S=${BENCH_BUDGET_S:-60}
BENCH_MAX_ROUNDS=${BENCH_MAX_ROUNDS:-30}
[ "$BENCH_MIN_ROUNDS" -ge 6 ] || BENCH_MIN_ROUNDS=6

# bench_median < numbers: their median (the mean of the middle two for an
# even count), as the bench tables' "median (min-max)" cells give it.
bench_median() {
  sort -g | awk '{ v[NR] = $1 } END { if (NR) print NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# bench_compare FLAGS... < pairs: "ratio<TAB>[lo–hi]<TAB>verdict" (or
# "-<TAB>-<TAB>not enough samples to tell ..."). FLAGS go to rustica
# compare (--lower-is-better, --unpaired).
bench_compare() {
  "$bench_rustica" compare --target "$BENCH_TARGET_PCT" "$@"
}

# bench_cell FLAGS... < pairs: "ratio [lo–hi], verdict" for a table cell.
bench_cell() {
  bench_compare "$@" | awk -F '\t' '$1 == "-" { print $3; next } { printf "%s %s: %s\n", $1, $2, $3 }'
}

# bench_clear FLAGS... < pairs: true when the interval is within the target.
bench_clear() {
  bench_compare --json "$@" | grep -q '"target_met":true'
}

# bench_more ROUND ROW_START PAIRS_SPEC...: true while another round is
# due. Each PAIRS_SPEC is "FILE" or "FILE:FLAG,FLAG" (for example
# "$work/verify:--lower-is-better"); a file holds one "a b" pair a line.
bench_more() {
  local round=$1 started=$2 spec file flags
  shift 2
  [ "$round" -lt "$BENCH_MIN_ROUNDS" ] && return 0
  [ "$round" -ge "$BENCH_MAX_ROUNDS" ] && return 1
  [ $((SECONDS - started)) -ge "$BENCH_BUDGET_S" ] && return 1
  for spec in "$@"; do
    file=${spec%%:*}
    flags=()
    [ "$spec" != "$file" ] && IFS=, read -r -a flags <<<"${spec#*:}"
    bench_clear "${flags[@]}" <"$file" || return 0
  done
  return 1
}

# bench_sampling ROUNDS ROW_START: how the row's sampling ended.
bench_sampling() {
  if [ $((SECONDS - $2)) -ge "$BENCH_BUDGET_S" ] || [ "$1" -ge "$BENCH_MAX_ROUNDS" ]; then
    echo "$1 rounds, budget spent"
  else
    echo "$1 rounds, target met"
  fi
}

# bench_busy_median FILE: the median of a side's card capacity used (one
# fraction a line, scripts/lib/card.sh's card_busy), three decimals;
# nothing for an empty or missing file.
bench_busy_median() {
  [ ! -s "$1" ] || bench_median <"$1" | xargs printf '%.3f'
}
