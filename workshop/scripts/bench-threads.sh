#!/usr/bin/env bash
# Threaded signing A/B (a benchmark, not a test): workshop/benches/threads/threads.c
# signs SHA-256 digests (PKCS#1 v1.5) from N threads for SECONDS, all
# threads with one shared key ("shared") or each with its own ("own"),
# with only the default provider (A) and with rustica preferred through
# openssl.cnf (B), A and B alternating in rotating order. Prints medians of
# signatures/s and each B/A with its 95 % interval and verdict over the
# rounds' pairs (at least ROUNDS, more until ±5 % or 60 s a row:
# scripts/lib/bench-stats.sh); every run checks
# its signatures and which provider made them (EVP_PKEY_CTX_get0_provider:
# "default" on A, "rustica" on B). Then `openssl speed -multi 2` through
# workshop/scripts/bench-speed.sh with the same module. With -c MODULE, a second
# rustica build (C, e.g. main's) runs in the same rotation: C/A and B/C too.
#
# usage: workshop/scripts/bench-threads.sh [-s SECONDS] [-r ROUNDS] [-t "1 2 4"] [-c MODULE] [-M] [SIZES...]
#   defaults: -s 2 -r 6 -t "1 2 4", sizes 2048 4096; -M skips speed -multi
# shellcheck source-path=SCRIPTDIR source-path=.
. "$(dirname "$0")/../../scripts/lib/common.sh"
seconds=2 rounds=6 threads="1 2 4" multi=1 other=
while getopts "s:r:t:c:M" opt; do
  case $opt in
    s) seconds=$OPTARG ;; r) rounds=$OPTARG ;; t) threads=$OPTARG ;; M) multi=0 ;;
    c) other=$OPTARG ;;
    *) usage >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
sizes=("${@:-2048 4096}")
read -r -a sizes <<<"${sizes[*]}"
read -r -a threads <<<"$threads"

if [ -z "${RUSTICA_MODULE:-}" ]; then
  scripts/build.sh >/dev/null
  RUSTICA_MODULE=$(pwd)/target/release/rustica.so
fi
export RUSTICA_MODULE
bench_rustica=$(dirname "$RUSTICA_MODULE")/rustica
[ -x "$bench_rustica" ] || bench_rustica=$(pwd)/target/release/rustica
BENCH_MIN_ROUNDS=$rounds
. scripts/lib/bench-stats.sh
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cc -O2 -Wall -o "$work/threads" workshop/benches/threads/threads.c -lcrypto -lpthread
. scripts/lib/openssl-cnf.sh
stock_conf "$work/a.cnf"
rustica_conf "$work/b.cnf" "$RUSTICA_MODULE"
sides=(a b)
if [ -n "$other" ]; then
  sed "s|^module = .*|module = $other|" "$work/b.cnf" >"$work/c.cnf"
  sides=(a b c)
fi
unset RUSTICA_BACKEND RUSTICA_LIBICA RUSTICA_DEBUG
export RUSTICA_STATS_PATH=$work/stats

max=0
for n in "${threads[@]}"; do [ "$n" -gt "$max" ] && max=$n; done
for bits in "${sizes[@]}"; do
  for i in $(seq "$max"); do
    OPENSSL_CONF=$work/a.cnf openssl genpkey -algorithm RSA -pkeyopt "rsa_keygen_bits:$bits" \
      -out "$work/key-$bits-$i.pem" 2>/dev/null
  done
done

# run SIDE BITS N MODE: prints signatures/s, checks the provider.
run() {
  local want=default keys=("$work/key-$2-1.pem")
  [ "$1" != a ] && want=rustica
  [ "$4" = own ] && keys=($(for i in $(seq "$3"); do echo "$work/key-$2-$i.pem"; done))
  local out
  out=$(OPENSSL_CONF=$work/$1.cnf "$work/threads" "$seconds" "$3" "$4" "${keys[@]}")
  read -r rate prov <<<"$out"
  [ "$prov" = "$want" ] || fail "side $1 signed with $prov, not $want"
  echo "$rate"
}
median() { sort -g | awk '{ a[NR] = $1 } END { if (NR % 2) print a[(NR+1)/2]; else printf "%.4f\n", (a[NR/2] + a[NR/2+1]) / 2 }'; }

echo "# workshop/scripts/bench-threads.sh, $(date -u +%FT%RZ), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), $(openssl version)"
echo "# ${seconds}s per run, at least $BENCH_MIN_ROUNDS rounds per row (until ±$BENCH_TARGET_PCT % or ${BENCH_BUDGET_S}s; sides in rotating order), B = $RUSTICA_MODULE${other:+, C = $other}"
echo
if [ -n "$other" ]; then
  echo "| bits | key | threads | A sign/s | B sign/s | C sign/s | B/A [95 %]: verdict | C/A [95 %]: verdict | B/C [95 %]: verdict | sampling |"
  echo "|---:|---|---:|---:|---:|---:|---|---|---|---|"
else
  echo "| bits | key | threads | A sign/s | B sign/s | B/A [95 % interval]: verdict | sampling |"
  echo "|---:|---|---:|---:|---:|---|---|"
fi
for bits in "${sizes[@]}"; do
  for mode in shared own; do
    for n in "${threads[@]}"; do
      : >"$work/pairs" && : >"$work/ba" && : >"$work/ca" && : >"$work/bc"
      specs=("$work/ba")
      [ -n "$other" ] && specs+=("$work/ca" "$work/bc")
      r=0 row_start=$SECONDS
      while bench_more "$r" "$row_start" "${specs[@]}"; do
        r=$((r + 1))
        declare -A rate=()
        k=${#sides[@]}
        for j in $(seq 0 $((k - 1))); do
          side=${sides[$(((r + j) % k))]}
          rate[$side]=$(run "$side" "$bits" "$n" "$mode")
        done
        echo "${rate[a]} ${rate[b]} ${rate[c]:-1}" >>"$work/pairs"
        echo "${rate[a]} ${rate[b]}" >>"$work/ba"
        [ -n "$other" ] && echo "${rate[a]} ${rate[c]}" >>"$work/ca" && echo "${rate[c]} ${rate[b]}" >>"$work/bc"
      done
      col() { awk "{print \$$1}" "$work/pairs" | median; }
      if [ -n "$other" ]; then
        printf "| %s | %s | %s | %.0f | %.0f | %.0f | %s | %s | %s | %s |\n" "$bits" "$mode" "$n" \
          "$(col 1)" "$(col 2)" "$(col 3)" "$(bench_cell <"$work/ba")" "$(bench_cell <"$work/ca")" \
          "$(bench_cell <"$work/bc")" "$(bench_sampling "$r" "$row_start")"
      else
        printf "| %s | %s | %s | %.0f | %.0f | %s | %s |\n" "$bits" "$mode" "$n" "$(col 1)" "$(col 2)" \
          "$(bench_cell <"$work/ba")" "$(bench_sampling "$r" "$row_start")"
      fi
    done
  done
done
echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)"
if [ "$multi" = 1 ]; then
  echo
  workshop/scripts/bench-speed.sh -s 3 -r "$rounds" -m 2 "${sizes[@]}"
fi
