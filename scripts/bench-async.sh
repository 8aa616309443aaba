#!/usr/bin/env bash
# Asynchronous offload on the emulated adapter: `openssl speed -elapsed
# -async_jobs N` (N = 1, 8, 32) for rsa1024 and rsa2048 (private-key
# signatures), three sides: rustica with async (the default), rustica with
# `async = off`, and the default provider. The emulated libica holds one of
# LIBICA_EMU_UNITS units for LIBICA_EMU_LATENCY_US per call (defaults 16
# and 2000: at most 8,000 calls/s), then computes in software on this CPU.
# `-elapsed` matters: speed otherwise divides by CPU time, which a paused
# or waiting process does not spend.
#
# With BENCH_CARD_UNIT_US=U, rustica's calls go instead to one shared card
# (rustica-card, 2 queues, unit U us; docs/card-model.md) that every
# process shares, and each rustica cell also gives the fraction of the
# card's capacity its signatures used: sign/s x one CRT's service time
# (the card's weight for the size x U) / 2 queues; each rustica signature
# is one CRT request (tests/e2e_card.rs counts them). JOBS may then hold mP:
# `-multi P` processes, synchronous (the P sweep beside the N sweep).
#
# Usage: scripts/bench-async.sh [SECONDS [ROUNDS [BITS [JOBS]]]]
#   SECONDS per measurement (default 3); ROUNDS (default 6, the least that
#   allows an interval): each cell is measured at least ROUNDS times, the
#   three sides alternating within each round, more until both ratios'
#   intervals are within ±5 % or the cell has had 60 s
#   (scripts/lib/bench-stats.sh); the table shows medians and ranges;
#   BITS, JOBS: space-separated lists (defaults "1024 2048" and "1 8 32").
# Prints a Markdown table of sign/s, rustica async against `async = off`
# and against the default provider, each B/A with its 95 % interval and
# verdict (B is rustica with async), and each side's counters check.
# Reports figures only; nothing here is a pass/fail target.
# shellcheck source-path=SCRIPTDIR source-path=.
. "$(dirname "$0")/lib/common.sh"
seconds=${1:-3}
rounds=${2:-6}
bits_list=${3:-1024 2048}
jobs_list=${4:-1 8 32}
profile=release
scripts/build.sh >/dev/null
module=$PWD/target/$profile/rustica.so
emu=$PWD/target/$profile/libica_emu.so
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
bench_rustica=$PWD/target/$profile/rustica
BENCH_MIN_ROUNDS=$rounds
. scripts/lib/bench-stats.sh
export LIBICA_EMU_LATENCY_US=${LIBICA_EMU_LATENCY_US:-2000}
export LIBICA_EMU_UNITS=${LIBICA_EMU_UNITS:-16}

. scripts/lib/openssl-cnf.sh
card=""
if [ -n "${BENCH_CARD_UNIT_US:-}" ]; then
  card=$work/card.sock
  . scripts/lib/card.sh
  trap 'card_stop; rm -rf "$work"' EXIT
  card_start "target/$profile/rustica-card" "$card" "$work/card.log" --unit-us "$BENCH_CARD_UNIT_US"
fi
rustica_conf "$work/async.cnf" "$module" "backend = libica" "libica = $emu"
rustica_conf "$work/off.cnf" "$module" "backend = libica" "libica = $emu" "async = off"
stock_conf "$work/default.cnf"

# "-async_jobs N", or "-multi P" for mP.
parallel() { case "$1" in m*) echo "-multi ${1#m}" ;; *) echo "-async_jobs $1" ;; esac; }
sign_rate() { # conf jobs bits
  local -a card_env=()
  [ -z "$card" ] || [ "$1" = default ] || card_env=(LIBICA_EMU_CARD="$card")
  # shellcheck disable=SC2046
  env "${card_env[@]}" OPENSSL_CONF="$work/$1.cnf" RUSTICA_STATS_PATH="$work/stats-$1" \
    openssl speed -elapsed -seconds "$seconds" $(parallel "$2") "rsa$3" 2>/dev/null |
    awk -v b="$3" '$1 == "rsa" && $2 == b { print $6 }'
}
# The fraction of the card's 2 queues that RATE signatures/s of BITS use.
capacity() { # rate bits
  local weight
  case "$2" in 1024) weight=15 ;; 2048) weight=54 ;; *) weight=362 ;; esac
  awk -v r="$1" -v w="$weight" -v u="$BENCH_CARD_UNIT_US" 'BEGIN {printf "%.3f", r * w * u / 1e6 / 2}'
}

# "median" or "median (min-max)" of the numbers on stdin.
summary() {
  sort -g | awk '{ v[NR] = $1 } END {
    m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
    if (NR > 1) printf "%.1f (%.1f-%.1f)", m, v[1], v[NR]; else printf "%.1f", m }'
}

adapter="emulated adapter: $LIBICA_EMU_UNITS units x ${LIBICA_EMU_LATENCY_US} us"
[ -n "$card" ] && adapter="one shared card (rustica-card): 2 queues, unit ${BENCH_CARD_UNIT_US} us"
echo "openssl speed -elapsed -seconds $seconds, at least $BENCH_MIN_ROUNDS rounds per cell (until ±$BENCH_TARGET_PCT % or ${BENCH_BUDGET_S}s), $adapter ($(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg))"
echo
capacity_head="" capacity_rule=""
[ -n "$card" ] && capacity_head=" rustica's card capacity used |" capacity_rule="---:|"
echo "| key | jobs | rustica sign/s | rustica async = off sign/s | default provider sign/s | rustica / off [95 % interval]: verdict | rustica / default [95 % interval]: verdict |$capacity_head sampling |"
echo "|---|---:|---:|---:|---:|---|---|$capacity_rule---|"
for bits in $bits_list; do
  for jobs in $jobs_list; do
    : >"$work/a" && : >"$work/o" && : >"$work/d" && : >"$work/vs-off" && : >"$work/vs-default"
    round=0 cell_start=$SECONDS
    while bench_more "$round" "$cell_start" "$work/vs-off" "$work/vs-default"; do
      round=$((round + 1))
      a=$(sign_rate async "$jobs" "$bits") && echo "$a" >>"$work/a"
      o=$(sign_rate off "$jobs" "$bits") && echo "$o" >>"$work/o"
      d=$(sign_rate default "$jobs" "$bits") && echo "$d" >>"$work/d"
      # Each round's adjacent runs form the pairs, so slow drift in the
      # machine's load cancels.
      echo "$o $a" >>"$work/vs-off"
      echo "$d $a" >>"$work/vs-default"
    done
    capacity_cell=""
    [ -n "$card" ] && capacity_cell=" $(capacity "$(bench_median <"$work/a")" "$bits") |"
    echo "| $bits | $(parallel "$jobs") | $(summary <"$work/a") | $(summary <"$work/o") | $(summary <"$work/d") | $(bench_cell <"$work/vs-off") | $(bench_cell <"$work/vs-default") |$capacity_cell $(bench_sampling "$round" "$cell_start") |"
  done
done
echo "(load after: $(cut -d' ' -f1-3 /proc/loadavg))"
echo
for side in async off; do
  echo "counters ($side): $(target/$profile/rustica stats --json --path "$work/stats-$side" |
    python3 -c 'import json,sys; d=json.load(sys.stdin); s=d["ops"]["sign"]; print("sign libica", s["libica"], "async", s["async"], "fallback", s["fallback"], "failed", s["failed"], "max in flight", d["async_max_inflight"])')"
done
