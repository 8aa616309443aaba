#!/usr/bin/env python3
"""docs/comparison.md from the facts the s390x lane measures.

scripts/s390x-three-sides.sh writes one facts.tsv per Debian release
(section, item, A, B, C, note, "varies" or empty). The lane keeps a copy
of each under docs/comparison/<release>.tsv when asked to, and this script
renders the page from those copies. The card's facts have a fourth side,
A0 (section, item, A, A0, B, C, note, varies): <release>-card.tsv
(scripts/s390x-card.sh), <release>-card-lab.tsv (scripts/s390x-card-lab.sh)
and <release>-card-maint.tsv (the outage rows, S390X_CARD_MAINT=1). The
instruction counts on the card have six sides (section, item, A, A0, B,
B without the deadline, B software, C, note, varies):
<release>-card-instructions.tsv (workshop/scripts/s390x-count.sh --record, which
checks a fresh count against it itself, within its tolerance, with --check):

  workshop/scripts/comparison.py --write                 render docs/comparison.md (and the
                                                 card-speed and x86 card tables in
                                                 docs/performance.md)
  workshop/scripts/comparison.py --check                 both match the copies
  workshop/scripts/comparison.py --check-facts R FILE    a fresh run of release R
                                                 agrees with docs/comparison/R.tsv

docs/performance.md's x86 card tables come from facts too:
docs/comparison/x86-card-async.tsv (with -25us and -10us at faster card
units) and x86-card-haproxy.tsv, which
workshop/scripts/bench-async.sh and workshop/scripts/bench-haproxy.sh write with
BENCH_FACTS=FILE (kind, then its cells: "run" date, command, what ran;
"row" the table's cells; "load" the load after; "counters" side, rustica's
counters). --write renders them between their markers, --check compares.
They are measurements of one run on one machine, not checked against a
fresh run: record them again with the command each table's lead-in names.

--check-facts compares every fact exactly except those marked "varies"
(versions, timings, key generation's random counts), which must only
exist. So a change of behaviour on any side (rustica's, the engine's,
libica's, OpenSSL's) fails the lane until the page is regenerated:
    S390X_LANE_RECORD=1 scripts/s390x-lane.sh && workshop/scripts/comparison.py --write
"""

import argparse
import pathlib
import sys

import comparison_instructions
from comparison_text import prose, wrap_page

ROOT = pathlib.Path(__file__).resolve().parent.parent.parent
FACTS_DIR = ROOT / "docs" / "comparison"
PAGE = ROOT / "docs" / "comparison.md"
# docs/performance.md holds the card-speed rows too, between these markers.
PERF = ROOT / "docs" / "performance.md"
PERF_BEGIN = "<!-- card-speed rows: workshop/scripts/comparison.py --write renders this table -->"
PERF_END = "<!-- end of the card-speed rows -->"
RELEASES = [("bookworm", "Debian 12"), ("stable", "Debian 13")]

# docs/performance.md's x86 card tables: facts file (docs/comparison/NAME.tsv),
# what a row's cells are, the table's head (one column per cell), and the
# counters' sides with their names.
X86_TABLES = {
    "x86-card-async": {
        "what": "private-key signatures/s, median (range); B/A ratios are rustica with `async = auto` (B) against the other side (A)",
        "head": [
            "key",
            "run",
            "rustica (async = auto) sign/s",
            "rustica, async = off sign/s",
            "default provider sign/s",
            "rustica / off [95 %]: verdict",
            "rustica / default [95 %]: verdict",
            "card capacity used: async",
            "card capacity used: off",
            "sampling",
        ],
        "right": {2, 3, 4, 7, 8},
        "code": {1},
        "sides": {"async": "async = auto", "off": "async = off"},
    },
    "x86-card-haproxy": {
        "what": "new handshakes/s, median (range); B/A ratios are rustica with `ssl-mode-async` (B) against the other side (A)",
        "head": [
            "TLS",
            "rustica, `ssl-mode-async`",
            "rustica, no `ssl-mode-async`",
            "default provider",
            "async / no async [95 %]: verdict",
            "async / default [95 %]: verdict",
            "card capacity used: async",
            "card capacity used: no async",
            "sampling",
        ],
        "right": {1, 2, 3, 6, 7},
        "code": set(),
        "sides": {"async": "`ssl-mode-async`", "sync": "no `ssl-mode-async`"},
    },
}

