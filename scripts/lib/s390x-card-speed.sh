# shellcheck shell=bash
# Sourced by scripts/s390x-card.sh with S390X_CARD_SPEED=1: throughput
# with the card as the bottleneck. Uses its side_cmd, run_side,
# start_card, card_ctl, fact and RUSTICA, and scripts/lib/common.sh's
# say, fail and die.
#
# Under qemu-user the CPU side is slow (a 2048-bit signature whose
# exponentiation is on the card costs stock about 0.5 ms and rustica about
# 0.75 ms of emulated CPU; measured with a 1 us unit), so the card's unit
# is scaled up until the card, not qemu, limits the rate:
# S390X_CARD_SPEED_UNIT_US, default 200 (a 2048-bit CRT is 10.8 ms, 14 times
# rustica's CPU time per signature under qemu; a larger unit leaves too few
# signatures in a 1-second phase to tell a few per cent).
. scripts/lib/bench-stats.sh # bench_median
SPEED_UNIT_US=${S390X_CARD_SPEED_UNIT_US:-200}
SPEED_ROUNDS=${S390X_CARD_SPEED_ROUNDS:-6}
[[ "$VERSION_OPENSSL" == 3.0.* ]] && die "the card's speed rows are for OpenSSL 3.2 and later (A's own offload)"
start_card "$SPEED_UNIT_US"

# A0 computes in software: signatures per second of all its processes
# together (each child's +R1).
speed_rate() { # side speed-args...
  local side=$1
  shift
  run_side "$side" speed -elapsed -seconds 1 -mr "$@" rsa2048 2>&1 \
    | awk -F: '/^\+R1:/ {r += $2 / $4} END {if (r > 0) printf "%.2f\n", r}'
}
# The card's own measure of a side's signing, in a window inside the
# signing phase of `openssl speed -seconds 6` (the first phase; the run is
# stopped after the window). Summing each child's +R1 would not do: under
# qemu the children start up to a second apart, so each one's signing
# phase overlaps others' verification phases, which for rustica do not use
# the card. Prints "signatures/s fraction-of-capacity": the side's signing
# requests (CRT for A and B, ME for C) answered in the window per second,
# and the card's busy time over the window's wall time x queues.
card_window() { # side speed-args...
  local side=$1 kind=crt run s1 s2
  shift
  [ "$side" = C ] && kind=me
  # A process group of its own (setsid, started from this shell so that it
  # does not fork): the window's end stops every child of -multi at once.
  side_cmd "$side"
  setsid "${SIDE_CMD[@]}" speed -elapsed -seconds 6 -mr "$@" rsa2048 >/dev/null 2>&1 &
  run=$!
  sleep 2
  s1=$(card_ctl stats)
  sleep 2.5
  s2=$(card_ctl stats)
  kill -- -"$run" 2>/dev/null || true
  wait "$run" 2>/dev/null || true
  python3 -c '
import json, sys
kind = sys.argv[1]
a, b = json.loads(sys.argv[2]), json.loads(sys.argv[3])
def served(d):
    return sum(r["count"] for r in d["requests"] if r["type"] == kind and r["outcome"] == "ok")
wall = (b["wall_ns"] - a["wall_ns"]) / 1e9
queues = b["cards"] * b["domains"]
print("%.2f %.3f" % ((served(b) - served(a)) / wall, (b["busy_ns"] - a["busy_ns"]) / 1e9 / wall / queues))
' "$kind" "$s1" "$s2"
}

# Configurations "name|side|speed args"; every round runs each once, in
# this order, so that a drift of the host hits every side alike.
CONFIGS=("A-1|A|" "B-1|B|" "A-2|A|-multi 2" "A0-2|A0|-multi 2" "B-2|B|-multi 2" "C-2|C|-multi 2"
         "A-4|A|-multi 4" "B-4|B|-multi 4" "B-async|B|-async_jobs 32")
for cfg in "${CONFIGS[@]}"; do : >"$OUT/speed-${cfg%%|*}.txt"; : >"$OUT/busy-${cfg%%|*}.txt"; done
for ((round = 1; round <= SPEED_ROUNDS; round++)); do
  for cfg in "${CONFIGS[@]}"; do
    name=${cfg%%|*} rest=${cfg#*|}
    side=${rest%%|*} args=${rest#*|}
    if [ "$side" = A0 ]; then
      # shellcheck disable=SC2086
      rate=$(speed_rate "$side" $args) || true
      busy=0
    else
      # shellcheck disable=SC2086
      read -r rate busy < <(card_window "$side" $args) || true
    fi
    [ -n "${rate:-}" ] && [ "$rate" != 0.00 ] || fail "no signatures measured ($name)"
    echo "$rate" >>"$OUT/speed-$name.txt"
    echo "$busy" >>"$OUT/busy-$name.txt"
  done
  say "speed round $round of $SPEED_ROUNDS done"
done

pairs() { paste -d' ' "$OUT/speed-$1.txt" "$OUT/speed-$2.txt"; }
ratio() { # base other: "B/A estimate [interval] verdict"
  pairs "$1" "$2" | env -u RUSTICA_MODULE "$RUSTICA" compare | tr '\t' ' '
}
cell() { # config: "rate sig/s, card busy fraction"
  echo "$(bench_median <"$OUT/speed-$1.txt") sig/s, card busy $(bench_median <"$OUT/busy-$1.txt")"
}
fact card-speed "card unit (scaled for qemu)" "$SPEED_UNIT_US us" "$SPEED_UNIT_US us" "$SPEED_UNIT_US us" \
  "$SPEED_UNIT_US us" "a 2048-bit CRT is $(awk -v u="$SPEED_UNIT_US" 'BEGIN {print 54 * u / 1000}') ms on one of $CARDS queues"
VARIES=varies fact card-speed "speed rsa2048, 1 process (median of $SPEED_ROUNDS)" "$(cell A-1)" "" \
  "$(cell B-1)" "" "B/A $(ratio A-1 B-1)"
VARIES=varies fact card-speed "speed -multi 2 rsa2048 (median of $SPEED_ROUNDS)" "$(cell A-2)" \
  "$(bench_median <"$OUT/speed-A0-2.txt") sig/s (software)" "$(cell B-2)" "$(cell C-2)" \
  "B/A $(ratio A-2 B-2); B/A0 $(ratio A0-2 B-2); B/C $(ratio C-2 B-2)"
VARIES=varies fact card-speed "speed -multi 4 rsa2048 (median of $SPEED_ROUNDS)" "$(cell A-4)" "" \
  "$(cell B-4)" "" "B/A $(ratio A-4 B-4)"
VARIES=varies fact card-speed "speed -async_jobs 32 rsa2048, 1 process (median of $SPEED_ROUNDS)" "" "" \
  "$(cell B-async)" "" "B async / A -multi 4: $(ratio A-4 B-async)"
