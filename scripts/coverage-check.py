#!/usr/bin/env python3
"""Compares a table written by scripts/coverage.sh (or coverage-trixie.sh)
with the one docs/system-wide.md gives for that Debian release, in its
section "The two tables as the script writes them".

    scripts/coverage-check.py --release 12|13 MEASURED.md [--doc docs/system-wide.md]

Rows are matched in order by program and operation, with version numbers
taken out of the program's name (a Debian security update changes
"nginx 1.26.3-3+deb13u10", not the row). A row changes when its "counted
by rustica", "counter delta" or "rustica.so loaded" cell differs, or the
kind of its "why not" (the text before the first colon: "low-level RSA
API", "its own property query", ...); a row added or missing is a change
too. Exit status 0 when no row changed, 1 when one did (each is printed),
2 when a table cannot be found.
"""
import argparse
import re
import sys

VERSION = re.compile(r"\s\d[\w.:~+-]*")


def rows(lines):
    """The rows of the first markdown table in LINES, as lists of cells."""
    out, inside = [], False
    for line in lines:
        if line.startswith("|"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if cells and cells[0] == "program":
                inside = True
                continue
            if inside and not set(cells[0]) <= {"-"}:
                out.append(cells)
        elif inside:
            break
    return out


def key(cells):
    program = VERSION.sub("", " " + cells[0]).strip()
    return f"{program} | {cells[1]}"


def value(cells):
    counted, delta, loaded = cells[2], cells[3], cells[4]
    why = cells[5].split(":")[0].strip() if len(cells) > 5 else ""
    return (counted, delta, loaded, why)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--release", required=True, choices=["12", "13"])
    ap.add_argument("--doc", default="docs/system-wide.md")
    ap.add_argument("measured")
    a = ap.parse_args()

    doc = open(a.doc, encoding="utf-8").read().splitlines()
    try:
        start = next(i for i, l in enumerate(doc) if l.startswith("### The two tables as the script writes them"))
        head = next(i for i in range(start, len(doc)) if doc[i].startswith(f"Debian {a.release} ("))
    except StopIteration:
        print(f"coverage-check: no Debian {a.release} table in {a.doc}", file=sys.stderr)
        return 2
    expected = rows(doc[head:])
    measured = rows(open(a.measured, encoding="utf-8").read().splitlines())
    if not expected or not measured:
        print(f"coverage-check: empty table ({a.doc}: {len(expected)} rows, {a.measured}: {len(measured)})", file=sys.stderr)
        return 2

    changed = []
    exp = [(key(r), value(r)) for r in expected]
    got = [(key(r), value(r)) for r in measured]
    exp_keys = {k for k, _ in exp}
    got_keys = {k for k, _ in got}
    got_map = dict(got)
    for k, v in exp:
        if k not in got_keys:
            changed.append(f"missing: {k} (documented: {' / '.join(v)})")
        elif got_map[k] != v:
            changed.append(f"changed: {k}: documented {' / '.join(v)}, measured {' / '.join(got_map[k])}")
    for k, v in got:
        if k not in exp_keys:
            changed.append(f"new row: {k}: {' / '.join(v)}")
    if [k for k, _ in exp if k in got_keys] != [k for k, _ in got if k in exp_keys]:
        changed.append("the rows are in another order than documented")
    for c in changed:
        print(f"coverage-check: Debian {a.release}: {c}", file=sys.stderr)
    if changed:
        print(f"coverage-check: Debian {a.release}: {len(changed)} row(s) differ from {a.doc}: "
              "update the table there if the change is real", file=sys.stderr)
        return 1
    print(f"coverage-check: Debian {a.release}: all {len(got)} rows as {a.doc} says", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