# The card's speed as a dimension on x86 too: the same table at faster
# card units (docs/comparison/x86-card-async-25us.tsv, -10us.tsv).
for _unit in ("25us", "10us"):
    X86_TABLES[f"x86-card-async-{_unit}"] = X86_TABLES["x86-card-async"]


def x86_markers(name):
    return (
        f"<!-- {name} rows: workshop/scripts/comparison.py --write renders this from docs/comparison/{name}.tsv -->",
        f"<!-- end of the {name} rows -->",
    )

SECTIONS = [
    ("versions", "What ran"),
    ("no card", "Real libica, no crypto card online"),
    ("card", "Real libica, one card online in sysfs"),
    ("emulated", "The project's emulated adapter, the same for B and C"),
    ("speed", "Throughput on the emulated adapter (under qemu-user)"),
    ("faults", "The emulated adapter failing or lying: what the caller gets"),
    ("lab", "`rustica lab` with the engine as side C (emulated adapter)"),
]

SHORT = {
    "no card": "No card",
    "card": "Card online",
    "emulated": "Emulated adapter",
    "speed": "Emulated adapter",
    "faults": "Faults",
    "lab": "rustica lab",
}

SECTION_INTRO = {
    "lab": (
        "`rustica lab --c-config <the engine's sample> --count-libica-calls` through a wrapper "
        "that runs the s390x `openssl` under qemu with the emulator as libica.so.3: 2048 bits, "
        "3 processes a column, TLS left out (C's servers would negotiate AES-GCM, above). Its "
        "report validates C against A and B and counts each side's adapter calls from the "
        "emulator's logs."
    ),
    "no card": (
        "As on a host without a CEX adapter (and as under qemu-user): libica lists RSA "
        "as software only, and the engine takes from libica only what libica marks as "
        "hardware."
    ),
    "card": (
        "The same root with `/sys/devices/ap/card00` (type `CEX7A`, online) and no "
        "device node: both the engine's and libica's sysfs scans see a card, so the "
        "engine takes RSA; libica, finding no `/dev/z90crypt`, computes what reaches it "
        "in its software path and counts it. Counts are libica's own "
        "(`/dev/shm/icastats_<uid>`, private to the run), RSA-ME and RSA-CRT. The "
        "zcrypt row adds a `/dev/z90crypt` (a plain file) and traces each side's "
        "system calls: the requests that would reach the card through the kernel."
    ),
    "emulated": (
        "libica.so.3 replaced, for B and C alike, by the project's emulator "
        "(libica-emu, cross-built for s390x): one adapter model, calls counted in its "
        "log."
    ),
    "speed": (
        "`openssl speed -seconds 1 -mr rsa2048`, sync and with `-async_jobs 32`, "
        "C and B alternating round by round. B/C is `rustica compare` over the pairs "
        "(Hodges-Lehmann estimate, Wilcoxon 95 % interval, docs/lab.md). Under "
        "qemu-user the emulator's arithmetic is itself emulated, so these rates say "
        "how the two sides use one adapter, not what a z16 does. Measured when the "
        "facts are recorded or with `S390X_SPEED=1`, not in every lane run."
    ),
    "faults": (
        "`LIBICA_EMU_ERRNO_EVERY=2` (every second call fails with EIO) and "
        "`LIBICA_EMU_CORRUPT_EVERY=2` (every second call answers with one bit "
        "flipped), six processes per side: a 2048-bit signature (right = identical to "
        "A's), a PKCS#1 v1.5 and an OAEP decryption (right = the plaintext). "
        "Wrong = the command succeeded with a wrong result."
    ),
}


def read_facts(path, width=7):
    """Rows of a facts file: 7 cells (three sides) or 8 (the card's four)."""
    if not pathlib.Path(path).exists():
        return []
    rows = []
    for line in pathlib.Path(path).read_text().splitlines():
        if not line.strip():
            continue
        cells = line.split("\t")
        cells += [""] * (width - len(cells))
        rows.append(cells[:width])
    return rows


def card_width(release):
    if release.endswith("-card-instructions"):
        return 10
    return 8 if release.endswith(("-card", "-card-lab", "-card-maint")) else 7


