#!/usr/bin/env python3
"""The docs' size rule, checked: docs a reader can get through.

Usage: scripts/check-docs.py [--self-test] [ROOT]   (ROOT: the workspace,
       default: this script's parent's parent)

  - docs/*.md hold at most 5,000 lines in all (docs/comparison/ and other
    subfolders are not counted: only the pages directly in docs/).
  - No line of docs/*.md outside a table and a fenced code block is over
    200 characters (characters, not bytes). A table line is one whose
    first non-blank character is `|`; a fenced block runs from a line
    opening with ``` or ~~~ to the line that closes it with the same fence.

--self-test runs both rules on pages written to a temporary directory
(one within the limits, then one over each) and fails if a rule does not
catch its case or catches a good page, so that the check cannot pass by
finding nothing.

Exit status: 0 passed, 1 over a limit (each offender listed: the total
with each page's count, or file:line and its length), 2 could not run
(no docs/ directory under ROOT).
"""

import os
import sys
import tempfile

TOTAL_LIMIT = 5000
LINE_LIMIT = 200


def long_lines(text):
    """(line number, length) of each line over LINE_LIMIT outside tables and
    fenced code blocks."""
    out = []
    fence = None
    for n, line in enumerate(text.split("\n"), 1):
        stripped = line.lstrip()
        if fence is not None:
            # Closed by a run of the same character, at least as long, alone.
            if stripped.startswith(fence) and not stripped.rstrip().lstrip(fence[0]):
                fence = None
            continue
        if stripped.startswith("```") or stripped.startswith("~~~"):
            marker = stripped[0]
            fence = marker * (len(stripped) - len(stripped.lstrip(marker)))
            continue
        if stripped.startswith("|"):
            continue
        if len(line) > LINE_LIMIT:
            out.append((n, len(line)))
    return out


def count_lines(text):
    """Lines as `wc -l` counts them (newlines), plus an unterminated last one."""
    return text.count("\n") + (1 if text and not text.endswith("\n") else 0)


def check(root):
    """The offenders' messages under ROOT (empty: passed)."""
    docs = os.path.join(root, "docs")
    if not os.path.isdir(docs):
        raise FileNotFoundError(docs)
    pages = sorted(f for f in os.listdir(docs) if f.endswith(".md") and os.path.isfile(os.path.join(docs, f)))
    problems = []
    counts = {}
    for page in pages:
        with open(os.path.join(docs, page), encoding="utf-8") as f:
            text = f.read()
        counts[page] = count_lines(text)
        for n, length in long_lines(text):
            problems.append(f"docs/{page}:{n}: {length} characters (limit {LINE_LIMIT} outside tables and code blocks)")
    total = sum(counts.values())
    if total > TOTAL_LIMIT:
        problems.append(f"docs/*.md: {total} lines in all (limit {TOTAL_LIMIT}); by page, largest first:")
        for page, n in sorted(counts.items(), key=lambda kv: -kv[1]):
            problems.append(f"  {n:6d} docs/{page}")
    return problems


def self_test():
    """Both rules on sample pages; 0 when each catches its case and only it."""
    failures = []
    long = "x" * (LINE_LIMIT + 1)
    good = (
        "# Page\n\n" + "y" * LINE_LIMIT + "\n\n"
        "| a | " + long + " |\n"
        "```sh\n" + long + "\n```\n"
        "~~~~\n```\n" + long + "\n~~~~\n"
    )
    cases = [
        ("a good page", {"a.md": good}, 0),
        ("a long prose line", {"a.md": good + long + "\n"}, 1),
        ("a long line after a code block", {"a.md": "```\nz\n```\n" + long + "\n"}, 1),
        ("too many lines", {"a.md": "l\n" * 3000, "b.md": "l\n" * 2001}, 1),
        ("exactly the limit", {"a.md": "l\n" * 3000, "b.md": "l\n" * 2000}, 0),
        ("a subfolder is not counted", {"a.md": "l\n" * 10, "sub/c.md": "l\n" * 6000}, 0),
    ]
    for what, files, expected in cases:
        with tempfile.TemporaryDirectory() as root:
            for name, text in files.items():
                path = os.path.join(root, "docs", name)
                os.makedirs(os.path.dirname(path), exist_ok=True)
                with open(path, "w", encoding="utf-8") as f:
                    f.write(text)
            found = check(root)
            if len(found) and not expected or expected and not found:
                failures.append(f"{what}: expected {'an offender' if expected else 'none'}, got {found or 'none'}")
    for failure in failures:
        print(f"check-docs: self-test: {failure}", file=sys.stderr)
    print(f"check-docs: self-test: {len(cases) - len(failures)} of {len(cases)} cases as expected")
    return 1 if failures else 0


def main(argv):
    if argv[1:2] == ["--self-test"]:
        return self_test()
    if len(argv) > 2 or argv[1:2] and argv[1].startswith("-"):
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    root = argv[1] if len(argv) > 1 else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    try:
        problems = check(root)
    except FileNotFoundError as e:
        print(f"check-docs: no docs directory: {e}", file=sys.stderr)
        return 2
    for p in problems:
        print(f"check-docs: {p}")
    if problems:
        return 1
    print("check-docs: docs/*.md within their limits")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
