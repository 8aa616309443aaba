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
# process shares, and each row also gives, for both rustica sides (async
# and `async = off`), the fraction of the card's capacity used: the card's
# own busy time over the wall time x its queues (scripts/lib/card.sh's
# card_busy), median of the row's runs. The card is reset when speed starts
# signing (its "+DTP:BITS:private" line; with -multi, the first process's)
# and read when verification starts (the first "+DTP:BITS:public"): speed
# verifies for as long as it signs, in software (rustica sends no public-key
# operation to the card), so the whole run's wall time would about halve
# the figure. JOBS may then hold mP: `-multi P` processes, synchronous (the
# P sweep beside the N sweep).
#
# BENCH_FACTS=FILE (a path from the repository's top, where the script
# runs) also writes the run as facts, one tab-separated line each, for
# docs/performance.md (workshop/scripts/comparison.py renders its x86 card
# tables from docs/comparison/x86-card-async.tsv):
#   run       date, command, what ran (the first line printed)
#   row       bits, run (-async_jobs N or -multi P), then the table's cells:
#             async, off and default sign/s, rustica / off, rustica /
#             default, capacity used (async), capacity used (off), sampling
#   load      the load average after the last row
#   counters  side (async, off), rustica's counters
#
# Usage: workshop/scripts/bench-async.sh [SECONDS [ROUNDS [BITS [JOBS]]]]
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
. "$(dirname "$0")/../../scripts/lib/common.sh"
. scripts/lib/bench-facts.sh
# The command as given, for the facts (before any default is set).
command=$(bench_command workshop/scripts/bench-async.sh "LIBICA_EMU_UNITS LIBICA_EMU_LATENCY_US BENCH_MAX_ROUNDS BENCH_TARGET_PCT BENCH_BUDGET_S BENCH_CARD_UNIT_US" "$@")
facts=${BENCH_FACTS:-}
[ -z "$facts" ] || : >"$facts"
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
# One `openssl speed -mr` run of a side, its standard output to $work/speed.out.
run_speed() { # conf jobs bits
  local -a card_env=()
  [ -z "$card" ] || [ "$1" = default ] || card_env=(LIBICA_EMU_CARD="$card")
  # shellcheck disable=SC2046
  env "${card_env[@]}" OPENSSL_CONF="$work/$1.cnf" RUSTICA_STATS_PATH="$work/stats-$1" \
    openssl speed -mr -elapsed -seconds "$seconds" $(parallel "$2") "rsa$3" >"$work/speed.out"
}
# Reads speed's standard error: resets the card when the signing of BITS
# starts, prints card_busy when its verification starts (see the header).
signing_window() { # bits
  local line state=before
  while IFS= read -r line; do
    case "$state:$line" in
      "before:+DTP:$1:private:"*) card_ctl reset >/dev/null && state=signing ;;
      "signing:+DTP:$1:public:"*) card_busy && state=after ;;
    esac
  done
}
# Sign/s of one run (speed's "+F2:INDEX:BITS:SIGN/S:VERIFY/S" line); on the
# card, a rustica side's run adds its capacity used to $work/busy-CONF.
sign_rate() { # conf jobs bits
  if [ -z "$card" ] || [ "$1" = default ]; then
    run_speed "$@" 2>/dev/null || return 1
  else
    run_speed "$@" 2>&1 | signing_window "$3" >>"$work/busy-$1" || return 1
  fi
  awk -F: -v b="$3" '$1 == "+F2" && $3 == b { print $4 }' "$work/speed.out"
}
# "median" or "median (min-max)" of the numbers on stdin.
summary() {
  sort -g | awk '{ v[NR] = $1 } END {
    m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
    if (NR > 1) printf "%.1f (%.1f-%.1f)", m, v[1], v[NR]; else printf "%.1f", m }'
}

adapter="emulated adapter: $LIBICA_EMU_UNITS units x ${LIBICA_EMU_LATENCY_US} us"
[ -n "$card" ] && adapter="one shared card (rustica-card): 2 queues, unit ${BENCH_CARD_UNIT_US} us"
heading="openssl speed -mr -elapsed -seconds $seconds, at least $BENCH_MIN_ROUNDS rounds per cell (until ±$BENCH_TARGET_PCT % or ${BENCH_BUDGET_S}s), $adapter ($(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg))"
echo "$heading"
bench_fact "$facts" run "$(date -u +%F)" "$command" "$heading, $(openssl version | cut -d' ' -f1-2)"
echo
capacity_head="" capacity_rule=""
[ -n "$card" ] && capacity_head=" card capacity used: async | card capacity used: off |" capacity_rule="---:|---:|"
echo "| key | jobs | rustica sign/s | rustica async = off sign/s | default provider sign/s | rustica / off [95 % interval]: verdict | rustica / default [95 % interval]: verdict |$capacity_head sampling |"
echo "|---|---:|---:|---:|---:|---|---|$capacity_rule---|"
for bits in $bits_list; do
  for jobs in $jobs_list; do
    : >"$work/a" && : >"$work/o" && : >"$work/d" && : >"$work/vs-off" && : >"$work/vs-default"
    : >"$work/busy-async" && : >"$work/busy-off"
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
    capacity=("" "")
    [ -z "$card" ] || capacity=("$(bench_busy_median "$work/busy-async")" "$(bench_busy_median "$work/busy-off")")
    bench_row "$facts" "$card" "${capacity[@]}" "$(bench_sampling "$round" "$cell_start")" \
      "$bits" "$(parallel "$jobs")" "$(summary <"$work/a")" "$(summary <"$work/o")" "$(summary <"$work/d")" \
      "$(bench_cell <"$work/vs-off")" "$(bench_cell <"$work/vs-default")"
  done
done
load=$(cut -d' ' -f1-3 /proc/loadavg)
echo "(load after: $load)"
bench_fact "$facts" load "$load"
echo
for side in async off; do
  counters=$(target/$profile/rustica stats --json --path "$work/stats-$side" |
    python3 -c 'import json,sys; d=json.load(sys.stdin); s=d["ops"]["sign"]; print("sign libica", s["libica"], "async", s["async"], "fallback", s["fallback"], "failed", s["failed"], "max in flight", d["async_max_inflight"])')
  echo "counters ($side): $counters"
  bench_fact "$facts" counters "$side" "$counters"
done
