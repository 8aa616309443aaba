#!/usr/bin/env python3
"""One side across a card outage, for scripts/lib/s390x-card-maint.sh.

  s390x_card_maint.py run --side S --port P --cert PEM --card-socket SOCK \
      --sysfs DIR [--icastats FILE] [--rustica BIN --stats FILE] --out JSON
  s390x_card_maint.py facts A.json B.json C.json

`run` puts a closed-loop TLS load on one running server (one s390x
`openssl s_server` under qemu-user, started by the caller): CONCURRENCY
threads, each one new TLS 1.3 handshake after another, every server
certificate checked against PEM and every server signature
(CertificateVerify) verified by the host's OpenSSL, so a wrong signature
fails its handshake with BAD_SIGNATURE and is counted as wrong, apart
from other failures. Meanwhile it sends the outage to the shared card on
its control socket:

  before    PHASE s   nothing
  offline   PHASE s   every card offline (the kernel's ENODEV), then online
  after     AFTER s   nothing; is the side back on the card?
  stall     PHASE s   queue 00.0000 stalled STALL ms (ETIME at its end)
  tail      AFTER s   nothing

At every phase boundary it samples the card's answers to the side (its
`stats`: requests by type and outcome), the kernel's request counters in
the root's sysfs, libica's own counters (icastats: hardware and software
RSA operations) and, for rustica, its signature counters. After "online"
it polls the sysfs counters (once right after the samples, then every
50 ms) until a request reaches a queue again: the time back on the card,
or none for the rest of the process.
A handshake counts in the phase that holds the middle of its time.

`facts` turns the three sides' reports into the rows of
docs/comparison/<release>-card-maint.tsv, one line each: item, A, B, C,
note, "varies" or empty, separated by the unit separator (0x1f).
"""
import argparse
import json
import os
import ssl
import struct
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from card_maintenance import Card, Load, in_phase, percentile  # noqa: E402

POLL_S = 0.05
SEP = "\x1f"


def tls13_load(port, cert, concurrency):
    """card_maintenance.Load with one TLS 1.3 context that verifies the
    server against CERT."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.load_verify_locations(cert)  # check_hostname, CERT_REQUIRED
    ctx.minimum_version = ssl.TLSVersion.TLSv1_3
    return Load(port, [("1.3", ctx)], concurrency, b"GET / HTTP/1.0\r\n\r\n", 60, 0.05)


def icastats(path):
    """libica's RSA-ME and RSA-CRT counters (3.9's layout: entries of four
    big-endian u64, enc.hw enc.sw dec.hw dec.sw; RSA-ME is entry 30,
    RSA-CRT 31): {"hw": n, "sw": n} over both."""
    try:
        with open(path, "rb") as f:
            f.seek(30 * 32)
            data = f.read(64)
    except OSError:
        data = b""
    if len(data) < 64:
        return {"hw": 0, "sw": 0}
    v = struct.unpack(">8Q", data)
    return {"hw": v[0] + v[2] + v[4] + v[6], "sw": v[1] + v[3] + v[5] + v[7]}


def rustica_sign(rustica, stats):
    env = {k: v for k, v in os.environ.items() if k != "RUSTICA_MODULE"}
    out = subprocess.run([rustica, "stats", "--json", "--path", stats], capture_output=True,
                         text=True, check=False, env=env)
    if out.returncode != 0:
        return {}
    return json.loads(out.stdout)["ops"]["sign"]


def card_requests(card):
    """The card's requests since its reset, {"type outcome": n}."""
    d = json.loads(card.ctl("stats"))
    out = {}
    for r in d["requests"]:
        k = "%s %s" % (r["type"], r["outcome"])
        out[k] = out.get(k, 0) + r["count"]
    return out


