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
