#!/usr/bin/env python3
"""The layering check: every module of provider/, ibmca-shim/src/, harness/src/
(its top level and the lab's rooms), testbed/card/src/, testbed/libica-emu/src/ and
libica-abi/src/ may use only modules of a lower layer, so none has an
import circle.

It reads the paths the code writes (`crate::X`, `$crate::X`, in the lab also
`super::X` and `crate::lab::X`, braces included), not rustc's resolution:
it needs no build and no tool, and runs in well under a second. Unit tests
(`#[cfg(test)] mod ...` to the end of a file, files named tests.rs) may
reach anything and are not read. A module missing from the tables below is
an error too, so a new file is given its place on purpose.

Usage: scripts/check-layers.py [ROOT]   (ROOT: the workspace, default: ..)
Exit status 0: no upward use; 1: a list of them, file and line.
docs/architecture.md ("Layers") draws the same tables.
"""
import os
import re
import sys

# Lower numbers are lower layers. A module may use modules of a strictly
# lower number only: two modules of one layer never use each other.
PROVIDER = {
    "ffi": 0, "ct": 0,
    "error": 1, "dispatch": 1, "pad_mode": 1,
    "params": 2, "config": 2, "digest": 2,
    "der": 3, "padding": 3, "enc_padding": 3,
    "context": 4,
    "boundary": 5,
    "key": 6,
    "keymgmt": 7, "signature": 7, "asym_cipher": 7,
    "prov": 8,
}

# harness/src/lab/ is in rooms (subdirectories), lowest first. A module may
# use any module of a lower room, and in its own room only modules of a
# lower layer. A room's mod.rs only declares its modules; lab/mod.rs, the
# lab's top, may use every room.
LAB_ROOMS = {
    "stats": (0, {
        "ranks": 0,
        "effect": 1,
        "sampling": 2,
    }),
    "plan": (1, {
        "zcrypt": 0, "cnf": 0, "column_table": 0,
        "openssl": 1, "progress": 1,
        "options": 2, "server": 2,
        "commands": 3, "skips": 3, "card_use": 3,
        "columns": 4, "setup": 4,
        "counters": 5, "host": 5,
    }),
    "dns": (2, {
        "axfr": 0, "dns_tools": 0,
        "dns_steps": 1,
    }),
    "measure": (3, {
        "inprocess_steps": 0,
        "steps": 1,
        "results": 2,
        "matrix": 3, "verdicts": 3,
        "crosscheck": 4, "async_jobs": 4, "inprocess": 4, "dnssec": 4, "pdns": 4,
        "turns": 4,
    }),
    "output": (4, {
        "method": 0, "family": 0, "order": 0,
        "explain": 1,
        "report": 2, "summary": 2, "notes": 2,
        "md_cells": 3, "svg": 3, "forest": 3,
        "md_load": 4, "md_record": 4,
        "markdown": 5,
    }),
}
# One rank per module: (room, layer), compared as a pair.
LAB = {m: (room, layer) for room, layers in LAB_ROOMS.values() for m, layer in layers.items()}
LAB["mod"] = (len(LAB_ROOMS), 0)

# harness/src/ is checked too: a file or directory is one module (lab/
# included, whose rooms have their own tables above); main.rs, the crate
# root, is the top, so nothing may reach up into it.
HARNESS = {
    "utc": 0, "paths": 0,
    "system": 1,
    "safe_fs": 2,
    "sysconf": 3,
    "lab": 4, "stats_cmd": 4, "config_cmd": 4, "install_cmd": 4, "doctor": 4,
    "compare_cmd": 5,
    "cli": 6,
    "manpage": 7,
    "main": 8,
}

# ibmca-shim/src/: a directory (bn/, rsa/, ...) is one module; the crate
# root lib.rs is the top, as it re-exports the public API.
SHIM = {
    "error": 0, "env": 0, "fd2": 0, "secret": 0, "libctx": 0, "ct": 0,
    "random": 1, "stats": 1,
    "bn": 2, "pool": 2,
    "libica": 3, "software": 3,
    "backend": 4,
    "rsa": 5,
    "lib": 6,
}

# The card and its clients' crates (docs/architecture.md, "Layers"). A
# directory (model/) is one module; lib.rs, the crate root, is the top.
# testbed/card/src/: the shared card model (rustica-card); main.rs is its binary,
# a crate of its own that uses the library by name, not by crate::.
CARD = {
    "bn": 0, "wire": 0, "sysfs": 0,
    "arith": 1, "model": 1,
    "server": 2,
    "lib": 3, "main": 4,
}

# testbed/libica-emu/src/: the emulated libica, a client of the card crate.
EMU = {
    "errno": 0,
    "card_client": 1, "not_offered": 1,
    "adapter": 2,
    "lib": 3,
}

# libica-abi/src/: one module, the declarations.
ABI = {
    "lib": 0,
}

IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def code_lines(path):
    """(line number, text) of the non-test code of a file, comments cut."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    out = []
    for i, line in enumerate(lines):
        stripped = line.strip()
        if stripped == "#[cfg(test)]":
            following = lines[i + 1].strip() if i + 1 < len(lines) else ""
            if re.match(r"(pub(\([a-z]+\))? )?mod \w+ \{", following):
                break  # the unit tests run to the end of the file
            continue
        if stripped.startswith("//"):
            continue
        out.append((i + 1, line.split(" //")[0]))
    return out


def brace_items(text, start):
    """The first identifiers of the top-level items of `{...}` at start."""
    depth, item, items = 0, "", []
    for ch in text[start:]:
        if ch == "{":
            depth += 1
            if depth == 1:
                continue
        elif ch == "}":
            depth -= 1
            if depth == 0:
                items.append(item)
                break
        elif ch == "," and depth == 1:
            items.append(item)
            item = ""
            continue
        if depth >= 1:
            item += ch
    names = []
    for it in items:
        m = IDENT.search(it)
        if m:
            names.append(m.group(0))
    return names


def targets(text, prefix):
    """Every name used right after `prefix` in text, braces expanded."""
    found = []
    for m in re.finditer(r"(?<![A-Za-z0-9_])" + re.escape(prefix), text):
        rest = m.end()
        while rest < len(text) and text[rest] in " \n":
            rest += 1
        if rest < len(text) and text[rest] == "{":
            found.extend(brace_items(text, rest))
        else:
            n = IDENT.match(text, rest)
            if n:
                found.append(n.group(0))
    return found


def files(base):
    for dirpath, _, names in os.walk(base):
        for name in sorted(names):
            if name.endswith(".rs") and name != "tests.rs":
                yield os.path.join(dirpath, name)


def statements(lines):
    """Joins a `use` that spans lines onto its first line."""
    joined, pending, first = [], "", 0
    for number, text in lines:
        if pending:
            pending += " " + text.strip()
            if ";" in text:
                joined.append((first, pending))
                pending = ""
            continue
        if re.match(r"\s*(pub(\([a-z]+\))? )?use .*\{", text) and ";" not in text:
            pending, first = text, number
            continue
        joined.append((number, text))
    if pending:
        joined.append((first, pending))
    return joined


def check(root, base, ranks, module_of, prefixes, resolve):
    problems = []
    for path in files(os.path.join(root, base)):
        rel = os.path.relpath(path, os.path.join(root, base))
        me = module_of(rel)
        if me is None:
            continue
        if me not in ranks:
            problems.append(f"{base}/{rel}: module {me} has no layer in scripts/check-layers.py")
            continue
        for number, text in statements(code_lines(path)):
            for prefix in prefixes:
                for name in targets(text, prefix):
                    dep = resolve(prefix, name)
                    if dep is None or dep == me:
                        continue
                    if dep not in ranks:
                        problems.append(f"{base}/{rel}:{number}: {me} uses {dep}, which has no layer")
                    elif ranks[dep] >= ranks[me]:
                        problems.append(
                            f"{base}/{rel}:{number}: {me} (layer {ranks[me]}) uses "
                            f"{dep} (layer {ranks[dep]}): only lower layers may be used"
                        )
    return problems


def provider_module(rel):
    if rel == "lib.rs":
        return None  # the crate root only declares the modules
    return rel.split(os.sep)[0].removesuffix(".rs")


def provider_target(prefix, name):
    return name if name in PROVIDER else None if name in ("self", "super") else name


def shim_module(rel):
    return rel.split(os.sep)[0].removesuffix(".rs")


def shim_target(prefix, name):
    return None if name in ("self", "super") else name


def harness_module(rel):
    return rel.split(os.sep)[0].removesuffix(".rs")


def harness_target(prefix, name):
    if name in ("self", "super"):
        return None
    # Anything else the crate root declares is an item of main.rs, the top.
    return name if name in HARNESS else "main"


def lab_module(rel):
    parts = rel.removesuffix(".rs").split(os.sep)
    if len(parts) == 1:
        return parts[0]  # lab/mod.rs
    if parts[-1] == "mod":
        return None  # a room's mod.rs only declares its modules
    return parts[-1]


def lab_target(prefix, name):
    if prefix == "crate::":
        return None  # the rest of the harness (paths, safe_fs, system)
    if name in ("self", "super", "*") or name in LAB_ROOMS:
        return None  # a room: read by the room's own prefix
    # crate::lab::ROOM::name or super::name from a room's file; anything that
    # is not a module is an item of lab/mod.rs, the top.
    return name if name in LAB else "mod"


# Directories whose sibling files (modules of one parent) must not use
# each other in a circle: a file-level check under the module layers.
SIBLING_DIRS = [
    "provider/signature", "provider/keymgmt", "provider/asym_cipher",
    "ibmca-shim/src/rsa", "ibmca-shim/src/bn", "ibmca-shim/src/libica",
    "ibmca-shim/src/pool", "ibmca-shim/src/stats",
    "testbed/card/src/model",
]


def sibling_cycles(root):
    """Circles of `super::name` uses among the files of each directory."""
    problems = []
    for d in SIBLING_DIRS:
        base = os.path.join(root, d)
        if not os.path.isdir(base):
            continue
        names = {n.removesuffix(".rs") for n in os.listdir(base)
                 if n.endswith(".rs") and n not in ("mod.rs", "tests.rs")}
        edges = {n: set() for n in names}
        for n in names:
            path = os.path.join(base, n + ".rs")
            for _, text in statements(code_lines(path)):
                for dep in targets(text, "super::"):
                    if dep in names and dep != n:
                        edges[n].add(dep)
        # Depth-first search for a back edge.
        state = {}

        def visit(n, path):
            state[n] = 1
            for m in sorted(edges[n]):
                if state.get(m) == 1:
                    cycle = path[path.index(m):] + [m]
                    problems.append(f"{d}: files use each other in a circle: {' -> '.join(cycle)}")
                elif m not in state:
                    visit(m, path + [m])
            state[n] = 2

        for n in sorted(names):
            if n not in state:
                visit(n, [n])
    return problems


# The z90crypt interposer's C files (testbed/card/interposer/): each calls only
# the hidden functions (INTERNAL in z90crypt-card.h) of a lower one.
INTERPOSER_DIR = "testbed/card/interposer"
INTERPOSER = {"z90crypt-exchange": 0, "z90crypt-requests": 1, "z90crypt-card": 2}


def c_code(path):
    """A C file's text without its comments and string literals."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    text = re.sub(r"//[^\n]*", "", text)
    return re.sub(r'"(?:\\.|[^"\\\n])*"', '""', text)


