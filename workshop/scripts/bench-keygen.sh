#!/usr/bin/env bash
# Key generation time, rustica against OpenSSL's default provider, in the
# same run: N keys per side and size, generated alternately (A B A B ...)
# by `openssl genpkey`, each a separate process. Prints per size the mean
# and median seconds per key of each side and B/A of the means (key
# generation time is random: compare means over many keys, not single runs).
# Every rustica key is counted by rustica (checked), and every key of
# either side passes the default provider's `openssl pkey -check`.
#
#   workshop/scripts/bench-keygen.sh [N] [SIZES]     # defaults: 30 "2048 3072"
#
# A benchmark, not a test: it asserts nothing about time.
# shellcheck source-path=SCRIPTDIR source-path=.
. "$(dirname "$0")/../../scripts/lib/common.sh"
n=${1:-30}
sizes=${2:-2048 3072}
scripts/build.sh >/dev/null
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
module_dir=$PWD/target/release
export RUSTICA_STATS_PATH=$dir/stats
export OPENSSL_CONF=/dev/null
rustica=$module_dir/rustica
bench_rustica=$rustica
. scripts/lib/bench-stats.sh
"$rustica" stats --reset >/dev/null
now() { date +%s.%N; }
gen() { # side bits out
  local side=$1 bits=$2 out=$3
  if [ "$side" = A ]; then
    openssl genpkey -algorithm RSA -pkeyopt "rsa_keygen_bits:$bits" -out "$out" 2>/dev/null
  else
    openssl genpkey -provider-path "$module_dir" -provider rustica -provider default \
      -propquery '?provider=rustica' -algorithm RSA -pkeyopt "rsa_keygen_bits:$bits" \
      -out "$out" 2>/dev/null
  fi
  openssl pkey -in "$out" -check -noout >/dev/null 2>&1 || fail "$side $bits-bit key fails pkey -check"
}
stats() { sort -g | awk -v n="$1" '{ s += $1; v[NR] = $1 } END {
  m = (n % 2) ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
  printf "%.3f %.3f\n", s / n, m }'; }
echo "| bits | keys per side | A mean (s) | A median (s) | B mean (s) | B median (s) | B/A [95 % interval]: verdict |"
echo "|---:|---:|---:|---:|---:|---:|---|"
expected=0
for bits in $sizes; do
  : >"$dir/A" ; : >"$dir/B"
  for ((i = 0; i < n; i++)); do
    for side in A B; do
      t0=$(now); gen $side "$bits" "$dir/key.pem"; t1=$(now)
      echo "$t1 - $t0" | bc -l >>"$dir/$side"
    done
  done
  expected=$((expected + n))
  read -r am amed < <(stats "$n" <"$dir/A")
  read -r bm bmed < <(stats "$n" <"$dir/B")
  cell=$({ sed 's/^/A /' "$dir/A"; sed 's/^/B /' "$dir/B"; } | bench_cell --unpaired --lower-is-better)
  printf "| %s | %s | %s | %s | %s | %s | %s |\n" "$bits" "$n" "$am" "$amed" "$bm" "$bmed" "$cell"
done
counted=$("$rustica" stats --json | python3 -c 'import json,sys; k=json.load(sys.stdin)["ops"]["keygen"]; print(k["software"] + k["libica"] + k["fallback"])')
if [ "$counted" != "$expected" ]; then
  echo "bench-keygen: rustica counted $counted key generations, expected $expected" >&2
  exit 1
fi
echo
echo "every B key counted by rustica ($counted); OpenSSL $(openssl version | cut -d' ' -f2); $(date -u +%Y-%m-%d)"
