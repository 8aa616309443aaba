#!/usr/bin/env python3
"""Load and fault schedule of scripts/card-maintenance.sh (one server).

Runs a closed-loop TLS client load (CONCURRENCY threads, each one new,
non-resumed handshake after another, half TLS 1.3 and half TLS 1.2
ECDHE-RSA, the server certificate verified against the CA every time)
against a running server while it sends the maintenance faults to the
shared card (rustica-card) on its control socket. At every phase boundary
it samples rustica's counters (`rustica stats --json --path STATS`), the
card's `stats` and its sysfs request counters; after every "card back" it
polls the card's sysfs counters every 50 ms until rustica's requests reach
the card again.

A handshake whose server signature does not verify fails in OpenSSL's
client with reason BAD_SIGNATURE (TLS 1.3 CertificateVerify, TLS 1.2
ServerKeyExchange): counted as "wrong", apart from other failures.
A handshake counts in the phase that holds the middle of its duration.

Writes OUT/phases-SERVER.tsv (one row per phase), OUT/handshakes-SERVER.tsv
(one row per handshake) and OUT/errors-SERVER.txt, and prints the table.
"""
import argparse
import json
import os
import socket
import ssl
import struct
import subprocess
import sys
import threading
import time

POLL_S = 0.05


def parse_args():
    p = argparse.ArgumentParser()
    p.add_argument("--server", required=True)
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--ca", required=True)
    p.add_argument("--card-socket", required=True)
    p.add_argument("--sysfs", required=True)
    p.add_argument("--cards", type=int, default=2)
    p.add_argument("--rustica", required=True)
    p.add_argument("--stats", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--concurrency", type=int, default=8)
    p.add_argument("--scale", type=float, default=1.0,
                   help="multiplies every phase length (tests of the script)")
    return p.parse_args()


class Card:
    """The card's control socket (docs/card-model.md, "Socket protocol")."""

    def __init__(self, path, sysfs, cards):
        self.path, self.sysfs, self.cards = path, sysfs, cards

    def ctl(self, line):
        data = line.encode()
        with socket.socket(socket.AF_UNIX) as s:
            s.settimeout(5)
            s.connect(self.path)
            s.sendall(struct.pack("<BII", 3, os.getpid(), len(data)) + data)
            n = struct.unpack("<I", self._read(s, 4))[0]
            text = self._read(s, n).decode(errors="replace")
        if text.startswith("error"):
            raise RuntimeError("card: %s: %s" % (line, text))
        return text

    @staticmethod
    def _read(s, n):
        b = b""
        while len(b) < n:
            chunk = s.recv(n - len(b))
            if not chunk:
                raise RuntimeError("card closed the control connection")
            b += chunk
        return b

    def outcomes(self):
        """Requests by outcome (ok, corrupt, EIO, ENODEV, ETIME, ...)."""
        d = json.loads(self.ctl("stats"))
        out = {}
        for r in d["requests"]:
            out[r["outcome"]] = out.get(r["outcome"], 0) + r["count"]
        return out

    def _count(self, rel):
        try:
            with open(os.path.join(self.sysfs, "devices/ap", rel)) as f:
                return int(f.read().strip() or 0)
        except (OSError, ValueError):
            return 0

    def received(self, card):
        """Requests card CARD's queues received (sysfs request_count)."""
        return self._count("card%02x/request_count" % card)

    def queue_received(self, card, domain):
        return self._count("card%02x/%02x.%04x/request_count" % (card, card, domain))


def rustica_sign(rustica, stats):
    out = subprocess.run([rustica, "stats", "--json", "--path", stats],
                         capture_output=True, text=True, check=False)
    if out.returncode != 0:
        return {"libica": 0, "software": 0, "fallback": 0, "failed": 0, "async": 0}
    return json.loads(out.stdout)["ops"]["sign"]


def handshake(port, ctx, request, timeout):
    """One new TLS connection to 127.0.0.1:port (a new SSLSocket, no
    session given: never resumed), one request, the answer read to its end.
    Returns (time the handshake ended, outcome, error): outcome "ok",
    "wrong" (the server's signature did not verify: BAD_SIGNATURE) or
    "failed" (anything else, a failed certificate check and timeouts
    among them)."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as raw:
            with ctx.wrap_socket(raw, server_hostname="localhost") as s:
                t1 = time.time()
                s.sendall(request)
                while s.recv(4096):
                    pass
        return t1, "ok", ""
    except ssl.SSLError as e:
        outcome = "wrong" if e.reason == "BAD_SIGNATURE" else "failed"
        return time.time(), outcome, "%s: %s" % (e.reason, e)
    except (OSError, ValueError) as e:
        return time.time(), "failed", "%s: %s" % (type(e).__name__, e)


def tls_contexts(ca):
    """The x86 scenario's two client contexts: TLS 1.3, and TLS 1.2 with
    ECDHE-RSA; each verifies the server against CA, no session tickets."""
    contexts = []
    for version in (ssl.TLSVersion.TLSv1_3, ssl.TLSVersion.TLSv1_2):
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.load_verify_locations(ca)  # check_hostname, CERT_REQUIRED
        ctx.minimum_version = ctx.maximum_version = version
        ctx.options |= ssl.OP_NO_TICKET
        if version == ssl.TLSVersion.TLSv1_2:
            ctx.set_ciphers("ECDHE-RSA-AES128-GCM-SHA256")
        contexts.append(("1.3" if version == ssl.TLSVersion.TLSv1_3 else "1.2", ctx))
    return contexts


class Load:
    """CONCURRENCY threads of back-to-back new handshakes, thread i with
    contexts[i % len(contexts)] (label, SSLContext); after a handshake that
    is not ok a thread pauses PAUSE seconds (no busy loop against a
    refusing server)."""

    def __init__(self, port, contexts, concurrency, request, timeout, pause):
        self.port, self.stop = port, threading.Event()
        self.contexts, self.request = contexts, request
        self.timeout, self.pause = timeout, pause
        self.records = []  # (start, end, label, outcome, error)
        self.lock = threading.Lock()
        self.threads = [threading.Thread(target=self.run, args=(i,), daemon=True)
                        for i in range(concurrency)]

    def start(self):
        for t in self.threads:
            t.start()

    def run(self, i):
        label, ctx = self.contexts[i % len(self.contexts)]
        while not self.stop.is_set():
            t0 = time.time()
            t1, outcome, error = handshake(self.port, ctx, self.request, self.timeout)
            with self.lock:
                self.records.append((t0, t1, label, outcome, error))
            if outcome != "ok":
                time.sleep(self.pause)

    def finish(self, timeout):
        self.stop.set()
        end = time.time() + timeout
        for t in self.threads:
            t.join(max(0.1, end - time.time()))
        return sum(t.is_alive() for t in self.threads)


def in_phase(records, lo, hi, last):
    """The records (sorted, from Load) of the phase [lo, hi), and its
    longest time in ms with no handshake completed. A handshake belongs to
    the phase that holds the middle of its time: one that started just
    before a stall and waited for it belongs to the stall. The last phase
    keeps those that end late."""
    mine = [r for r in records if lo <= (r[0] + r[1]) / 2 and (last or (r[0] + r[1]) / 2 < hi)]
    ends = sorted([lo] + [r[1] for r in records if lo <= r[1] < hi] + [hi])
    gap = max((b - c for c, b in zip(ends, ends[1:])), default=0) * 1000
    return mine, gap


def schedule(cards):
    """(phase, seconds, actions at its start, watch after its start).

    A watch (label, kind, ...) is the "card back" the phase starts with;
    its time is reported on the fault phase's row (the phase before)."""
    both = ["offline %d 600000" % c for c in range(cards)]
    return [
        ("baseline", 8, [], None),
        ("1-of-2 offline 10s", 10, ["offline 1 600000"], None),
        ("after 1-of-2 back", 5, ["online 1"], ("card", [1])),
        ("both offline 5s", 5, both, None),
        ("after both back", 5, ["online %d" % c for c in range(cards)], ("card", list(range(cards)))),
        ("queue 00.0000 stalled 10s", 10, ["stall 0.0 600000"], None),
        ("after stall resumed", 4, ["resume 0.0"], ("queue", 0, 0)),
        ("service time 20x 5s", 5, ["spike 20 100000000"], None),
        ("after spike", 3, ["spike 1 0"], ("card", list(range(cards)))),
        ("EIO burst (100)", 3, ["fail EIO 100"], ("consumed", "EIO", 100)),
        ("corrupt run (100)", 3, ["corrupt 100"], ("consumed", "corrupt", 100)),
        ("tail", 3, [], None),
    ]


def percentile(values, q):
    if not values:
        return None
    v = sorted(values)
    return v[min(len(v) - 1, int(q * len(v)))]


def main():
    a = parse_args()
    card = Card(a.card_socket, a.sysfs, a.cards)
    phases = schedule(a.cards)
    load = Load(a.port, tls_contexts(a.ca), a.concurrency,
                b"GET / HTTP/1.0\r\nHost: localhost\r\n\r\n", 30, 0.01)

    def snapshot():
        return {
            "t": time.time(),
            "sign": rustica_sign(a.rustica, a.stats),
            "received": [card.received(c) for c in range(a.cards)],
            "outcomes": card.outcomes(),
        }

    card.ctl("reset")
    load.start()
    snaps, starts, back = [], [], {}
    # The watch in progress: (row it reports on, label, kind, since, state).
    watch = None

    def poll_watch(now):
        nonlocal watch
        if watch is None:
            return
        row, kind, since, state = watch
        if kind[0] == "consumed":
            # The burst is over when the card answered all of it; from then
            # on, wait for the next request that reaches a queue.
            if state is None:
                if card.outcomes().get(kind[1], 0) - base_outcomes.get(kind[1], 0) >= kind[2]:
                    watch = (row, ("card", list(range(a.cards))), now,
                             sum(card.received(c) for c in range(a.cards)))
                return
        if kind[0] == "card":
            n = sum(card.received(c) for c in kind[1])
        else:
            n = card.queue_received(kind[1], kind[2])
        if state is None:
            watch = (row, kind, since, n)
        elif n > state:
            back[row] = (now - since) * 1000
            watch = None

    for i, (name, seconds, actions, watch_kind) in enumerate(phases):
        if watch is not None:
            back.setdefault(watch[0], None)  # never came back within its phase
            watch = None
        base_outcomes = card.outcomes() if watch_kind and watch_kind[0] == "consumed" else {}
        snaps.append(snapshot())
        t = time.time()
        for line in actions:
            card.ctl(line)
        starts.append(t)
        if watch_kind is not None:
            # "Back" is the moment the actions were sent; the baseline
            # count is read right after them (state None), so only
            # requests that reach the card from then on count.
            row = i - 1 if watch_kind[0] != "consumed" else i
            watch = (row, watch_kind, time.time(), None)
            if watch_kind[0] != "consumed":
                poll_watch(time.time())
        end = t + seconds * a.scale
        while time.time() < end:
            time.sleep(POLL_S)
            poll_watch(time.time())
    if watch is not None:
        back.setdefault(watch[0], None)
    stop_t = time.time()
    stuck = load.finish(40)
    # Requests still held by a queue finish before the last sample.
    time.sleep(0.5)
    snaps.append(snapshot())
    starts.append(stop_t)

    records = sorted(load.records)
    rows = []
    for i, (name, seconds, _, _) in enumerate(phases):
        lo, hi = starts[i], starts[i + 1]
        mine, gap = in_phase(records, lo, hi, i == len(phases) - 1)
        ok = [r for r in mine if r[3] == "ok"]
        lat = [(r[1] - r[0]) * 1000 for r in ok]
        s0, s1 = snaps[i], snaps[i + 1]
        d = {k: s1["sign"][k] - s0["sign"][k] for k in ("libica", "software", "fallback", "failed", "async")}
        recv = [s1["received"][c] - s0["received"][c] for c in range(a.cards)]
        outs = {k: s1["outcomes"].get(k, 0) - s0["outcomes"].get(k, 0)
                for k in set(s1["outcomes"]) | set(s0["outcomes"])}
        outs = {k: v for k, v in outs.items() if v}
        b = back.get(i, "")
        rows.append({
            "server": a.server, "phase": name, "seconds": "%.1f" % (hi - lo),
            "handshakes": len(ok), "failed": sum(r[3] == "failed" for r in mine),
            "wrong": sum(r[3] == "wrong" for r in mine),
            "p50_ms": "%.1f" % percentile(lat, 0.50) if lat else "-",
            "p99_ms": "%.1f" % percentile(lat, 0.99) if lat else "-",
            "max_ms": "%.1f" % max(lat) if lat else "-",
            "max_gap_ms": "%.0f" % gap,
            "sign_libica": d["libica"], "sign_fallback": d["fallback"],
            "sign_software": d["software"], "sign_failed": d["failed"], "sign_async": d["async"],
            "card_requests": "/".join(str(n) for n in recv),
            "card_answers": ",".join("%s:%d" % kv for kv in sorted(outs.items())) or "-",
            "back_to_card_ms": "" if b == "" else ("never" if b is None else "%.0f" % b),
        })

    os.makedirs(a.out, exist_ok=True)
    cols = list(rows[0])
    with open(os.path.join(a.out, "phases-%s.tsv" % a.server), "w") as f:
        f.write("\t".join(cols) + "\n")
        for r in rows:
            f.write("\t".join(str(r[c]) for c in cols) + "\n")
    with open(os.path.join(a.out, "handshakes-%s.tsv" % a.server), "w") as f:
        f.write("start\tlatency_ms\ttls\toutcome\n")
        for r in records:
            f.write("%.3f\t%.1f\t%s\t%s\n" % (r[0] - starts[0], (r[1] - r[0]) * 1000, r[2], r[3]))
    errors = {}
    for r in records:
        if r[3] != "ok":
            errors[r[4]] = errors.get(r[4], 0) + 1
    with open(os.path.join(a.out, "errors-%s.txt" % a.server), "w") as f:
        for e, n in sorted(errors.items(), key=lambda kv: -kv[1]):
            f.write("%d\t%s\n" % (n, e))

    head = ["phase", "s", "done", "failed", "wrong", "p50 ms", "p99 ms", "max ms", "max gap ms",
            "libica", "fallback", "software", "card reqs c0/c1", "card answers", "back to card ms"]
    keys = ["phase", "seconds", "handshakes", "failed", "wrong", "p50_ms", "p99_ms", "max_ms",
            "max_gap_ms", "sign_libica", "sign_fallback", "sign_software", "card_requests",
            "card_answers", "back_to_card_ms"]
    print("| " + " | ".join(head) + " |")
    print("|" + "|".join("---" if k in ("phase", "card_answers") else "---:" for k in keys) + "|")
    for r in rows:
        print("| " + " | ".join(str(r[k]) if r[k] != "" else "-" for k in keys) + " |")
    if errors:
        print("handshake errors:")
        for e, n in sorted(errors.items(), key=lambda kv: -kv[1])[:8]:
            print("  %6d  %s" % (n, e[:160]))
    if stuck:
        print("%d client thread(s) still in a handshake 40 s after the load stopped" % stuck)
    return 0


if __name__ == "__main__":
    sys.exit(main())
