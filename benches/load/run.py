"""Per-process cost of loading a provider: stock OpenSSL, an idle provider
that registers RSA names and does nothing, and rustica, run interleaved
(one process of each side per round, in rotating order) so drift on a
shared machine hits every side alike. Prints wall-time medians, deltas in
ms and ratios. Called by scripts/bench-load.sh, which prepares WORK."""
import os
import statistics
import subprocess
import sys
import time

work, rounds = sys.argv[1], int(sys.argv[2])
sides = ["stock", "idle", "rustica"]
conf = {s: os.path.join(work, f"{s}.cnf") for s in sides}
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
    p = subprocess.run(["openssl"] + args, env=env, stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE)
    t1 = time.perf_counter_ns()
    if p.returncode != 0:
        sys.exit(f"bench-load: openssl {' '.join(args)} failed on side {side}:\n"
                 + p.stderr.decode(errors="replace"))
    return (t1 - t0) / 1e6

results = {}
for name, args in commands.items():
    samples = {s: [] for s in sides}
    for s in sides:  # warm the page cache once per side
        run(s, args)
    for r in range(rounds):
        order = sides[r % 3:] + sides[:r % 3]
        for s in order:
            samples[s].append(run(s, args))
    results[name] = {s: statistics.median(v) for s, v in samples.items()}

print(f"| command | stock (ms) | idle provider (ms) | rustica (ms) "
      f"| rustica - idle (ms) | rustica - stock (ms) | rustica / stock |")
print("|---|---:|---:|---:|---:|---:|---:|")
for name, m in results.items():
    print(f"| `openssl {name}` | {m['stock']:.2f} | {m['idle']:.2f} | {m['rustica']:.2f} "
          f"| {m['rustica'] - m['idle']:+.2f} | {m['rustica'] - m['stock']:+.2f} "
          f"| {m['rustica'] / m['stock']:.3f} |")