def cell(text):
    return text.replace("|", "\\|") if text else "–"



def render(facts, card_facts=None):
    out = []
    w = out.append
    w("# rustica, the ibmca engine and stock OpenSSL, measured")
    w("")
    w(
        "Every row below is a measurement the s390x lane makes (`scripts/s390x-lane.sh`, "
        "run by `.ci/run`; the measuring part is `scripts/s390x-three-sides.sh`). The "
        "lane runs Debian's own s390x packages under qemu-user: OpenSSL, libica3 and "
        "the ibmca ENGINE (`openssl-ibmca`), and rustica cross-built from this tree. "
        "This page is generated by `workshop/scripts/comparison.py` from the facts the lane "
        "recorded in `docs/comparison/`; `.ci/run` fails when a fresh run disagrees "
        "with them (timings and random counts excepted)."
    )
    w("")
    w("The three sides run the same commands through the same s390x `openssl`:")
    w("")
    w("- **A**: stock OpenSSL, the release's own configuration.")
    w("- **B**: rustica, `backend = libica` (docs/configuration.md).")
    w(
        "- **C**: the ibmca engine, loaded by the `openssl.cnf.sample` Debian ships "
        "with it (`/usr/share/doc/openssl-ibmca/examples/`), unchanged: "
        "`default_algorithms = ALL`."
    )
    w("")
    w("Regenerate after a deliberate change: `S390X_LANE_RECORD=1 scripts/s390x-lane.sh` then `workshop/scripts/comparison.py --write`.")
    w("")
    for key, title in SECTIONS:
        w(f"## {title}")
        w("")
        if key in SECTION_INTRO:
            w(SECTION_INTRO[key])
            w("")
        w("| measurement | release | A stock | B rustica | C ibmca engine | note |")
        w("|---|---|---|---|---|---|")
        for release, name in RELEASES:
            for sec, item, a, b, c, note, _ in facts.get(release, []):
                if sec == key:
                    w(f"| {cell(item)} | {name} | {cell(a)} | {cell(b)} | {cell(c)} | {cell(note)} |")
        w("")
    render_card(w, card_facts or {})
    w("## Every difference between B and C")
    w("")
    w("Rows above where B and C differ, with what makes them differ (read in openssl-ibmca 1.4.0's `src/e_ibmca.c`):")
    w("")
    # Rows where B and C both have a result and the results differ; one
    # line for the releases that agree.
    seen = {}
    for release, name in RELEASES:
        for sec, item, a, b, c, note, varies in facts.get(release, []):
            if sec == "versions" or not b or not c or b == c:
                continue
            extra = f" ({note})" if sec == "speed" else ""
            seen.setdefault((SHORT[sec], item, b, c + extra), []).append(name)
    for (sec, item, b, c), names in seen.items():
        where = " and ".join(names)
        w(f"- {sec}, {item} ({where}): B {cell(b)}; C {cell(c)}.")
    w("")
    w(WHY)
    return "\n".join(out) + "\n"


CARD_SECTIONS = [
    ("card-versions", "One card for every side: what ran"),
    ("card-requests", "One card: requests per operation, by type"),
    ("card-faults", "One card failing or lying: what each side's caller gets"),
    ("card-maint", "Across an outage, one process per side"),
    ("card-speed", "One card as the bottleneck: throughput and capacity"),
    ("card-instructions", "One card: s390x instructions per process and per operation"),
    ("card-lab", "The lab on one card: the kernel's requests per operation"),
]