def run(a):
    card = Card(a.card_socket, a.sysfs, a.cards)
    every = list(range(a.cards))
    phases = [
        ("before", a.phase, []),
        ("offline", a.phase, ["offline %d 600000" % c for c in every]),
        ("after", a.after, ["online %d" % c for c in every]),
        ("stall", a.phase, ["stall 0.0 %d" % a.stall_ms]),
        ("tail", a.after, []),
    ]

    def snapshot(actions=()):
        # The card's counts right before the phase's actions, the rest
        # right after them: a phase's card answers are the phase's own
        # (rustica's and libica's counters may place a few operations a
        # phase early, those that ran while they were read).
        snap = {"requests": card_requests(card)}
        for line in actions:
            card.ctl(line)
        t = time.time()
        snap.update({
            "received": [card.received(c) for c in every],
            "libica": icastats(a.icastats) if a.icastats else {"hw": 0, "sw": 0},
            "rustica": rustica_sign(a.rustica, a.stats) if a.rustica else {},
        })
        return snap, t

    load = tls13_load(a.port, a.cert, a.concurrency)
    # The first handshake (module loading, key set-up) before the clock starts.
    warm = tls13_load(a.port, a.cert, 1)
    warm.threads[0].start()
    deadline = time.time() + 120
    while not warm.records and time.time() < deadline:
        time.sleep(0.1)
    warm.finish(60)
    if not warm.records or warm.records[0][3] != "ok":
        print("s390x_card_maint: side %s: no first handshake: %s"
              % (a.side, warm.records[0][4] if warm.records else "timeout"), file=sys.stderr)
        return 1
    card.ctl("reset")
    load.start()
    snaps, starts = [], []
    back_ms, watch = None, None  # watch: (since, baseline received)
    for name, seconds, actions in phases:
        snap, t = snapshot(actions)
        snaps.append(snap)
        starts.append(t)
        if name == "after":
            watch = (t, sum(snap["received"]))
        end = t + seconds
        # The first look right after the samples (reading rustica's
        # counters takes tens of milliseconds), then one every 50 ms.
        while True:
            if watch is not None and back_ms is None and sum(card.received(c) for c in every) > watch[1]:
                back_ms = (time.time() - watch[0]) * 1000
            if time.time() >= end:
                break
            time.sleep(POLL_S)
    stop_t = time.time()
    stuck = load.finish(60)
    # A request a queue still holds is answered before the last sample.
    time.sleep(0.5)
    snaps.append(snapshot()[0])
    starts.append(stop_t)

    records = sorted(load.records)
    rows = []
    for i, (name, _, _) in enumerate(phases):
        lo, hi = starts[i], starts[i + 1]
        mine, gap = in_phase(records, lo, hi, i == len(phases) - 1)
        lat = [(r[1] - r[0]) * 1000 for r in mine if r[3] == "ok"]
        s0, s1 = snaps[i], snaps[i + 1]
        req = {k: s1["requests"].get(k, 0) - s0["requests"].get(k, 0)
               for k in set(s0["requests"]) | set(s1["requests"])}
        rows.append({
            "phase": name, "seconds": round(hi - lo, 2),
            "ok": len(lat), "failed": sum(r[3] == "failed" for r in mine),
            "wrong": sum(r[3] == "wrong" for r in mine),
            "p50_ms": round(percentile(lat, 0.5), 1) if lat else None,
            "p99_ms": round(percentile(lat, 0.99), 1) if lat else None,
            "max_ms": round(max(lat), 1) if lat else None,
            "gap_ms": round(gap),
            "requests": {k: v for k, v in sorted(req.items()) if v},
            "received": [s1["received"][c] - s0["received"][c] for c in every],
            "libica": {k: s1["libica"][k] - s0["libica"][k] for k in ("hw", "sw")},
            "rustica": {k: s1["rustica"].get(k, 0) - s0["rustica"].get(k, 0)
                        for k in ("libica", "software", "fallback", "failed")} if a.rustica else None,
        })
    errors = {}
    for r in records:
        if r[3] != "ok":
            errors[r[4]] = errors.get(r[4], 0) + 1
    report = {
        "side": a.side, "phases": rows, "stall_ms": a.stall_ms, "cards": a.cards,
        "back_ms": None if back_ms is None else round(back_ms),
        "watched_s": round(stop_t - watch[0], 1) if watch else None,
        "errors": errors, "stuck_threads": stuck,
    }
    with open(a.out, "w") as f:
        json.dump(report, f, indent=1)
    for r in rows:
        print("side %s %-8s %5.1f s: %4d ok, %d failed, %d wrong, max %s ms, gap %s ms, card %s, libica hw/sw %d/%d%s"
              % (a.side, r["phase"], r["seconds"], r["ok"], r["failed"], r["wrong"], r["max_ms"], r["gap_ms"],
                 r["requests"] or "none", r["libica"]["hw"], r["libica"]["sw"],
                 ", rustica %s" % r["rustica"] if r["rustica"] is not None else ""), file=sys.stderr)
    print("side %s: back on the card %s" % (a.side, "%d ms after online" % back_ms if back_ms is not None
                                            else "never (watched %.1f s)" % report["watched_s"]), file=sys.stderr)
    for e, n in sorted(errors.items(), key=lambda kv: -kv[1])[:5]:
        print("side %s: %d x %s" % (a.side, n, e[:160]), file=sys.stderr)
    return 0


