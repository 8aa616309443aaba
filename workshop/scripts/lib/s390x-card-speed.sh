# shellcheck shell=bash
# Sourced by scripts/s390x-card.sh with S390X_CARD_SPEED=1: throughput
# and host CPU per signature with the card as the bottleneck, at several
# card speeds. Uses its side_cmd, run_side, start_card, card_ctl, fact and
# RUSTICA, and scripts/lib/common.sh's say, fail and die.
#
# The card's speed is a dimension: S390X_CARD_SPEED_UNITS (default
# "200 50 20 5", in us; a 2048-bit CRT is 54 units). At each unit every
# configuration below runs once a round, S390X_CARD_SPEED_ROUNDS rounds
# (default 6), alternating. Each unit is also placed against the host: the
# ratio of the card's service time for a 2048-bit CRT to A0's (stock in
# software) CPU time per signature under qemu, measured in the same rounds.
# At a small unit the card's own computation of an answer (native, on this
# host) can take longer than the modelled service time: the card counts
# those answers as late; a unit with over 1 % of its answers late has its rows marked
# invalid (its timeline is the host's, not the model's).
#
# CPU time is the qemu processes' user + system time (/proc/PID/stat),
# i.e. emulated s390x instructions plus qemu's own work, not z16 time.
. scripts/lib/bench-stats.sh # bench_median
SPEED_UNITS=${S390X_CARD_SPEED_UNITS:-200 50 20 5}
SPEED_ROUNDS=${S390X_CARD_SPEED_ROUNDS:-6}
[[ "$VERSION_OPENSSL" == 3.0.* ]] && die "the card's speed rows are for OpenSSL 3.2 and later (A's own offload)"
# Host CPU per signature is the point of these rows: a module built
# without optimisation (the dev profile, whose debug-only test parameter
# is in its strings) would put its own slowness into B's figures.
grep -q 'rustica-test-panic' "$MODULE" \
  && die "the card's speed rows need a release build of rustica ($MODULE is a debug build)"
TCK=$(getconf CLK_TCK)
# Without sections 1 and 2 nothing else proves that B loads rustica; a B
# without it is stock with its own offload, and every B/A would be A/A.
run_side B list -providers 2>/dev/null | grep -q "name: rustica" \
  || die "side B does not load rustica (OPENSSL_CONF $OUT/b.cnf, module $MODULE)"

# User + system clock ticks of every process in process group PG.
pg_ticks() { # pgid
  cat /proc/[0-9]*/stat 2>/dev/null | awk -v pg="$1" '
    { sub(/^.*\) /, "") }   # drop "pid (comm) ": fields now start at state
    $3 == pg { t += $12 + $13 }
    END { print t + 0 }'
}

# The processes of process group PG.
pg_pids() { # pgid
  cat /proc/[0-9]*/stat 2>/dev/null | awk -v pg="$1" '{ pid = $1; sub(/^.*\) /, "") } $3 == pg { print pid }' | tr '\n' ' '
}

# A0 computes in software: one process, `openssl speed -seconds 1 -mr`
# without -elapsed, so that each phase's time is the process's own user
# CPU time (OpenSSL's app_tminterval); stopped after the verification
# phase. Prints "ms-per-signature ms-per-verification" (CPU).
a0_cpu() {
  side_cmd A0
  python3 - "${SIDE_CMD[@]}" speed -seconds 1 -mr rsa2048 <<'EOF'
import os, signal, subprocess, sys
# speed's "+R" lines go to stderr, unbuffered.
p = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                     text=True, start_new_session=True)
got = {}
for line in p.stderr:
    f = line.strip().split(":")
    if f[0] in ("+R1", "+R2"):
        got[f[0]] = float(f[3]) / int(f[1]) * 1000
    if len(got) == 2:
        break
os.killpg(p.pid, signal.SIGKILL)
p.wait()
if len(got) == 2:
    print("%.3f %.4f" % (got["+R1"], got["+R2"]))
EOF
}