CARD_INTRO = {
    "card-versions": (
        "The shared card model (`rustica-card`, docs/card-model.md), native on the host, "
        "answers `/dev/z90crypt` for every s390x process through the `z90crypt-card` "
        "interposer preloaded under qemu-user (`scripts/s390x-card.sh`). The root shows two "
        "online CEX8A cards in sysfs, as the card model has. Four sides run the same "
        "commands: **A** stock OpenSSL with its own offload (OpenSSL 3.2 and later send "
        "`ICARSACRT` and `ICARSAMODEXPO` ioctls from libcrypto; 3.0 has no such path); "
        "**A0** the same with it turned off (`OPENSSL_s390xcap=nocex`); **B** rustica on "
        "Debian's real libica3, which takes its hardware path (libica's own counters show "
        "hardware, not software); **C** the ibmca engine on the same libica."
    ),
    "card-requests": (
        "The card's own counts, reset before each command, over every process: ME "
        "(`ICARSAMODEXPO`) and CRT (`ICARSACRT`) requests. 2048-bit key; the TLS rows count "
        "the server's requests for one handshake with the host's `openssl s_client`."
    ),
    "card-faults": (
        "Set on the card before each run: every request fails with EIO; every card offline "
        "(the kernel's ENODEV); the run's first answer with a flipped bit; every answer with "
        "one. Right = identical to the default provider's signature, or the plaintext; wrong "
        "= the command succeeded with a wrong result. In brackets, what the card counted."
    ),
    "card-speed": (
        "The card's speed as a dimension: `openssl speed -elapsed -mr rsa2048` (OpenSSL 3.5) at "
        "each card unit of `S390X_CARD_SPEED_UNITS` (a 2048-bit CRT is 54 units), with one "
        "process, -multi 2 and 4, or one process with -async_jobs 32, the configurations "
        "alternating round by round (`workshop/scripts/lib/s390x-card-speed.sh`). The card measures each "
        "run in a window inside the signing phase (2.5 s, from 0.5 s after its first signing request): the side's "
        "signing requests answered per second (CRT for A and B, ME for C) and its busy time "
        "over the window's wall time x queues (1.000 = both queues busy all the time); the "
        "side's processes' user + system CPU time in the same window over those signatures is "
        "the host CPU per signature: qemu's CPU time for emulated s390x code, not z16 time. A0 "
        "computes in software; its CPU per signature and per verification are OpenSSL's own "
        "user-time figures for one process. Each unit is placed against the host as the ratio "
        "of the card's service time for a 2048-bit CRT to A0's CPU per signature: large = the "
        "card is the slow part, small = the host's own cost per request decides. A unit with "
        "over 1 % of its answers late (the card model's native computation outlasting the "
        "service time) is marked INVALID and its verdict void. The verdict \"B >= 0.95 x A\" "
        "is non-inferiority against stock's own offload, one process, sync: pass when the "
        "interval's lower bound is at or above 0.95. Ratios are `rustica compare` over the "
        "rounds' pairs (Hodges-Lehmann estimate, Wilcoxon 95 % interval, docs/lab.md)."
    ),
    "card-maint": (
        "The fault rows above start a new process for every run. Here one process per side "
        "lives across a card outage (`S390X_CARD_MAINT=1 scripts/s390x-card.sh`, "
        "`scripts/lib/s390x-card-maint.sh`): an `openssl s_server` under qemu-user (TLS 1.3, "
        "ChaCha20-Poly1305, which every side runs under qemu; the lane's 2048-bit key), A, B "
        "and C one after the other, each under a closed-loop load of 2 host client threads, "
        "one new handshake after another, every server signature (CertificateVerify) verified "
        "by the host's OpenSSL: a wrong one fails its handshake with BAD_SIGNATURE and counts "
        "as wrong. Phases: 5 s before; every card offline 5 s, then online; 6 s after; queue "
        "00.0000 stalled 3 s (the request it holds is answered ETIME at the end) in a 5 s "
        "phase; 6 s more. The card (2 cards, unit 50 us) runs with `--sysfs` on the root's "
        "/sys, so its online files and request counters change as a host's would. Per phase: "
        "the card's answers to the side's process (its `stats`), libica's own counters "
        "(icastats: hardware, software) and rustica's. After \"online\", the root's "
        "`request_count` files are polled every 50 ms until a request of the side reaches a "
        "queue again. A0 has no card to lose and is left out. The rows without numbers are "
        "checked against a fresh run in every CI run (`--check-facts <release>-card-maint`); "
        "the counts and "
        "times vary from run to run."
    ),
    "card-instructions": comparison_instructions.INTRO,
    "card-lab": (
        "`rustica lab` itself on the card, as on an IBM Z host (`scripts/s390x-card-lab.sh`: "
        "2048 bits, per-process columns, 6 processes a cell; A, B and C in one lab, A0 in a "
        "second lab against B with the same key pair). The card keeps the kernel's "
        "`request_count` files in the root's /sys, and the lab reads them around every side's "
        "run (`--sysfs`): card requests per operation by the kernel's count, the way a user "
        "proves each side's offload on a real host. Stock 3.5's first private operation in a "
        "process also sends its blinding exponentiation to the card, hence 2.00 per signing "
        "process; rustica verifies in software. The lab's report adds wall and host CPU per "
        "operation with intervals (docs/lab.md)."
    ),
}