# --- facts ------------------------------------------------------------------------

def phase(rep, name):
    return next(p for p in rep["phases"] if p["phase"] == name)


def answers(p, kinds=None):
    """The card's answers in a phase, by outcome ({"ok": n, "ENODEV": n})."""
    out = {}
    for k, v in p["requests"].items():
        typ, outcome = k.split(" ", 1)
        if kinds is None or typ in kinds:
            out[outcome] = out.get(outcome, 0) + v
    return out


def types(p):
    got = sorted({k.split(" ", 1)[0] for k, v in p["requests"].items() if v})
    return " and ".join(t.upper() for t in got) or "none"


def requests_text(p):
    """The card's answers in a phase by type and outcome: "CRT ok 420, ME ok 13"."""
    return ", ".join("%s %s %d" % (k.split(" ", 1)[0].upper(), k.split(" ", 1)[1], v)
                     for k, v in sorted(p["requests"].items())) or "none"


def outage_answers(rep):
    """Stable: what the card answered the side while every card was offline."""
    a = answers(phase(rep, "offline"))
    # The card counts a request when it answers it: one a queue held when
    # the cards went offline completes (docs/card-model.md, "offline")
    # and counts here, ok. A synchronous server has at most one.
    if a.get("ok", 0) <= 1:
        a.pop("ok", None)
    if not a:
        return "no request"
    if set(a) == {"ENODEV"}:
        if a["ENODEV"] == 1:
            return "ENODEV to its first request, then no request"
        return "ENODEV to every request"
    return "; ".join(sorted(a))


def who_computed(rep):
    """Stable: who made the signatures while every card was offline."""
    p = phase(rep, "offline")
    lib, rs = p["libica"], p["rustica"]
    if lib["hw"] == 0 and lib["sw"] == 0:
        return "OpenSSL's own software (no libica call)"
    # libica's counters are read a few milliseconds after the phase's
    # actions: an operation of the phase before may be among them.
    if lib["sw"] >= 0.9 * p["ok"] and lib["hw"] <= 2:
        text = "libica's own software fallback, inside the libica call"
        if rs is not None:
            if rs["fallback"] == 0 and rs["failed"] == 0:
                text += "; rustica got libica's answers and counted them as libica"
            else:
                text += "; rustica recomputed %d, failed %d" % (rs["fallback"], rs["failed"])
        return text
    return "libica hardware %d, software %d" % (lib["hw"], lib["sw"])


def back_text(rep):
    return "yes, by itself" if rep["back_ms"] is not None else "no: not for the rest of the process"


def stall_text(rep):
    p = phase(rep, "stall")
    a = answers(p)
    if not a:
        return "no request (off the card since the outage)"
    held = a.get("ETIME", 0)
    if not held:
        return "no request on the stalled queue"
    text = "%d request%s held, answered ETIME at the stall's end" % (held, "" if held == 1 else "s")
    wait, rs = p["max_ms"] or 0, p["rustica"]
    if wait >= 0.9 * rep["stall_ms"]:
        text += "; the server waited for it"
        if p["libica"]["sw"] >= held:
            text += ", then libica's software signed"
    elif rs is not None and rs["fallback"] >= held:
        text += "; rustica stopped waiting at its deadline (offload-timeout-ms) and signed in software"
    else:
        text += "; the server did not wait for it"
    return text


