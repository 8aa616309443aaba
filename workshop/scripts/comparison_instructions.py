"""The instruction counts' section of docs/comparison.md: its lead-in and
its table, six sides (B three ways). workshop/scripts/comparison.py renders it from
docs/comparison/<release>-card-instructions.tsv, which
workshop/scripts/s390x-count.sh --record writes."""

INTRO = (
    "Guest instructions counted under Debian 12's dynamic `qemu-s390x` (7.2) by the project's "
    "TCG plugin (`workshop/benches/instructions/qemu-count.c`), on the same card (2 cards, unit 20 us), "
    "by `workshop/scripts/s390x-count.sh`. Under qemu, the wall and CPU times above mostly measure qemu "
    "(translating code it has not seen, emulating each instruction); an instruction count does "
    "not depend on qemu's speed. Every side but C runs the same minimal `openssl.cnf` (C: the "
    "engine's sample); the `z90crypt-card` interposer, which does in the guest what a host's "
    "kernel does for one ioctl, is left out of the counts (under 1 K instructions a request). "
    "Per process: whole `openssl` runs, 2048-bit key, 1 KiB document; the differences between "
    "rows are the phases (the key's load, the first operation). Per operation: "
    "`workshop/benches/instructions/ops.c` cross-built for s390x, PKCS#1 v1.5 SHA-256 with a fresh "
    "context each (BIND's and PowerDNS's pattern), the instructions between its marks at 64 "
    "operations minus those at 32, over 32, the least of 3 such pairs on the card sides: one of "
    "OpenSSL's blinding renewals (every 32 uses of a key) in each count. System calls per "
    "operation count each card request as the one ioctl a host makes (the interposer's "
    "exchange, measured on A, taken out); clock_gettime is a vDSO call on a host. Context "
    "switches are those of qemu's threads between the marks, and vary. By library: the file the "
    "code is in, so rustica's calls into libcrypto count as libcrypto's. "
    "`workshop/scripts/s390x-count.sh --check` recounts and compares within 2.5 % per process and 5 % "
    "per operation (blinding values and libica's DRBG are random: repeated runs of one build "
    "spread by up to 1.2 % per process and 2 % per operation)."
)


def table(rows, cell):
    """The table's lines from its facts' ROWS, (release name, facts row)
    pairs; CELL formats a cell as comparison.py does."""
    out = [
    "| measurement | release | A stock, own offload | A0 stock, nocex | B rustica, libica | "
    "B, `offload-timeout-ms = 0` | B, `backend = software` | C ibmca engine | note |",
    "|---|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for name, (_, item, a, a0, b, bnd, bsw, c, note, _) in rows:
        out.append(
            f"| {cell(item)} | {name} | {cell(a)} | {cell(a0)} | {cell(b)} | {cell(bnd)} | {cell(bsw)} | {cell(c)} | {cell(note)} |"
        )
    return out


# The host-cost targets on a card host (docs/libica.md): rustica's side B
# against stock's own offload (A) and stock in software (A0), from the
# facts' columns A, A0, B (0, 1, 2).
SIGN = "one signature, fresh context, 2048 bits, per operation"
VERIFY = "one verification, fresh context, 2048 bits, per operation"
SIGN_PROCESS = "openssl dgst -sha256 -sign, 1 KiB, 2048 bits, per process"
VERIFY_PROCESS = "openssl dgst -sha256 -verify, 1 KiB, 2048 bits, per process"


def count(text):
    """'207 K' or '18.55 M' as a number."""
    number, unit = text.split()
    return float(number) * {"M": 1e6, "K": 1e3}[unit]


def targets(by_item):
    """(what, B's count, the bound, its rule) per target, from BY_ITEM: a
    fact's item to its cells A, A0, B, ... as text."""
    def side(item, k):
        return count(by_item[item][k])

    check = side(VERIFY, 1)
    return [
        ("instructions per offloaded signature", side(SIGN, 2), side(SIGN, 0) + 0.6 * check,
         f"A + 0.6 x one check (A0's verification, {by_item[VERIFY][1]})"),
        ("instructions per signing process", side(SIGN_PROCESS, 2), 1.10 * side(SIGN_PROCESS, 0), "1.10 x A"),
        ("instructions per verifying process", side(VERIFY_PROCESS, 2), 1.05 * side(VERIFY_PROCESS, 1), "1.05 x A0"),
    ]


# Where docs/performance.md holds them.
MARKERS = (
    "<!-- host-cost verdicts: workshop/scripts/comparison.py --write renders these -->",
    "<!-- end of the host-cost verdicts -->",
)


def targets_table(rows):
    """docs/performance.md's host-cost verdicts from Debian 13's
    card-instructions facts ROWS."""
    from comparison_text import prose

    by_item = {r[1]: r[2:8] for r in rows}
    when = next((r[8] for r in rows if r[1] == "what was counted"), "")
    out = [
        *prose(
            "Host cost on a card host, s390x guest instructions of side B (`backend = libica`) against stock 3.5's "
            f"own offload, rendered from docs/comparison/stable-card-instructions.tsv ({when}); "
            "`workshop/scripts/s390x-count.sh --check` holds them in CI:"
        ),
        "",
        "| target | B | bound | rule | verdict |",
        "|---|---:|---:|---|---|",
    ]
    for what, got, bound, rule in targets(by_item):
        verdict = "met" if got <= bound else "**not met**"
        out.append(f"| {what} | {got / 1e3:,.0f} K | {bound / 1e3:,.0f} K | {rule} | {verdict} |")
    return out


if __name__ == "__main__":
    # comparison_instructions.py FACTS.tsv: exit 1, saying which, when a
    # fresh count misses a target (workshop/scripts/s390x-count.sh --check).
    import sys

    fresh = {}
    for line in open(sys.argv[1]):
        c = line.rstrip("\n").split("\t")
        fresh[c[1]] = c[2:8]
    missed = [t for t in targets(fresh) if t[1] > t[2]]
    for what, got, bound, rule in missed:
        print(f"s390x-count: {what}: {got:,.0f} over {bound:,.0f} ({rule})", file=sys.stderr)
    sys.exit(1 if missed else 0)
