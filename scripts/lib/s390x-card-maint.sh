# shellcheck shell=bash
# Sourced by scripts/s390x-card.sh with S390X_CARD_MAINT=1: the card
# maintenance scenario (docs/card-model.md, "Card maintenance under
# load") for the s390x sides, one long-lived process each, at small
# scale. Uses its side_cmd, run_side, host_openssl, fact, VERSION_OPENSSL,
# ROOT, KEYS, OUT, CARDS, SOCKET, MODULE, ICASTATS and RUSTICA,
# scripts/lib/card.sh's card_start, card_ctl, card_stop and CARD_BIN, and
# scripts/lib/common.sh's say, fail and die.
#
# For A (stock OpenSSL 3.5's own offload), B (rustica on Debian's libica3)
# and C (the ibmca engine on the same libica), one after the other: one
# `openssl s_server` under qemu-user (TLS 1.3, ChaCha20-Poly1305, which
# every side runs under qemu; 2048-bit key) under a closed-loop load of 2
# host client threads, each one new handshake after another, every server
# signature verified by the host. While it runs, on the card's control
# socket: every card offline for S390X_CARD_MAINT_PHASE seconds (default
# 5), then online; later queue 00.0000 stalled 3 s (scripts/lib/
# s390x_card_maint.py has the schedule and what it samples). The card
# runs with --sysfs on the root's /sys, so its online files and request
# counters are the ones the sides would see on a host. About 30 s a side.
#
# Facts go to $OUT/maint-facts.tsv (same columns as facts.tsv), recorded
# as docs/comparison/<release>-card-maint.tsv. Fails when rustica's side
# has a failed or wrong handshake or does not come back to the card.
# OpenSSL 3.0 and 3.1 have no offload of their own (no side A), and B and
# C run the same libica (3.9.0) and engine (1.4.0) releases on Debian 12
# as on 13: skipped there.
if [[ "$VERSION_OPENSSL" == 3.0.* || "$VERSION_OPENSSL" == 3.1.* ]]; then
  say "the outage rows are for OpenSSL 3.2 and later (A's own offload): skipped on $VERSION_OPENSSL"
  return 0
fi
# libica's counters: the file must exist in the root, or qemu-user resolves
# libica's /dev/shm/icastats_<uid> on the host.
: >"$ICASTATS"
# As in the speed rows: without sections 1 and 2 nothing else proves that
# B loads rustica.
run_side B list -providers 2>/dev/null | grep -q "name: rustica" \
  || die "side B does not load rustica (OPENSSL_CONF $OUT/b.cnf, module $MODULE)"

MAINT_PHASE=${S390X_CARD_MAINT_PHASE:-5}
MAINT_FACTS=$OUT/maint-facts.tsv
: >"$MAINT_FACTS"
maint_key=$KEYS/key-2048.pem
# The clients check the server's certificate against this one.
host_openssl req -x509 -new -key "$maint_key" -subj /CN=localhost -addext subjectAltName=DNS:localhost \
  -days 2 -out "$OUT/maint-cert.pem" 2>>"$OUT/run.log" || die "could not make the outage run's certificate"
# 50 us: a 2048-bit CRT is 2.7 ms on a queue, the engine's private ME
# 10.8 ms; no side is near the card's capacity with one synchronous server.
MAINT_UNIT_US=${S390X_CARD_MAINT_UNIT_US:-50}
card_start "$CARD_BIN" "$SOCKET" "$OUT/card.log" --cards "$CARDS" --unit-us "$MAINT_UNIT_US" \
  --sysfs "$ROOT/sys" || die "no card"

maint_start=$SECONDS
server=""
# Nothing of a side outlives the script, whatever ends it.
maint_stop() {
  [ -n "$server" ] || return 0
  # SIGKILL: qemu-user can leave SIGTERM pending in a guest with threads.
  kill -KILL -- -"$server" 2>/dev/null || true
  wait "$server" 2>/dev/null || true
  server=""
}
trap 'maint_stop; card_stop' EXIT
for side in A B C; do
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  side_cmd "$side"
  # A process group of its own (setsid from this shell: no fork), so that
  # the end of the run stops the server and nothing of it outlives it.
  setsid "${SIDE_CMD[@]}" s_server -accept "$port" -cert "$OUT/maint-cert.pem" -key "$maint_key" \
    -tls1_3 -ciphersuites TLS_CHACHA20_POLY1305_SHA256 -www -quiet </dev/null >"$OUT/maint-server-$side.log" 2>&1 &
  server=$!
  for _ in $(seq 150); do
    python3 -c "import socket; socket.create_connection(('127.0.0.1',$port),0.2)" 2>/dev/null && break
    sleep 0.2
  done
  extra=()
  [ "$side" = A ] || extra+=(--icastats "$ICASTATS")
  [ "$side" = B ] && extra+=(--rustica "$RUSTICA" --stats "$OUT/stats-B")
  say "outage: side $side (s_server, 2 client threads)"
  python3 scripts/lib/s390x_card_maint.py run --side "$side" --port "$port" --cert "$OUT/maint-cert.pem" \
    --card-socket "$SOCKET" --sysfs "$ROOT/sys" --cards "$CARDS" --out "$OUT/maint-$side.json" \
    --phase "$MAINT_PHASE" --after "$((MAINT_PHASE + 1))" "${extra[@]}" 2>&1 | tee -a "$OUT/run.log" >&2
  ok=${PIPESTATUS[0]}
  maint_stop
  [ "$ok" = 0 ] || fail "the outage run on side $side failed (log: $OUT/maint-server-$side.log)"
  # Back to a healthy card for the next side.
  for ((c = 0; c < CARDS; c++)); do card_ctl online "$c" >/dev/null; done
  card_ctl resume 0.0 >/dev/null
done
card_stop
trap card_stop EXIT

FACTS_MAIN=$FACTS
FACTS=$MAINT_FACTS
VARIES=varies fact card-maint "what ran" "openssl $VERSION_OPENSSL, own offload" "" \
  "openssl $VERSION_OPENSSL, rustica, libica3" "openssl $VERSION_OPENSSL, the ibmca engine, libica3" \
  "one s_server per side; $CARDS cards, unit $MAINT_UNIT_US us"
while IFS=$'\x1f' read -r item a b c note varies; do
  VARIES=$varies fact card-maint "$item" "$a" "" "$b" "$c" "$note"
done < <(python3 scripts/lib/s390x_card_maint.py facts "$OUT/maint-A.json" "$OUT/maint-B.json" "$OUT/maint-C.json")
FACTS=$FACTS_MAIN
[ "$(wc -l <"$MAINT_FACTS")" -gt 1 ] || fail "no outage rows were written (above)"
say "outage rows: $((SECONDS - maint_start)) s for the three sides"

# rustica's side must come through whole and return to the card.
python3 - "$OUT/maint-B.json" <<'EOF' || fail "rustica's side did not come through the outage as it must (above)"
import json, sys
r = json.load(open(sys.argv[1]))
bad = sum(p["failed"] + p["wrong"] for p in r["phases"])
if bad:
    print("rustica: %d handshakes failed or had a wrong signature across the outage" % bad, file=sys.stderr)
if r["back_ms"] is None:
    print("rustica: no request reached the card after the cards came back", file=sys.stderr)
sys.exit(1 if bad or r["back_ms"] is None else 0)
EOF