def card_table(rows):
    out = ["| measurement | release | A stock | A0 stock, nocex | B rustica | C ibmca engine | note |", "|---|---|---|---|---|---|---|"]
    for name, (_, item, a, a0, b, c, note, _) in rows:
        out.append(f"| {cell(item)} | {name} | {cell(a)} | {cell(a0)} | {cell(b)} | {cell(c)} | {cell(note)} |")
    return out


def maint_table(rows):
    """The outage rows: A, B and C only (A0 has no card to lose)."""
    out = ["| measurement | release | A stock, own offload | B rustica | C ibmca engine | note |", "|---|---|---|---|---|---|"]
    for name, (_, item, a, _, b, c, note, _) in rows:
        out.append(f"| {cell(item)} | {name} | {cell(a)} | {cell(b)} | {cell(c)} | {cell(note)} |")
    return out


def replace_between(text, begin, end, lines, what):
    """TEXT with LINES between the markers BEGIN and END."""
    if begin not in text or end not in text:
        raise SystemExit(f"comparison: docs/performance.md lacks the {what} markers")
    head, rest = text.split(begin, 1)
    _, tail = rest.split(end, 1)
    return head + begin + "\n" + "\n".join(lines) + "\n" + end + tail



def x86_table(name, facts):
    """The lines of an x86 card table from its facts: a lead-in naming the
    command and the date, the table, rustica's counters."""
    spec = X86_TABLES[name]
    width = len(spec["head"])
    runs = [r for r in facts if r[0] == "run"]
    if len(runs) != 1:
        raise SystemExit(f"comparison: docs/comparison/{name}.tsv has {len(runs)} run lines, not one")
    _, date, command, setup = runs[0][:4]
    load = [r[1] for r in facts if r[0] == "load"]
    after = f"; load after: {load[0]}" if load else ""
    lead = (
        f"`{command}` on {date}, recorded with `BENCH_FACTS` in docs/comparison/{name}.tsv. "
        f"What ran: {setup}{after}. Cells: {spec['what']}."
    )
    out = [
        *prose(lead),
        "",
        "| " + " | ".join(spec["head"]) + " |",
        "|" + "".join("---:|" if i in spec["right"] else "---|" for i in range(width)),
    ]
    for r in facts:
        if r[0] != "row":
            continue
        cells = [f"`{c}`" if i in spec["code"] and c else cell(c) for i, c in enumerate(r[1 : width + 1])]
        out.append("| " + " | ".join(cells) + " |")
    counters = [f"{spec['sides'].get(r[1], r[1])}: {r[2]}" for r in facts if r[0] == "counters"]
    if counters:
        out += ["", *prose("rustica's counters over the whole run: " + "; ".join(counters) + ".")]
    return out


def read_x86(name):
    return read_facts(FACTS_DIR / f"{name}.tsv", len(X86_TABLES[name]["head"]) + 1)


def render_perf(text, card_facts, x86_facts):
    """docs/performance.md with the card-speed rows and the x86 card tables
    between their markers."""
    rows = [(name, r) for release, name in RELEASES for r in card_facts.get(release, []) if r[0] == "card-speed"]
    text = replace_between(text, PERF_BEGIN, PERF_END, card_table(rows), "card-speed")
    counted = [r for r in card_facts.get("stable", []) if r[0] == "card-instructions"]
    text = replace_between(text, *comparison_instructions.MARKERS, comparison_instructions.targets_table(counted), "host-cost")
    for name in X86_TABLES:
        begin, end = x86_markers(name)
        text = replace_between(text, begin, end, x86_table(name, x86_facts[name]), name)
    return text


