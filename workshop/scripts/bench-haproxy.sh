#!/usr/bin/env bash
# TLS handshakes per second of HAProxy (Debian's haproxy, one thread:
# nbthread 1) with an RSA-2048 certificate, for three sides: rustica on the
# emulated adapter with HAProxy's `ssl-mode-async` (rustica's async = auto),
# the same without `ssl-mode-async` (every handshake's RSA operation blocks
# the thread for the adapter's latency), and the default provider. TLS 1.3
# (RSA-PSS signature) and TLS 1.2 (ECDHE-RSA: a PKCS#1 v1.5 signature).
# The load: ApacheBench (`ab`, Debian's apache2-utils), CONCURRENCY
# connections at once, each a new, non-resumed handshake (no keep-alive;
# ab does not resume sessions) and one small response.
#
# The emulated libica holds one of LIBICA_EMU_UNITS units for
# LIBICA_EMU_LATENCY_US per call (defaults 16 and 2000: at most 8,000
# calls/s), then computes in software on this CPU.
#
# BENCH_NBTHREAD=N runs HAProxy with N threads. With BENCH_CARD_UNIT_US=U,
# rustica's calls go to one shared card instead (rustica-card, 2 queues,
# unit U us; docs/card-model.md), and each row also gives, for both rustica
# sides (with and without ssl-mode-async), the fraction of the card's
# capacity used: the card is reset just before each ab run and read just
# after it, its busy time over that wall time x its queues
# (scripts/lib/card.sh's card_busy), median of the row's runs.
#
# BENCH_FACTS=FILE (a path from the repository's top, where the script
# runs) also writes the run as facts, one tab-separated line each, for
# docs/performance.md (workshop/scripts/comparison.py renders its x86 card
# tables from docs/comparison/x86-card-haproxy.tsv):
#   run       date, command, what ran (the first line printed)
#   row       TLS version, then the table's cells: async, no async and
#             default handshakes/s, async / no async, async / default,
#             capacity used (async), capacity used (no async), sampling
#   load      the load average after the last row
#   counters  side (async, sync), rustica's counters
#
# Usage: workshop/scripts/bench-haproxy.sh [REQUESTS [ROUNDS [CONCURRENCY]]]
#   (defaults 2000, 6, 32). Each cell is measured at least ROUNDS times
#   (6 is the least that allows an interval), the sides alternating within
#   a round, more until both ratios are within ±5 % or the cell has had
#   60 s (scripts/lib/bench-stats.sh); the table shows the median handshakes/s
#   (range in brackets), async against no async and against the default
#   provider, each with its 95 % interval and verdict, and rustica's
#   counters (signatures on libica and how many of them through a paused
#   ASYNC job). Figures only: nothing here is a pass/fail target.
# shellcheck source-path=SCRIPTDIR source-path=.
. "$(dirname "$0")/../../scripts/lib/common.sh"
. scripts/lib/bench-facts.sh
# The command as given, for the facts (before any default is set).
command=$(bench_command workshop/scripts/bench-haproxy.sh "LIBICA_EMU_UNITS LIBICA_EMU_LATENCY_US BENCH_MAX_ROUNDS BENCH_TARGET_PCT BENCH_BUDGET_S BENCH_NBTHREAD BENCH_CARD_UNIT_US" "$@")
facts=${BENCH_FACTS:-}
[ -z "$facts" ] || : >"$facts"
requests=${1:-2000}
rounds=${2:-6}
concurrency=${3:-32}
. scripts/lib/haproxy-common.sh
haproxy_tools
haproxy_workspace release
export LIBICA_EMU_LATENCY_US=${LIBICA_EMU_LATENCY_US:-2000}
export LIBICA_EMU_UNITS=${LIBICA_EMU_UNITS:-16}

haproxy_pki "$work" "$module" "$emu"
nbthread=${BENCH_NBTHREAD:-1}
card="" card_env=()
if [ -n "${BENCH_CARD_UNIT_US:-}" ]; then
  card=$work/card.sock card_env=(LIBICA_EMU_CARD="$card")
  . scripts/lib/card.sh
  trap 'card_stop; haproxy_cleanup' EXIT
  card_start "target/release/rustica-card" "$card" "$work/card.log" --unit-us "$BENCH_CARD_UNIT_US"
fi

# haproxy.cfg for a side: "async", "sync" (rustica without ssl-mode-async)
# or "default".
haproxy_cfg() {
  {
    echo "global"
    echo "  nbthread $nbthread"
    echo "  maxconn 4096"
    echo "  tune.ssl.default-dh-param 2048"
    # No session cache: every handshake does its RSA operation.
    echo "  tune.ssl.cachesize 0"
    [ "$1" != async ] || echo "  ssl-mode-async"
    echo "defaults"
    echo "  mode http"
    echo "  timeout connect 5s"
    echo "  timeout client 30s"
    echo "  timeout server 30s"
    echo "frontend tls"
    echo "  bind 127.0.0.1:$port ssl crt $work/server.pem no-tls-tickets"
    echo "  http-request return status 200 content-type text/plain string ok"
  } >"$work/$1.cfg"
}

# Starts haproxy for a side; its stats file is $work/stats-SIDE.
start_haproxy() {
  local conf=rustica.cnf
  [ "$1" != default ] || conf=default.cnf
  env "${card_env[@]}" OPENSSL_CONF="$work/$conf" RUSTICA_STATS_PATH="$work/stats-$1" \
    haproxy -db -f "$work/$1.cfg" >"$work/haproxy-$1.log" 2>&1 &
  haproxy_pid=$!
  for _ in $(seq 100); do
    if python3 -c "import socket,sys; socket.create_connection(('127.0.0.1',$port),0.2)" 2>/dev/null; then
      return 0
    fi
    sleep 0.1
  done
  echo "bench-haproxy: haproxy ($1) did not start:" >&2
  cat "$work/haproxy-$1.log" >&2
  exit 1
}