# The card's own measure of a side's signing, in a window inside the
# signing phase of `openssl speed -seconds 6` (the first phase; the run is
# stopped after the window). Summing each child's +R1 would not do: under
# qemu the children start up to a second apart, so each one's signing
# phase overlaps others' verification phases, which for rustica do not use
# the card. The window is 2.5 s from 0.5 s after the run's first signing
# request. Prints "signatures/s fraction-of-capacity cpu-ms-per-signature":
# the side's signing requests (CRT for A and B, ME for C) answered in the
# window per second, the card's busy time over the window's wall time x
# queues, and the side's processes' CPU time in the window over those
# signatures.
card_window() { # side speed-args...
  local side=$1 kind=crt run s1 s2 t1 t2
  shift
  [ "$side" = C ] && kind=me
  # A process group of its own (setsid, started from this shell so that it
  # does not fork): the window's end stops every child of -multi at once.
  side_cmd "$side"
  setsid "${SIDE_CMD[@]}" speed -elapsed -seconds 6 -mr "$@" rsa2048 >/dev/null 2>&1 &
  run=$!
  # The window opens 0.5 s after the run's first signing request: under
  # qemu on a loaded host, starting a process that loads rustica's module
  # can take seconds, and a window from a fixed time would hold part of it.
  local i
  for ((i = 0; i < 100; i++)); do
    sleep 0.1
    card_ctl stats | python3 -c '
import json, sys
pids = set(int(p) for p in sys.argv[2].split())
d = json.load(sys.stdin)
sys.exit(0 if any(r["type"] == sys.argv[1] and r["pid"] in pids for r in d["requests"]) else 1)
' "$kind" "$(pg_pids "$run")" && break
  done
  sleep 0.5
  s1=$(card_ctl stats) t1=$(pg_ticks "$run")
  sleep 2.5
  s2=$(card_ctl stats) t2=$(pg_ticks "$run")
  pids=$(pg_pids "$run")
  # SIGKILL: qemu-user can leave SIGTERM pending in a guest with threads
  # (rustica's offload threads), and a survivor's requests would count in
  # the next configuration's window.
  kill -KILL -- -"$run" 2>/dev/null || true
  wait "$run" 2>/dev/null || true
  python3 -c '
import json, sys
kind = sys.argv[1]
a, b = json.loads(sys.argv[2]), json.loads(sys.argv[3])
ticks, tck = int(sys.argv[5]) - int(sys.argv[4]), int(sys.argv[6])
# Only the requests of this run (the card sees the host pid of each qemu).
pids = set(int(p) for p in sys.argv[7].split())
def served(d):
    return sum(r["count"] for r in d["requests"]
               if r["type"] == kind and r["outcome"] == "ok" and r["pid"] in pids)
wall = (b["wall_ns"] - a["wall_ns"]) / 1e9
queues = b["cards"] * b["domains"]
n = served(b) - served(a)
if n > 0:
    print("%.2f %.3f %.4f" % (n / wall, (b["busy_ns"] - a["busy_ns"]) / 1e9 / wall / queues, ticks / tck / n * 1000))
' "$kind" "$s1" "$s2" "$t1" "$t2" "$TCK" "$pids"
}

# Configurations "name|side|speed args"; every round runs each once, in
# this order, so that a drift of the host hits every side alike.
CONFIGS=("A-1|A|" "A0-1|A0|" "B-1|B|" "Bnd-1|Bnd|" "C-1|C|" "A-2|A|-multi 2" "B-2|B|-multi 2" "A-4|A|-multi 4"
         "B-4|B|-multi 4" "B-async|B|-async_jobs 32")

pairs() { paste -d' ' "$1" "$2"; }
compare() { # file-a file-b [--lower-is-better]: "B/A estimate [interval] verdict"
  pairs "$1" "$2" | env -u RUSTICA_MODULE "$RUSTICA" compare ${3:+"$3"} | tr '\t' ' '
}
med() { bench_median <"$1"; }
# compare's verdict names the second column B; for C/A it is C.
as_c() { sed 's/ B \([0-9.]*× as fast\|faster\|slower\)/ C \1/'; }

