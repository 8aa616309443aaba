# shellcheck shell=bash
# The shared card model (rustica-card, docs/card-model.md) for the bench
# and lane scripts: one card process on a socket the caller names.
#
#   card_start BIN SOCKET LOG [rustica-card options...]   starts it, waits
#                                                          until it listens
#   card_ctl COMMAND...                                    one control command
#   card_busy                                              the fraction of its
#                                                          capacity used since
#                                                          its last reset
#   card_requests TYPE OUTCOME                             requests it answered
#                                                          (crt/me/*, ok/ENODEV/*)
#   card_stop                                              quit, socket removed
#
# CARD_BIN, CARD_SOCKET and CARD_PID describe the running card.
CARD_PID=""
card_start() { # bin socket log [options...]
  card_stop
  CARD_BIN=$1 CARD_SOCKET=$2
  local log=$3
  shift 3
  "$CARD_BIN" --socket "$CARD_SOCKET" "$@" >"$log" 2>&1 &
  CARD_PID=$!
  for _ in $(seq 100); do
    grep -q "listening on" "$log" 2>/dev/null && return 0
    sleep 0.05
  done
  echo "rustica-card did not start: $(cat "$log")" >&2
  return 1
}
card_ctl() { "$CARD_BIN" --socket "$CARD_SOCKET" --ctl "$@"; }
# The card's own measure of its use (docs/card-model.md, "Busy time"): the
# service its queues gave since start or the last `card_ctl reset`, over
# that wall time x the requests it can serve at once (cards x engines;
# 1.000 = every engine busy all the time), three decimals. A run's figure:
# `card_ctl reset` just before it, card_busy just after.
card_busy() {
  card_ctl stats | python3 -c 'import json, sys
d = json.load(sys.stdin)
print("%.3f" % (d["busy_ns"] / d["wall_ns"] / (d["cards"] * d["engines"])))'
}
# The card's own count of requests of TYPE (crt, me, *) and OUTCOME (ok,
# ENODEV, *), from its stats.
card_requests() { # type outcome
  card_ctl stats | python3 -c '
import json, sys
t, o = sys.argv[1:3]
print(sum(r["count"] for r in json.load(sys.stdin)["requests"]
          if t in ("*", r["type"]) and o in ("*", r["outcome"])))' "$1" "$2"
}
card_stop() {
  [ -n "$CARD_PID" ] || return 0
  card_ctl quit >/dev/null 2>&1 || kill "$CARD_PID" 2>/dev/null || true
  wait "$CARD_PID" 2>/dev/null || true
  CARD_PID=""
  rm -f "$CARD_SOCKET"
}
