#!/usr/bin/env bash
# A/B `openssl speed`: RSA sign/s and verify/s with only the default provider
# (A) and with rustica preferred through openssl.cnf (B), alternated A B A B
# so drift on a shared machine hits both. Each B/A is the Hodges-Lehmann
# estimate over the pairs with its 95 % interval and verdict (`rustica
# compare`, scripts/lib/bench-stats.sh): at least ROUNDS pairs, more until both
# intervals are within ±5 % or the size has had 60 s (BENCH_BUDGET_S).
# Every B run must show up in rustica's counters.
#
# usage: workshop/scripts/bench-speed.sh [-s SECONDS] [-r ROUNDS] [-m MULTI] [SIZES...]
#   defaults: -s 3 -r 6 (the least that allows an interval), sizes 1024
#   2048 3072 4096 7680 15360
# shellcheck source-path=SCRIPTDIR source-path=.
. "$(dirname "$0")/../../scripts/lib/common.sh"
seconds=3 rounds=6 multi=1
while getopts "s:r:m:" opt; do
  case $opt in
    s) seconds=$OPTARG ;; r) rounds=$OPTARG ;; m) multi=$OPTARG ;;
    *) usage >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
sizes=("${@:-1024 2048 3072 4096 7680 15360}")
read -r -a sizes <<<"${sizes[*]}"

if [ -z "${RUSTICA_MODULE:-}" ]; then
  scripts/build.sh >/dev/null
  RUSTICA_MODULE=$(pwd)/target/release/rustica.so
fi
rustica=$(dirname "$RUSTICA_MODULE")/rustica
[ -x "$rustica" ] || rustica=$(pwd)/target/release/rustica
bench_rustica=$rustica
BENCH_MIN_ROUNDS=$rounds
. scripts/lib/bench-stats.sh

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
. scripts/lib/openssl-cnf.sh
stock_conf "$work/a.cnf"
rustica_conf "$work/b.cnf" "$RUSTICA_MODULE"
export RUSTICA_STATS_PATH="$work/stats"

multi_args=()
[ "$multi" -gt 1 ] && multi_args=(-multi "$multi")

# Prints "sign/s verify/s" from the last `rsa N bits` line of openssl speed:
# the first two rates after the per-operation times (3.0 prints sign and
# verify; 3.5 and later add encrypt and decrypt columns after them).
speed() {
  OPENSSL_CONF="$1" openssl speed -seconds "$seconds" "${multi_args[@]}" "rsa$2" 2>/dev/null |
    awk -v b="$2" '$1 == "rsa" && $2 == b && $3 == "bits" {
      i = 4; while (i <= NF && $i ~ /s$/) i++; s = $i; v = $(i + 1)
    } END { print s, v }'
}

# Signatures rustica completed (libica, software or fallback), from its counters.
signs() {
  "$rustica" stats --json | grep -o '"sign": {[^}]*' | grep -oE '"(libica|software|fallback)": [0-9]+' |
    awk '{ s += $2 } END { print s + 0 }'
}

echo "openssl speed A/B, ${seconds}s per run, at least $BENCH_MIN_ROUNDS rounds (until ±$BENCH_TARGET_PCT % or ${BENCH_BUDGET_S}s a size), multi=$multi, $(date -u +%F), $(nproc) cores, $(openssl version)"
echo
echo "| bits | A sign/s | B sign/s | sign B/A [95 % interval]: verdict | A verify/s | B verify/s | verify B/A [95 % interval]: verdict | sampling | rustica signs |"
echo "|---:|---:|---:|---|---:|---:|---|---|---:|"
median() { sort -g | awk '{ a[NR] = $1 } END { if (NR % 2) print a[(NR+1)/2]; else printf "%.0f\n", (a[NR/2] + a[NR/2+1]) / 2 }'; }
status=0
for bits in "${sizes[@]}"; do
  : >"$work/sign" && : >"$work/verify"
  counted=0 round=0 row_start=$SECONDS
  while bench_more "$round" "$row_start" "$work/sign" "$work/verify"; do
    round=$((round + 1))
    read -r as av <<<"$(speed "$work/a.cnf" "$bits")"
    before=$(signs)
    read -r bs bv <<<"$(speed "$work/b.cnf" "$bits")"
    after=$(signs)
    counted=$((counted + after - before))
    [ $((after - before)) -gt 0 ] || { echo "B run of rsa$bits was not counted by rustica" >&2; status=1; }
    echo "$as $bs" >>"$work/sign"
    echo "$av $bv" >>"$work/verify"
  done
  col() { awk "{print \$$2}" "$work/$1" | median; }
  echo "| $bits | $(col sign 1) | $(col sign 2) | $(bench_cell <"$work/sign") | $(col verify 1) | $(col verify 2) | $(bench_cell <"$work/verify") | $(bench_sampling "$round" "$row_start") | $counted |"
done
exit $status
