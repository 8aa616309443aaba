"""Per-process cost of loading a provider: stock OpenSSL, an idle provider
that registers RSA names and does nothing, and rustica, run interleaved
(one process of each side per round, in rotating order) so drift on a
shared machine hits every side alike. Prints wall-time medians, deltas in
ms and ratios, then the same for CPU time (user + system of the process,
less disturbed than wall time by other work on a loaded machine). Each
ratio is the Hodges-Lehmann estimate over the rounds' pairs with its 95 %
interval and verdict, from `rustica compare` (the lab's statistics).
Called by scripts/bench-load.sh, which prepares WORK."""
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
        order = sides[r % len(sides):] + sides[:r % len(sides)]
        for s in order:
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


print(f"# load average at the end: {os.getloadavg()[0]:.2f}")
if flags:
    print("# every side loaded by command-line flags: "
          + "; ".join(f"{s}: {' '.join(os.path.basename(a) for a in flags.get(s, [])) or '(none)'}"
                      for s in sides))
table(results, ratio, "wall")
print()
table(cpu, cpu_ratio, "CPU")