for unit in $SPEED_UNITS; do
  start_card "$unit"
  card_ctl reset >/dev/null
  U=$OUT/speed-$unit
  mkdir -p "$U"
  for cfg in "${CONFIGS[@]}"; do : >"$U/rate-${cfg%%|*}"; : >"$U/busy-${cfg%%|*}"; : >"$U/cpu-${cfg%%|*}"; done
  : >"$U/verify-A0"
  for ((round = 1; round <= SPEED_ROUNDS; round++)); do
    for cfg in "${CONFIGS[@]}"; do
      name=${cfg%%|*} rest=${cfg#*|}
      side=${rest%%|*} args=${rest#*|}
      rate="" busy="" cpu=""
      if [ "$side" = A0 ]; then
        read -r cpu verify < <(a0_cpu) || true
        [ -n "${cpu:-}" ] || fail "no signatures measured ($name, unit $unit us)"
        echo "$verify" >>"$U/verify-A0"
      else
        # shellcheck disable=SC2086
        read -r rate busy cpu < <(card_window "$side" $args) || true
        if [ -z "${rate:-}" ]; then
          # Once in a while a loaded host starts a run too late for the
          # window: one more try, said in the log.
          say "unit $unit us: no signatures in $name's window; once more"
          # shellcheck disable=SC2086
          read -r rate busy cpu < <(card_window "$side" $args) || true
        fi
        [ -n "${rate:-}" ] || fail "no signatures measured ($name, unit $unit us)"
        echo "$rate" >>"$U/rate-$name"
        echo "$busy" >>"$U/busy-$name"
      fi
      echo "$cpu" >>"$U/cpu-$name"
    done
    say "unit $unit us: speed round $round of $SPEED_ROUNDS done"
  done
  # Late answers over every request of the unit's rounds.
  read -r late total < <(card_ctl stats | python3 -c '
import json, sys
d = json.load(sys.stdin)
print(d["late"], sum(r["count"] for r in d["requests"]))')
  card_stop
  echo "$late $total" >"$U/late"

  crt_ms=$(awk -v u="$unit" 'BEGIN {printf "%.2f", 54 * u / 1000}')
  a0=$(med "$U/cpu-A0-1")
  # A's CPU plus one public-exponent check (a verification's CPU in
  # software, A0's), round by round: what rustica's CPU per offloaded
  # signature is held to.
  paste -d' ' "$U/cpu-A-1" "$U/verify-A0" | awk '{printf "%.4f\n", $1 + $2}' >"$U/cpu-A+check"
  # A few late answers on a loaded host move the rates by about their
  # share; over 1 % of them the unit's timeline is the host's, not the
  # model's, and its rows are invalid.
  valid="" mark=""
  if [ "$late" != 0 ]; then
    share=$(awk -v l="$late" -v t="$total" 'BEGIN {printf "%.2f", 100 * l / t}')
    if awk -v s="$share" 'BEGIN {exit !(s > 1)}'; then
      valid="INVALID: $late of $total answers late ($share %): the card's own computation outlasted the service time. "
      mark="invalid (late answers)"
      say "unit $unit us: $late of $total answers late ($share %): its rows are marked invalid"
    else
      valid="$late of $total answers late ($share %). "
      say "unit $unit us: $late of $total answers late ($share %)"
    fi
  fi
  VARIES=varies fact card-speed "unit $unit us: the card against the host" "" \
    "$a0 ms CPU a signature, $(med "$U/verify-A0") ms a verification (software, user time)" "" "" \
    "${valid}2048-bit CRT $crt_ms ms on one of $CARDS queues = $(awk -v c="$crt_ms" -v s="$a0" \
      'BEGIN {printf "%.2f", c / s}') x A0's CPU per signature; late answers $late of $total"
  b1=$(compare "$U/rate-A-1" "$U/rate-B-1")
  lower=$(echo "$b1" | sed -n 's/^[^[]*\[\([0-9.]*\).*/\1/p')
  if [ -n "$mark" ]; then verdict=$mark
  elif awk -v l="$lower" 'BEGIN {exit !(l >= 0.95)}'; then verdict="pass"
  else verdict="fail (lower bound $lower < 0.95)"
  fi
  echo "$verdict" >"$U/verdict"
  cell() { echo "$(med "$U/rate-$1") sig/s, card busy $(med "$U/busy-$1")"; }
  VARIES=varies fact card-speed "unit $unit us: speed rsa2048, 1 process (median of $SPEED_ROUNDS)" \
    "$(cell A-1)" "" "$(cell B-1)" "$(cell C-1)" \
    "${valid}B/A $b1; B >= 0.95 x A: $verdict; B/C $(compare "$U/rate-C-1" "$U/rate-B-1")"
  VARIES=varies fact card-speed "unit $unit us: speed -multi 2 rsa2048 (median of $SPEED_ROUNDS)" \
    "$(cell A-2)" "" "$(cell B-2)" "" "${valid}B/A $(compare "$U/rate-A-2" "$U/rate-B-2")"
  VARIES=varies fact card-speed "unit $unit us: speed -multi 4 rsa2048 (median of $SPEED_ROUNDS)" \
    "$(cell A-4)" "" "$(cell B-4)" "" "${valid}B/A $(compare "$U/rate-A-4" "$U/rate-B-4")"
  VARIES=varies fact card-speed "unit $unit us: speed -async_jobs 32 rsa2048, 1 process (median of $SPEED_ROUNDS)" \
    "" "" "$(cell B-async)" "" "${valid}B async / A -multi 4: $(compare "$U/rate-A-4" "$U/rate-B-async")"
  VARIES=varies fact card-speed "unit $unit us: qemu CPU ms per signature, 1 process (median of $SPEED_ROUNDS)" \
    "$(med "$U/cpu-A-1")" "$a0 (software)" \
    "sync $(med "$U/cpu-B-1"); sync without the deadline $(med "$U/cpu-Bnd-1"); async_jobs 32 $(med "$U/cpu-B-async")" "$(med "$U/cpu-C-1")" \
    "${valid}lower is better: B/A $(compare "$U/cpu-A-1" "$U/cpu-B-1" --lower-is-better); B/(A + one verification) $(compare "$U/cpu-A+check" "$U/cpu-B-1" --lower-is-better); B without the deadline/(A + one verification) $(compare "$U/cpu-A+check" "$U/cpu-Bnd-1" --lower-is-better); B/(B without the deadline) $(compare "$U/cpu-Bnd-1" "$U/cpu-B-1" --lower-is-better); B async/A $(compare "$U/cpu-A-1" "$U/cpu-B-async" --lower-is-better); C/A $(compare "$U/cpu-A-1" "$U/cpu-C-1" --lower-is-better | as_c)"
done