def interposer_layers(root):
    """Calls from one interposer file to a hidden function of a file at its
    own or a higher layer (which is what a circle needs)."""
    base = os.path.join(root, INTERPOSER_DIR)
    header = os.path.join(base, "z90crypt-card.h")
    if not os.path.isfile(header):
        return []
    hidden = re.findall(r"^INTERNAL\b[^;(]*?\b(\w+)\s*\(", c_code(header), flags=re.M)
    problems = []
    files = {n.removesuffix(".c") for n in os.listdir(base)
             if n.startswith("z90crypt-") and n.endswith(".c")}
    for name in sorted(files - INTERPOSER.keys()):
        problems.append(f"{INTERPOSER_DIR}/{name}.c: not in check-layers.py's INTERPOSER table")
    texts = {n: c_code(os.path.join(base, n + ".c")) for n in files & INTERPOSER.keys()}
    home = {}
    for fn in hidden:
        for n, text in texts.items():
            if re.search(rf"^[A-Za-z_][\w \t*]*\b{fn}\s*\([^;]*?\)\s*\{{", text, flags=re.M):
                home[fn] = n
        if fn not in home:
            problems.append(f"{INTERPOSER_DIR}: {fn}() is declared hidden but defined nowhere")
    for n, text in texts.items():
        for lineno, line in enumerate(text.splitlines(), 1):
            for fn, where in home.items():
                if where != n and INTERPOSER[where] >= INTERPOSER[n] and re.search(rf"\b{fn}\s*\(", line):
                    problems.append(
                        f"{INTERPOSER_DIR}/{n}.c:{lineno}: calls {fn}() of {where}.c, "
                        f"layer {INTERPOSER[where]} (its own: {INTERPOSER[n]})")
    return problems


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
    problems = check(root, "provider", PROVIDER, provider_module, ["crate::"], provider_target)
    problems += check(root, "ibmca-shim/src", SHIM, shim_module, ["crate::"], shim_target)
    problems += check(root, "harness/src", HARNESS, harness_module, ["crate::"], harness_target)
    problems += check(
        root,
        "harness/src/lab",
        LAB,
        lab_module,
        ["crate::lab::"] + [f"crate::lab::{room}::" for room in LAB_ROOMS] + ["super::"],
        lab_target,
    )
    problems += check(root, "testbed/card/src", CARD, shim_module, ["crate::"], shim_target)
    problems += check(root, "testbed/libica-emu/src", EMU, shim_module, ["crate::"], shim_target)
    problems += check(root, "libica-abi/src", ABI, shim_module, ["crate::"], shim_target)
    problems += sibling_cycles(root)
    problems += interposer_layers(root)
    problems = list(dict.fromkeys(problems))
    if problems:
        print("check-layers: upward uses (see docs/architecture.md, Layers):", file=sys.stderr)
        for p in problems:
            print("  " + p, file=sys.stderr)
        sys.exit(1)
    print(
        "check-layers: provider/, ibmca-shim/src/, harness/src/ (with lab/), testbed/card/src/,"
        " testbed/libica-emu/src/, libica-abi/src/ and the z90crypt interposer's C files use only lower"
        " layers; no circle among sibling files"
    )


if __name__ == "__main__":
    main()
