#!/usr/bin/env bash
# A/B `openssl speed`: RSA sign/s and verify/s with only the default provider
# (A) and with rustica preferred through openssl.cnf (B), alternated A B A B
# so drift on a shared machine hits both; ratios are B/A per pair, then the
# median. Every B run must show up in rustica's counters.
#
# usage: scripts/bench-speed.sh [-s SECONDS] [-r ROUNDS] [-m MULTI] [SIZES...]
#   defaults: -s 3 -r 3, sizes 1024 2048 3072 4096 7680 15360
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=3 rounds=3 multi=1
while getopts "s:r:m:" opt; do
  case $opt in
    s) seconds=$OPTARG ;; r) rounds=$OPTARG ;; m) multi=$OPTARG ;;
    *) sed -n '2,9p' "$0"; exit 2 ;;
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

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
. scripts/openssl-cnf.sh
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

median() { sort -g | awk '{ a[NR] = $1 } END { if (NR % 2) print a[(NR+1)/2]; else printf "%.4f\n", (a[NR/2] + a[NR/2+1]) / 2 }'; }

echo "openssl speed A/B, ${seconds}s per run, $rounds rounds, multi=$multi, $(date -u +%F), $(nproc) cores, $(openssl version)"
printf "%-6s %12s %12s %7s %12s %12s %7s  %s\n" bits "A sign/s" "B sign/s" "B/A" "A verify/s" "B verify/s" "B/A" "rustica signs"
status=0
for bits in "${sizes[@]}"; do
  : >"$work/pairs"
  counted=0
  for _ in $(seq "$rounds"); do
    read -r as av <<<"$(speed "$work/a.cnf" "$bits")"
    before=$(signs)
    read -r bs bv <<<"$(speed "$work/b.cnf" "$bits")"
    after=$(signs)
    counted=$((counted + after - before))
    [ $((after - before)) -gt 0 ] || { echo "B run of rsa$bits was not counted by rustica" >&2; status=1; }
    echo "$as $bs $av $bv" >>"$work/pairs"
  done
  ma=$(awk '{print $1}' "$work/pairs" | median); mb=$(awk '{print $2}' "$work/pairs" | median)
  rs=$(awk '{printf "%.4f\n", $2 / $1}' "$work/pairs" | median)
  va=$(awk '{print $3}' "$work/pairs" | median); vb=$(awk '{print $4}' "$work/pairs" | median)
  rv=$(awk '{printf "%.4f\n", $4 / $3}' "$work/pairs" | median)
  printf "%-6s %12s %12s %7.3f %12s %12s %7.3f  %s\n" "$bits" "$ma" "$mb" "$rs" "$va" "$vb" "$rv" "$counted"
done
exit $status
