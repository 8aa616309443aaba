"""Per-process cost of loading a provider: stock OpenSSL, an idle provider
that registers RSA names and does nothing, and rustica, run interleaved
(one process of each side per round, in rotating order) so drift on a
shared machine hits every side alike. Prints wall-time medians, deltas in
ms and ratios, then the same for CPU time (user + system of the process,
less disturbed than wall time by other work on a loaded machine). Each
ratio is the Hodges-Lehmann estimate over the rounds' pairs with its 95 %
interval and verdict, from `rustica compare` (the lab's statistics).
Then, when WORK/phases exists (workshop/benches/load/phases.c), with the sides
rotated the same way: the wall time and minor page faults of each phase
of one signing process, timed from inside, with the signing provider
checked each run.
Called by workshop/scripts/bench-load.sh, which prepares WORK."""
import os
import statistics
import subprocess
import sys
import time

work, rounds, rustica = sys.argv[1], int(sys.argv[2]), sys.argv[3]
sides = ["stock", "idle", "rustica"]
# A second rustica build ("before", e.g. main's), when bench-load.sh -c
# prepared its configuration: it runs in the same rotation.
if os.path.exists(os.path.join(work, "before.cnf")):
    sides.append("before")
conf = {s: os.path.join(work, f"{s}.cnf") for s in sides}
# With bench-load.sh -f, every side loads its providers by command-line
# flags (WORK/SIDE.flags, one argument per line, placed after the
# subcommand) under the stock configuration, as `openssl CMD -provider
# rustica` users do.
flags = {}
for s in sides:
    path = os.path.join(work, f"{s}.flags")
    if os.path.exists(path):
        with open(path) as f:
            flags[s] = f.read().splitlines()
        conf[s] = os.path.join(work, "stock.cnf")
doc, key, pub, sig, = (os.path.join(work, n) for n in ("doc.bin", "key.pem", "pub.pem", "sig.bin"))
commands = {
    "rand -hex 16": ["rand", "-hex", "16"],
    "dgst -sha256 -sign (2048, 3 MiB)": ["dgst", "-sha256", "-sign", key, "-out", os.devnull, doc],
    "dgst -sha256 -verify (2048, 3 MiB)": ["dgst", "-sha256", "-verify", pub, "-signature", sig, doc],
    "req -x509 -new -key (2048)": ["req", "-x509", "-new", "-key", key, "-subj", "/CN=bench",
                                   "-days", "30", "-out", os.devnull],
}

def run(side, args):
    env = dict(os.environ, OPENSSL_CONF=conf[side])
    t0 = time.perf_counter_ns()
    p = subprocess.Popen(["openssl", args[0]] + flags.get(side, []) + args[1:], env=env,
                         stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE)
    err = p.stderr.read()
    _, status, usage = os.wait4(p.pid, 0)
    t1 = time.perf_counter_ns()
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode != 0:
        sys.exit(f"bench-load: openssl {' '.join(args)} failed on side {side}:\n"
                 + err.decode(errors="replace"))
    return (t1 - t0) / 1e6, (usage.ru_utime + usage.ru_stime) * 1e3

def rotated(names, r):
    """Round r's order of the sides: each side goes first in turn, so that
    drift on a shared machine hits every side alike."""
    return names[r % len(names):] + names[:r % len(names)]


def compare(a, b):
    """B/A of paired times: "ratio [lo–hi]: verdict"."""
    pairs = "".join(f"{x} {y}\n" for x, y in zip(a, b))
    out = subprocess.run([rustica, "compare", "--lower-is-better"], input=pairs, text=True,
                         capture_output=True, check=True).stdout.strip().split("\t")
    return out[2] if out[0] == "-" else f"{out[0]} {out[1]}: {out[2]}"


results, cpu, ratio, cpu_ratio = {}, {}, {}, {}
for name, args in commands.items():
    samples = {s: [] for s in sides}
    cpu_samples = {s: [] for s in sides}
    for s in sides:  # warm the page cache once per side
        run(s, args)
    for r in range(rounds):
        for s in rotated(sides, r):
            wall, used = run(s, args)
            samples[s].append(wall)
            cpu_samples[s].append(used)
    results[name] = {s: statistics.median(v) for s, v in samples.items()}
    cpu[name] = {s: statistics.median(v) for s, v in cpu_samples.items()}
    ratio[name] = {s: compare(samples["stock"], samples[s]) for s in sides if s != "stock"}
    cpu_ratio[name] = {s: compare(cpu_samples["stock"], cpu_samples[s]) for s in sides if s != "stock"}

