#!/usr/bin/env bash
# Wall time of a fresh signing context per operation, A/B, in process: the
# pattern of BIND and PowerDNS for every RRSIG (dsign-fresh and dverify-fresh
# of workshop/benches/instructions/ops.c, timed).
# A (the default provider only) and B (rustica preferred through
# openssl.cnf) run in separate processes that take turns, the order
# alternated per round (A B, then B A), each a fixed wall time; B/A of the
# operations per second with the lab's 95 % interval and verdict (`rustica
# compare`). A third series B0 runs rustica with its counters off
# (RUSTICA_STATS=0), to rule the counters' shared-memory atomics in or out.
# A benchmark, not a test: the machine's other load moves it
# (docs/performance.md, "A fresh signing context per operation").
#
# Usage: workshop/scripts/bench-fresh-ctx.sh [-r ROUNDS] [-t MS] [-b BITS...] [sign|verify ...]
#   defaults: 30 rounds, 300 ms per process, 1024 bits, sign and verify.
#   RUSTICA_MODULE=/path/rustica.so measures that module instead of a
#   fresh release build; BENCH_KEYS=DIR takes DIR/key-BITS.pem.
# shellcheck source-path=SCRIPTDIR source-path=.
. "$(dirname "$0")/../../scripts/lib/common.sh"
rounds=30 ms=300 sizes=(1024)
while getopts "r:t:b:" opt; do
  case $opt in
    r) rounds=$OPTARG ;;
    t) ms=$OPTARG ;;
    b) read -r -a sizes <<<"$OPTARG" ;;
    *) usage >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
ops=("${@:-}")
[ -n "${ops[*]}" ] || ops=(sign verify)
. workshop/scripts/lib/callgrind.sh
bench_setup
bench_driver

# One process of a side: its rate; fails if the wrong provider ran it.
run() { # side op key
  local side=$1 cnf=a want=default env=()
  case $side in B) cnf=b want=rustica ;; B0) cnf=b want=rustica env=(RUSTICA_STATS=0) ;; esac
  local out
  local provider count rate
  read -r provider count rate < <(env "${env[@]}" OPENSSL_CONF="$work/$cnf.cnf" \
    "$work/ops" "d$2-fresh" 50 0 "$3" "$ms")
  [ "$provider" = "$want" ] || fail "side $side ran on $provider, not $want ($count operations)"
  echo "$rate"
}

echo "| bits | operation | A ops/s | B ops/s | B/A [95 %] | B0 (counters off)/A [95 %] |"
echo "|---:|---|---:|---:|---|---|"
for bits in "${sizes[@]}"; do
  key=$(bench_key "$bits")
  for op in "${ops[@]}"; do
    : >"$work/ab" ; : >"$work/ab0"
    for ((r = 1; r <= rounds; r++)); do
      # A B B0 in odd rounds, B0 B A in even ones: order effects cancel.
      if ((r % 2)); then order=(A B B0); else order=(B0 B A); fi
      declare -A rate=()
      for side in "${order[@]}"; do rate[$side]=$(run "$side" "$op" "$key"); done
      echo "${rate[A]} ${rate[B]}" >>"$work/ab"
      echo "${rate[A]} ${rate[B0]}" >>"$work/ab0"
    done
    med() { cut -d' ' -f"$1" "$2" | sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
    cmp_ab=$("$rustica" compare --json <"$work/ab")
    cmp_ab0=$("$rustica" compare --json <"$work/ab0")
    fmt() { python3 -c 'import json, sys; c = json.loads(sys.argv[1]); print("%.3f [%.3f–%.3f] %s" % (c["ratio"], c["lo"], c["hi"], c["text"]) if "ratio" in c else c["text"])' "$1"; }
    echo "| $bits | $op | $(med 1 "$work/ab") | $(med 2 "$work/ab") | $(fmt "$cmp_ab") | $(fmt "$cmp_ab0") |"
  done
done
