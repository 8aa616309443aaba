#!/usr/bin/env bash
# BIND's `dnssec-signzone -n 1` A/B over a lab's own zone and keys, for
# as many rounds as an interval narrower than the lab's ±5 % needs (the
# lab stops sampling a cell at ±5 %). Each round signs the zone once per
# side, A and B alternating first (A B, then B A), under the lab's
# openssl-A.cnf and openssl-B.cnf; the figure is RRSIGs per wall second
# of the whole process, as the lab's "-n 1 sign per core" column. Prints
# B/A with the lab's 95 % interval and verdict (`rustica compare`, asked
# for ±2 %), and fails unless rustica counted every one of B's
# signatures. A benchmark, not a test: run it on an otherwise idle
# machine (docs/performance.md, "DNSSEC").
#
# Usage: workshop/scripts/bench-dnssec.sh [-r ROUNDS] LAB_DIR [BITS]
#   LAB_DIR: the --out of a `rustica lab` run that signed at BITS (default
#   1024), e.g. `rustica lab --sizes 1024 --dnssec-names 20000 --skip
#   newkey,tls,speed,multi,load-cost --out DIR`; 30 rounds by default.
# shellcheck source-path=SCRIPTDIR source-path=.
. "$(dirname "$0")/../../scripts/lib/common.sh"
. scripts/lib/bench-stats.sh
rounds=30
while getopts "r:" opt; do
  case $opt in
    r) rounds=$OPTARG ;;
    *) usage >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
[ $# -ge 1 ] || { usage >&2; exit 2; }
lab=$(realpath "$1") bits=${2:-1024}
zone_dir=$lab/dnssec-$bits
[ -f "$zone_dir/zone.db" ] || die "$zone_dir/zone.db is missing: not a lab that signed at $bits bits"
command -v dnssec-signzone >/dev/null || die "dnssec-signzone is missing (scripts/setup.sh lab installs BIND's tools)"
[ -x target/release/rustica ] || scripts/build.sh >/dev/null
bench_rustica=target/release/rustica
BENCH_TARGET_PCT=2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export RUSTICA_STATS_PATH=$work/stats
# The lab's validity window: from an hour ago to 30 days on.
start=$(date -u -d '-1 hour' +%Y%m%d%H%M%S)
end=$(date -u -d '+30 days' +%Y%m%d%H%M%S)
# sign SIDE -> RRSIGs per wall second of one dnssec-signzone process (B's
# RRSIGs also go to $work/b-signatures: sign runs in a subshell).
sign() {
  local t0 t1 n
  t0=$(date +%s.%N)
  OPENSSL_CONF=$lab/openssl-$1.cnf dnssec-signzone -O full -P -n 1 -o lab.example \
    -s "$start" -e "$end" -d "$work" -K "$zone_dir" -f "$work/signed-$1.db" \
    "$zone_dir/zone.db" >/dev/null 2>"$work/signzone.log" \
    || { cat "$work/signzone.log" >&2; fail "dnssec-signzone failed on side $1"; }
  t1=$(date +%s.%N)
  # RRSIG records only (type bitmaps of NSEC records name RRSIG too).
  n=$(awk '$4 == "RRSIG" || $3 == "RRSIG"' "$work/signed-$1.db" | wc -l)
  [ "$1" != B ] || echo "$n" >>"$work/b-signatures"
  awk -v n="$n" -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f\n", n / (b - a) }'
}

say "$rounds rounds of dnssec-signzone -n 1 at $bits bits, A and B alternating first"
for i in $(seq "$rounds"); do
  if [ $((i % 2)) = 1 ]; then a=$(sign A); b=$(sign B); else b=$(sign B); a=$(sign A); fi
  echo "$a $b" >>"$work/pairs"
done
echo "| bits | rounds | A RRSIG/s (median) | B RRSIG/s (median) | B/A [95 %] |"
echo "|---:|---:|---:|---:|---|"
echo "| $bits | $rounds | $(cut -d' ' -f1 "$work/pairs" | bench_median) | $(cut -d' ' -f2 "$work/pairs" | bench_median) | $(bench_cell <"$work/pairs") |"
counted=$("$bench_rustica" stats --json 2>/dev/null \
  | python3 -c "import json,sys; print(json.load(sys.stdin)['ops']['sign']['by_bits'].get('$bits', 0))") \
  || die "could not read rustica's counters"
signatures=$(awk '{ s += $1 } END { print s }' "$work/b-signatures")
[ "$counted" = "$signatures" ] || fail "rustica counted $counted signatures at $bits bits, B made $signatures"
say "rustica counted every one of B's $signatures signatures"