def render_card(w, card_facts):
    if not any(card_facts.values()):
        return
    for key, title in CARD_SECTIONS:
        rows = [(name, r) for release, name in RELEASES for r in card_facts.get(release, []) if r[0] == key]
        if not rows:
            continue
        w(f"## {title}")
        w("")
        w(CARD_INTRO[key])
        w("")
        if key == "card-instructions":
            lines = comparison_instructions.table(rows, cell)
        else:
            lines = (maint_table if key == "card-maint" else card_table)(rows)
        for line in lines:
            w(line)
        w("")


WHY = """What the engine does that produces these rows:

- **RSA only with a card online.** The engine enables an algorithm only when
  libica lists it as hardware, and card-based mechanisms only when sysfs shows
  an online accelerator or CCA card. Without one it leaves RSA to OpenSSL and
  says nothing; rustica's libica backend sends every private operation to
  libica, which uses the card or its own software path.
- **No CRT.** With OpenSSL 1.1 and later the engine's test for a CRT key is
  inverted (one `!` missing before `iqmp`), so every private operation of a
  full key goes to `ica_rsa_mod_expo` with d and n: an exponentiation about
  four times the work of the two half-size ones `ica_rsa_crt` makes. rustica
  calls `ica_rsa_crt`.
- **Public operations on the adapter.** The engine routes verification and
  encryption (`bn_mod_exp`) to libica as well; rustica keeps them in software,
  where a short public exponent is cheaper than a round trip
  (docs/libica.md).
- **No fallback, no check.** When libica fails, the engine's exponentiation
  fails and so does the operation. When libica answers wrongly, the engine
  returns the answer: its `mod_exp` replaces OpenSSL's, and with it the
  public-exponent check OpenSSL's own makes of a CRT result. A wrong
  signature reaches the caller, and a PKCS#1 v1.5 decryption returns a wrong
  plaintext without an error (OAEP's padding check catches the flipped bit).
  rustica checks every result with the public exponent and recomputes it in
  software (docs/security.md).
- **No blinding.** The engine's RSA `init` turns OpenSSL's blinding off for
  every key it serves. rustica blinds every private operation.
- **Key generation stays in software.** The engine has no key generation and
  OpenSSL's prime tests do not go through the RSA method, so none of its key
  generation reaches libica; rustica's Miller-Rabin exponentiations do.
- **Keys over 4096 bits.** rustica keeps keys over `offload-max-bits`
  (4096 by default, where CEX adapters stop) in its own software; the
  engine sends every size to libica. With the real libica, whose software
  path takes any size, that works (8192 bits: one `ica_rsa_mod_expo`); on
  an adapter that refuses the key (the emulated one, over 4096 bits) the
  engine's operation fails, with OpenSSL's generic "RSA lib" and no reason
  of its own.
- **ASYNC.** The engine has no asynchronous path: under `-async_jobs` its
  calls block the job's thread. rustica pauses the job and makes the libica
  call on an offload thread (docs/libica.md).
- **No deadline.** A request a stalled queue holds keeps the engine's
  caller waiting until the kernel answers it: the whole 3 s stall in the
  outage rows, and up to the kernel's 900 s request timeout on a queue that
  never answers. rustica stops waiting at `offload-timeout-ms` (1000 ms by
  default) and finishes in software. Across the outage itself B and C
  behave alike: libica's software fallback answers every ENODEV inside the
  call, and libica's next call after the cards are back goes to the card.
- **OpenSSL 4.0.** ENGINEs are gone; the engine cannot load at all.
  `rustica config --from-engine` turns its configuration into rustica's
  (docs/system-wide.md).

Stock OpenSSL 3.5 (A on Debian 13) has its own offload: with `/dev/z90crypt`
present, libcrypto sends its RSA exponentiations to the kernel's zcrypt
driver itself (the zcrypt row and the card rows), so on a host with a card A
is not a software baseline there. OpenSSL 3.0 (Debian 12) has no such path.
What the card rows show of it (read in OpenSSL 3.5.7's `crypto/rsa/rsa_ossl.c`
and `crypto/bn/bn_s390x.c`):

- **The blinding factor on the card too.** The RSA method's `bn_mod_exp` is
  the card's ME, so besides each CRT request the blinding factor (r^e mod n)
  is an ME request when a key's blinding is made and each time OpenSSL renews
  it (every 32 operations): one ME per operation in a one-operation process,
  one per 32 in a server (the 64-handshake row). rustica makes the CRT request
  only and blinds in software.
- **No check of the card's answer.** On s390x the method's `rsa_mod_exp`
  returns the card's CRT result as it is; the public-exponent check of
  `rsa_ossl_mod_exp` runs only when the card failed. One flipped bit in one
  answer (the CRT result or the blinding factor) is a wrong signature, or a
  wrong PKCS#1 v1.5 plaintext, with no error. rustica checks every CRT result
  with the public exponent in software and recomputes a wrong one.
- **A failing card costs five requests.** After EIO the operation falls back to
  OpenSSL's own CRT code, whose exponentiations and check each try the card
  again; ENODEV ends the card's use for the rest of the process. Both give the
  right answer.
- **Gone for good after one outage.** The outage rows show it in a running
  server: one ENODEV while every card was offline, and none of its later
  requests reached the card, after the cards were back too; it computed in
  software for the rest of its life. rustica and the engine, on libica,
  were back on the card at the first look after the cards returned.
"""