def table(results, ratios, what):
    before = "before" in sides
    extra_head = (" | before (ms) | before - idle (ms) | before - stock (ms)"
                  " | before / stock [95 %]: verdict") if before else ""
    print(f"| command ({what}) | stock (ms) | idle provider (ms) | rustica (ms) "
          f"| rustica - idle (ms) | rustica - stock (ms) | rustica / stock [95 % interval]: verdict"
          f"{extra_head} |")
    print("|---|---:|---:|---:|---:|---:|---|" + ("---:|---:|---:|---|" if before else ""))
    for name, m in results.items():
        r = ratios[name]
        extra = (f" | {m['before']:.2f} | {m['before'] - m['idle']:+.2f} "
                 f"| {m['before'] - m['stock']:+.2f} | {r['before']}") if before else ""
        print(f"| `openssl {name}` | {m['stock']:.2f} | {m['idle']:.2f} | {m['rustica']:.2f} "
              f"| {m['rustica'] - m['idle']:+.2f} | {m['rustica'] - m['stock']:+.2f} "
              f"| {r['rustica']}{extra} |")


PHASES = ["configuration and providers loaded", "PEM private key read",
          "EVP_DigestSignInit_ex", "EVP_DigestSign (one digest)", "OPENSSL_cleanup"]


def run_phases(side):
    """One process of workshop/benches/load/phases.c: (phase times in µs, faults)."""
    # Its own counters file, so bench-load.sh's counts of the openssl
    # commands stay exact; the signer's name is this run's proof.
    env = dict(os.environ, OPENSSL_CONF=conf[side],
               RUSTICA_STATS_PATH=os.path.join(work, "stats-phases"))
    out = subprocess.run([os.path.join(work, "phases"), key], env=env, capture_output=True,
                         text=True)
    fields = out.stdout.split()
    if out.returncode != 0 or len(fields) != 1 + 2 * len(PHASES):
        sys.exit(f"bench-load: phases failed on side {side}:\n{out.stderr}")
    want = "rustica" if side == "rustica" else "default"
    if fields[0] != want:
        sys.exit(f"bench-load: phases on side {side} signed with {fields[0]}, not {want}")
    n = len(PHASES)
    return [float(x) for x in fields[1:1 + n]], [int(x) for x in fields[1 + n:]]


def phases_table():
    # The table's three sides only (not bench-load.sh -c's "before").
    shown = ["stock", "idle", "rustica"]
    times = {s: [[] for _ in PHASES] for s in shown}
    totals = {s: [] for s in shown}
    faults = {s: [[] for _ in PHASES] for s in shown}
    for s in shown:
        run_phases(s)
    for r in range(rounds):
        for s in rotated(shown, r):
            t, f = run_phases(s)
            for i in range(len(PHASES)):
                times[s][i].append(t[i])
                faults[s][i].append(f[i])
            totals[s].append(sum(t))
    med = statistics.median
    print("| phase (in-process, wall) | stock (µs) | idle provider (µs) | rustica (µs) "
          "| rustica - idle (µs) | rustica - stock (µs) | rustica / stock [95 % interval]: verdict "
          "| minor faults stock / idle / rustica |")
    print("|---|---:|---:|---:|---:|---:|---|---|")
    rows = [(name, [times[s][i] for s in shown], [faults[s][i] for s in shown])
            for i, name in enumerate(PHASES)]
    rows.append(("whole", [totals[s] for s in shown],
                 [[sum(x) for x in zip(*faults[s])] for s in shown]))
    for name, (a, i, b), fl in rows:
        print(f"| {name} | {med(a):.0f} | {med(i):.0f} | {med(b):.0f} | {med(b) - med(i):+.0f} "
              f"| {med(b) - med(a):+.0f} | {compare(a, b)} "
              f"| {' / '.join(f'{med(x):.0f}' for x in fl)} |")


print(f"# load average at the end: {os.getloadavg()[0]:.2f}")
if flags:
    print("# every side loaded by command-line flags: "
          + "; ".join(f"{s}: {' '.join(os.path.basename(a) for a in flags.get(s, [])) or '(none)'}"
                      for s in sides))
table(results, ratio, "wall")
print()
table(cpu, cpu_ratio, "CPU")
if os.path.exists(os.path.join(work, "phases")) and not flags:
    print()
    phases_table()