# Stops haproxy; says "crashed" (and keeps its log) when it had died.
stop_haproxy() {
  local status=alive
  kill -0 "$haproxy_pid" 2>/dev/null || status=crashed
  kill "$haproxy_pid" 2>/dev/null || true
  wait "$haproxy_pid" 2>/dev/null || true
  haproxy_pid=
  if [ "$status" = crashed ]; then
    crashes=$((crashes + 1))
    cp "$work/haproxy-$1.log" "${TMPDIR:-/tmp}/bench-haproxy-crash-$1-$crashes.log" 2>/dev/null || true
  fi
}
crashes=0

# Handshakes/s of one ab run against the running haproxy, TLS version $1.
rate() {
  local proto cipher=()
  if [ "$1" = 1.3 ]; then proto=TLS1.3; else proto=TLS1.2; cipher=(-Z ECDHE-RSA-AES128-GCM-SHA256); fi
  ab -q -n "$requests" -c "$concurrency" -f "$proto" "${cipher[@]}" "https://127.0.0.1:$port/" 2>&1 |
    awk '/^Failed requests:/ { failed = $3 } /^Requests per second:/ { rate = $4 }
         END { if (failed > 0) rate = rate " (" failed " failed)"; print rate }'
}

# "median (min-max)" of the numbers on stdin.
summary() {
  sort -g | awk '{ v[NR] = $1 } END {
    m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
    if (NR > 1) printf "%.0f (%.0f-%.0f)", m, v[1], v[NR]; else printf "%.0f", m }'
}

# signatures on libica / async, from a side's counters.
counters() {
  "$rustica" stats --json --path "$work/stats-$1" | python3 -c '
import json, sys
d = json.load(sys.stdin)
s = d["ops"]["sign"]
print("%d on libica, %d async, %d fallback, %d failed; max %d in flight"
      % (s["libica"], s["async"], s["fallback"], s["failed"], d["async_max_inflight"]))'
}

for side in async sync default; do haproxy_cfg "$side"; done
bench_rustica=$rustica
BENCH_MIN_ROUNDS=$rounds
. scripts/lib/bench-stats.sh
adapter="emulated adapter: $LIBICA_EMU_UNITS units x ${LIBICA_EMU_LATENCY_US} us"
[ -z "$card" ] || adapter="one shared card (rustica-card): 2 queues, unit ${BENCH_CARD_UNIT_US} us"
heading="haproxy $(haproxy -v | awk 'NR == 1 { print $3 }'), nbthread $nbthread, ab -n $requests -c $concurrency, at least $BENCH_MIN_ROUNDS rounds (until ±$BENCH_TARGET_PCT % or ${BENCH_BUDGET_S}s); $adapter ($(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg))"
echo "$heading"
bench_fact "$facts" run "$(date -u +%F)" "$command" "$heading, $(openssl version | cut -d' ' -f1-2)"
echo
capacity_head="" capacity_rule=""
[ -z "$card" ] || capacity_head=" card capacity used: async | card capacity used: no async |" capacity_rule="---:|---:|"
echo "| TLS | rustica, ssl-mode-async | rustica, no ssl-mode-async | default provider | async / no async [95 % interval]: verdict | async / default [95 % interval]: verdict |$capacity_head sampling |"
echo "|---|---:|---:|---:|---|---|$capacity_rule---|"
for tls in 1.3 1.2; do
  for side in async sync default; do : >"$work/rates-$side"; done
  : >"$work/vs-sync" && : >"$work/vs-default" && : >"$work/busy-async" && : >"$work/busy-sync"
  round=0 cell_start=$SECONDS
  while bench_more "$round" "$cell_start" "$work/vs-sync" "$work/vs-default"; do
    round=$((round + 1))
    for side in async sync default; do
      start_haproxy "$side"
      # A rustica side's capacity used: the card's busy time over this ab
      # run's wall time.
      [ -z "$card" ] || [ "$side" = default ] || card_ctl reset >/dev/null
      rate "$tls" | awk '{ print $1 }' >>"$work/rates-$side"
      [ -z "$card" ] || [ "$side" = default ] || card_busy >>"$work/busy-$side"
      stop_haproxy "$side"
    done
    a=$(tail -1 "$work/rates-async") s=$(tail -1 "$work/rates-sync") d=$(tail -1 "$work/rates-default")
    echo "$s $a" >>"$work/vs-sync"
    echo "$d $a" >>"$work/vs-default"
  done
  capacity=("" "")
  [ -z "$card" ] || capacity=("$(bench_busy_median "$work/busy-async")" "$(bench_busy_median "$work/busy-sync")")
  bench_row "$facts" "$card" "${capacity[@]}" "$(bench_sampling "$round" "$cell_start")" \
    "$tls" "$(summary <"$work/rates-async")" "$(summary <"$work/rates-sync")" "$(summary <"$work/rates-default")" \
    "$(bench_cell <"$work/vs-sync")" "$(bench_cell <"$work/vs-default")"
done
load=$(cut -d' ' -f1-3 /proc/loadavg)
echo "(load after: $load)"
bench_fact "$facts" load "$load"
if [ "$crashes" -gt 0 ]; then
  echo "haproxy died during $crashes run(s); logs in ${TMPDIR:-/tmp}/bench-haproxy-crash-*.log (see docs/performance.md)"
fi
echo
for side in async sync; do
  line=$(counters "$side")
  echo "counters (rustica, $side): $line"
  bench_fact "$facts" counters "$side" "$line"
done