def failures(reps):
    return ["%d failed, %d wrong" % (sum(p["failed"] for p in r["phases"]), sum(p["wrong"] for p in r["phases"]))
            for r in reps]


def facts(paths):
    reps = [json.load(open(p)) for p in paths]
    rows = []

    def row(item, cells, note="", varies=""):
        rows.append(SEP.join([item] + cells + [note, varies]))

    names = [p["phase"] for p in reps[0]["phases"]]
    secs = lambda r: " / ".join("%g" % p["seconds"] for p in r["phases"])  # noqa: E731
    row("handshakes that failed or had a wrong signature, all phases", failures(reps),
        "every server signature verified by the client (host OpenSSL)")
    row("before the outage: requests on the card", [types(phase(r, "before")) for r in reps],
        "the side's own design: docs/comparison.md, requests per operation")
    row("every card offline: what the card answered", [outage_answers(r) for r in reps],
        "with no card online the kernel answers ENODEV")
    row("every card offline: who made the signatures", [who_computed(r) for r in reps],
        "libica's counters (icastats, hardware and software)")
    row("cards back online: requests on the card again", [back_text(r) for r in reps],
        "the same process, nothing restarted")
    row("queue 00.0000 stalled %d s" % (reps[0]["stall_ms"] // 1000), [stall_text(r) for r in reps],
        "ETIME: the kernel's answer to a request its queue did not answer in time")
    # What varies run to run: counts and times.
    row("time back on the card after online",
        ["%d ms" % r["back_ms"] if r["back_ms"] is not None else "never (watched %.1f s)" % r["watched_s"]
         for r in reps], "the root's sysfs request counters, looked at right after the phase's samples, then every 50 ms: an upper bound", "varies")
    row("handshakes per phase (%s)" % " / ".join(names),
        [" / ".join(str(p["ok"]) for p in r["phases"]) for r in reps],
        "phases of %s s" % secs(reps[0]), "varies")
    row("card answers per phase", [" / ".join(requests_text(p) for p in r["phases"]) for r in reps],
        "the card's stats for the side's process", "varies")
    row("libica hardware/software per phase",
        [" / ".join("%d/%d" % (p["libica"]["hw"], p["libica"]["sw"]) for p in r["phases"])
         if any(p["libica"]["hw"] or p["libica"]["sw"] for p in r["phases"]) else "no libica"
         for r in reps], "icastats: RSA-ME and RSA-CRT", "varies")
    row("rustica's signatures per phase (libica/fallback)",
        [" / ".join("%d/%d" % (p["rustica"]["libica"], p["rustica"]["fallback"]) for p in r["phases"])
         if r["phases"][0]["rustica"] is not None else "" for r in reps],
        "rustica stats: fallback = recomputed by rustica in software", "varies")
    row("median / 99th percentile handshake per phase, ms",
        [" / ".join("%.0f-%.0f" % (p["p50_ms"], p["p99_ms"]) if p["p50_ms"] is not None else "–"
                    for p in r["phases"]) for r in reps],
        "each phase's p50-p99, under qemu-user on a shared host", "varies")
    row("longest handshake per phase, ms",
        [" / ".join("%.0f" % p["max_ms"] if p["max_ms"] is not None else "–" for p in r["phases"]) for r in reps],
        "under qemu-user on a shared host", "varies")
    for line in rows:
        print(line)
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--side", required=True)
    r.add_argument("--port", type=int, required=True)
    r.add_argument("--cert", required=True)
    r.add_argument("--card-socket", required=True)
    r.add_argument("--sysfs", required=True)
    r.add_argument("--cards", type=int, default=2)
    r.add_argument("--icastats")
    r.add_argument("--rustica")
    r.add_argument("--stats")
    r.add_argument("--out", required=True)
    r.add_argument("--concurrency", type=int, default=2)
    r.add_argument("--phase", type=float, default=5.0)
    r.add_argument("--after", type=float, default=6.0)
    r.add_argument("--stall-ms", type=int, default=3000)
    f = sub.add_parser("facts")
    f.add_argument("reports", nargs=3)
    a = ap.parse_args()
    if a.cmd == "run":
        return run(a)
    return facts(a.reports)


if __name__ == "__main__":
    sys.exit(main())