def check_facts(release, fresh_path):
    width = card_width(release)
    committed = read_facts(FACTS_DIR / f"{release}.tsv", width)
    fresh = read_facts(fresh_path, width)
    key = lambda r: (r[0], r[1])
    want = {key(r): r for r in committed}
    got = {key(r): r for r in fresh}
    problems = []
    for k, r in want.items():
        if k not in got:
            # Throughput is measured only when asked for (S390X_SPEED=1 for
            # the three sides' speed rows, S390X_CARD_SPEED=1 on the card:
            # minutes under qemu), not in every lane run.
            if k[0] not in ("speed", "card-speed"):
                problems.append(f"missing: {k[0]}: {k[1]}")
        elif r[-1] != "varies" and got[k][:-1] != r[:-1]:
            problems.append(
                f"changed: {k[0]}: {k[1]}\n    recorded: {' | '.join(r[2:-1])}\n    now:      {' | '.join(got[k][2:-1])}"
            )
    for k in got:
        if k not in want:
            problems.append(f"new: {k[0]}: {k[1]}")
    return problems


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--write", action="store_true")
    g.add_argument("--check", action="store_true")
    g.add_argument("--check-facts", nargs=2, metavar=("RELEASE", "FILE"))
    args = ap.parse_args()
    if args.check_facts:
        release, path = args.check_facts
        problems = check_facts(release, path)
        if problems:
            print(f"comparison: the lane's {release} facts differ from docs/comparison/{release}.tsv:", file=sys.stderr)
            for p in problems:
                print("  " + p, file=sys.stderr)
            print(
                "comparison: if the change is meant, record it: S390X_LANE_RECORD=1 scripts/s390x-lane.sh, "
                "then workshop/scripts/comparison.py --write",
                file=sys.stderr,
            )
            return 1
        return 0
    facts = {r: read_facts(FACTS_DIR / f"{r}.tsv") for r, _ in RELEASES}
    card_facts = {
        r: read_facts(FACTS_DIR / f"{r}-card.tsv", 8)
        + read_facts(FACTS_DIR / f"{r}-card-lab.tsv", 8)
        + read_facts(FACTS_DIR / f"{r}-card-maint.tsv", 8)
        + read_facts(FACTS_DIR / f"{r}-card-instructions.tsv", 10)
        for r, _ in RELEASES
    }
    page = wrap_page(render(facts, card_facts))
    x86_facts = {name: read_x86(name) for name in X86_TABLES}
    perf = render_perf(PERF.read_text(), card_facts, x86_facts)
    if args.write:
        PAGE.write_text(page)
        PERF.write_text(perf)
        return 0
    bad = 0
    if PAGE.read_text() != page:
        print("comparison: docs/comparison.md is not what workshop/scripts/comparison.py renders from docs/comparison/; run it with --write", file=sys.stderr)
        bad = 1
    if PERF.read_text() != perf:
        print(
            "comparison: docs/performance.md's card-speed or x86 card tables are not what workshop/scripts/comparison.py "
            "renders from docs/comparison/; run it with --write",
            file=sys.stderr,
        )
        bad = 1
    return bad


if __name__ == "__main__":
    sys.exit(main())
