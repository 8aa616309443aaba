#!/usr/bin/env python3
"""Statistics for workshop/benches/timing/marvin.c output (the Marvin method).

usage: marvin.py [--markdown] [--drop CLASS,...] FILE...

Files with the same first header line (padding, key size, provider) and
the same "# config" line are one configuration: their rounds are pooled
(the bench script writes each configuration in several chunks,
interleaved with the others). Per configuration:

  - each class's median time (ns) and mean rank;
  - the Friedman test across the classes, the rounds as blocks (each
    round timed every class once, in random order): chi-square statistic
    with tie correction, k - 1 degrees of freedom, p-value;
  - with --drop, the same without those classes (is a difference that
    one class's alone?);
  - every pair of classes: the paired differences (class a minus class b
    in the same round), their median, its 95% confidence interval from
    the order statistics of the sign test (distribution-free), and the
    sign test's two-sided exact p-value. The worst pair is the one with
    the smallest sign-test p (ties: the larger |median|).

Pure Python 3 (no numpy or scipy): the chi-square and binomial tails come
from the regularized incomplete gamma and beta functions, by their
continued fractions.
"""
import bisect
import math
import sys

# ---------------------------------------------------------------- special functions


def _gamma_cf(a, x):
    """Upper regularized gamma Q(a, x), continued fraction (x >= a + 1)."""
    tiny = 1e-300
    b = x + 1.0 - a
    c = 1.0 / tiny
    d = 1.0 / b
    h = d
    for i in range(1, 10000):
        an = -i * (i - a)
        b += 2.0
        d = an * d + b
        d = tiny if abs(d) < tiny else d
        c = b + an / c
        c = tiny if abs(c) < tiny else c
        d = 1.0 / d
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < 1e-15:
            break
    return math.exp(-x + a * math.log(x) - math.lgamma(a)) * h


def _gamma_series(a, x):
    """Lower regularized gamma P(a, x), series (x < a + 1)."""
    term = 1.0 / a
    total = term
    ap = a
    for _ in range(10000):
        ap += 1.0
        term *= x / ap
        total += term
        if abs(term) < abs(total) * 1e-16:
            break
    return total * math.exp(-x + a * math.log(x) - math.lgamma(a))


def chi2_sf(stat, df):
    """P(chi-square with df degrees of freedom >= stat)."""
    if stat <= 0:
        return 1.0
    a, x = df / 2.0, stat / 2.0
    if x < a + 1.0:
        return max(0.0, 1.0 - _gamma_series(a, x))
    return _gamma_cf(a, x)


def _beta_cf(a, b, x):
    tiny = 1e-300
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c = 1.0
    d = 1.0 - qab * x / qap
    d = tiny if abs(d) < tiny else d
    d = 1.0 / d
    h = d
    for m in range(1, 100000):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = tiny if abs(d) < tiny else d
        c = 1.0 + aa / c
        c = tiny if abs(c) < tiny else c
        d = 1.0 / d
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = tiny if abs(d) < tiny else d
        c = 1.0 + aa / c
        c = tiny if abs(c) < tiny else c
        d = 1.0 / d
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < 1e-15:
            break
    return h


def betainc(a, b, x):
    """Regularized incomplete beta I_x(a, b)."""
    if x <= 0:
        return 0.0
    if x >= 1:
        return 1.0
    lbt = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(lbt) * _beta_cf(a, b, x) / a
    return 1.0 - math.exp(lbt) * _beta_cf(b, a, 1.0 - x) / b


def binom_half_cdf(m, n):
    """P(X <= m), X ~ Binomial(n, 1/2)."""
    if m < 0:
        return 0.0
    if m >= n:
        return 1.0
    return betainc(n - m, m + 1, 0.5)


def sign_test_p(pos, neg):
    """Two-sided exact sign test (zero differences dropped)."""
    n = pos + neg
    if n == 0:
        return 1.0
    return min(1.0, 2.0 * binom_half_cdf(min(pos, neg), n))


def median_ci_rank(n, level=0.95):
    """The largest r with P(X <= r - 1) <= (1 - level) / 2, X ~ Bin(n, 1/2):
    [x_(r), x_(n - r + 1)] covers the median with at least that level."""
    alpha = (1.0 - level) / 2.0
    r = max(1, int(n / 2.0 - 1.959964 * math.sqrt(n) / 2.0))
    while r > 1 and binom_half_cdf(r - 1, n) > alpha:
        r -= 1
    while binom_half_cdf(r, n) <= alpha:
        r += 1
    return r


def median(sorted_values):
    n = len(sorted_values)
    mid = n // 2
    return sorted_values[mid] if n % 2 else (sorted_values[mid - 1] + sorted_values[mid]) / 2.0


# ---------------------------------------------------------------- input


class Config:
    def __init__(self, title, config):
        self.title = title
        self.config = config
        self.header = {}
        self.classes = None
        self.rows = []  # per round: times in ns, in class order
        self.files = 0
        self.wrong = 0
        self.moved = 0


def drop_classes(g, names):
    keep = [i for i, c in enumerate(g.classes) if c not in names]
    if len(keep) == len(g.classes):
        return g
    h = Config(g.title, g.config + " without " + ",".join(sorted(names)))
    h.header, h.files, h.wrong, h.moved = g.header, g.files, g.wrong, g.moved
    h.classes = [g.classes[i] for i in keep]
    h.rows = [[row[i] for i in keep] for row in g.rows]
    return h


def read(paths):
    groups = {}
    for path in paths:
        with open(path) as f:
            lines = f.read().splitlines()
        head = {}
        title = None
        body = 0
        for i, line in enumerate(lines):
            if not line.startswith("#"):
                body = i
                break
            key, _, value = line[1:].strip().partition(":")
            if key == "marvin" and title is None:
                title = value.strip().rsplit(",", 1)[0]  # without the round count
            head[key.strip()] = value.strip()
        if title is None:
            raise SystemExit(f"{path}: not marvin output")
        name = (title, head.get("config", "?"))
        g = groups.setdefault(name, Config(*name))
        classes = lines[body].split(",")
        if g.classes is None:
            g.classes = classes
            g.header = head
        elif g.classes != classes:
            raise SystemExit(f"{path}: classes differ from the other files of {name}")
        scale = 1.0 / float(head["tsc_per_ns"])
        for line in lines[body + 1:]:
            if line:
                g.rows.append([int(v) * scale for v in line.split(",")])
        g.files += 1
        g.wrong += int(head.get("wrong_outcomes", "0"))
        g.moved += int(head.get("cpu_changes", "0"))
    return list(groups.values())


# ---------------------------------------------------------------- statistics


def friedman(rows, k):
    """Friedman chi-square (tie-corrected), its p-value and the rank sums."""
    n = len(rows)
    sums = [0.0] * k
    ties = 0.0
    for row in rows:
        order = sorted(range(k), key=row.__getitem__)
        i = 0
        while i < k:
            j = i
            while j + 1 < k and row[order[j + 1]] == row[order[i]]:
                j += 1
            rank = (i + j) / 2.0 + 1.0
            for x in range(i, j + 1):
                sums[order[x]] += rank
            t = j - i + 1
            ties += t ** 3 - t
            i = j + 1
    stat = 12.0 / (n * k * (k + 1)) * sum(s * s for s in sums) - 3.0 * n * (k + 1)
    correction = 1.0 - ties / (n * k * (k * k - 1))
    stat = stat / correction if correction > 0 else 0.0
    return stat, chi2_sf(stat, k - 1), sums


def pair(rows, a, b, r):
    d = sorted(row[a] - row[b] for row in rows)
    n = len(d)
    neg = bisect.bisect_left(d, 0.0)
    pos = n - bisect.bisect_right(d, 0.0)
    return {
        "median": median(d),
        "lo": d[r - 1],
        "hi": d[n - r],
        "p": sign_test_p(pos, neg),
        "pos": pos,
        "neg": neg,
    }


def analyse(g):
    k = len(g.classes)
    n = len(g.rows)
    stat, p, sums = friedman(g.rows, k)
    r = median_ci_rank(n)
    pairs = {}
    for a in range(k):
        for b in range(a + 1, k):
            pairs[(a, b)] = pair(g.rows, a, b, r)
    worst = min(pairs, key=lambda ab: (pairs[ab]["p"], -abs(pairs[ab]["median"])))
    largest = max(pairs, key=lambda ab: abs(pairs[ab]["median"]))
    medians = [median(sorted(row[c] for row in g.rows)) for c in range(k)]
    return {
        "n": n, "k": k, "stat": stat, "p": p, "mean_rank": [s / n for s in sums],
        "medians": medians, "pairs": pairs, "worst": worst, "largest": largest,
    }


# ---------------------------------------------------------------- output


def fmt_p(p):
    if p == 0.0:
        return "< 1e-300"
    return f"{p:.3g}" if p < 0.001 else f"{p:.3f}"


def describe(g, res):
    def line(ab, what):
        a, b = ab
        x = res["pairs"][ab]
        return (f"{what}: {g.classes[a]} - {g.classes[b]}: median {x['median']:+.1f} ns, "
                f"95% CI [{x['lo']:+.1f}, {x['hi']:+.1f}] ns, sign test p = {fmt_p(x['p'])} "
                f"({x['pos']} +, {x['neg']} -)")

    out = [f"== {g.title} | config {g.config}",
           f"   {res['n']} rounds x {res['k']} classes ({g.files} files); "
           f"{g.header.get('openssl', '?')}; cpu {g.header.get('cpu', '?')}; "
           f"wrong outcomes {g.wrong}; cpu changes {g.moved}"]
    if "rustica" in g.header:
        out.append(f"   {g.header['rustica']}")
    width = max(len(c) for c in g.classes)
    out.append(f"   {'class':<{width}}  median ns  mean rank")
    for c, name in enumerate(g.classes):
        out.append(f"   {name:<{width}}  {res['medians'][c]:9.0f}  {res['mean_rank'][c]:9.4f}")
    npairs = len(res["pairs"])
    out.append(f"   Friedman chi2 = {res['stat']:.2f} (df {res['k'] - 1}), p = {fmt_p(res['p'])}")
    out.append("   " + line(res["worst"], f"worst pair (of {npairs})"))
    if res["largest"] != res["worst"]:
        out.append("   " + line(res["largest"], "largest |median|"))
    leak = res["p"] < 0.001 and (res["pairs"][res["worst"]]["lo"] > 0
                                 or res["pairs"][res["worst"]]["hi"] < 0)
    out.append("   verdict: " + ("LEAK (Friedman p < 0.001 and the worst pair's CI excludes 0)"
                                 if leak else "no difference detected"))
    return "\n".join(out)


def markdown_row(g, res):
    a, b = res["worst"]
    x = res["pairs"][res["worst"]]
    return (f"| {g.title.replace('marvin: ', '')} | {g.config} | {res['n']:,} | "
            f"{res['stat']:.1f} | {fmt_p(res['p'])} | {g.classes[a]} − {g.classes[b]} | "
            f"{x['median']:+.1f} | [{x['lo']:+.1f}, {x['hi']:+.1f}] | {fmt_p(x['p'])} |")


def main(argv):
    markdown = "--markdown" in argv
    argv = [a for a in argv if a != "--markdown"]
    drop = set()
    if "--drop" in argv:
        at = argv.index("--drop")
        if at + 1 >= len(argv):
            raise SystemExit("--drop needs a class list")
        drop = set(argv[at + 1].split(","))
        del argv[at:at + 2]
    paths = argv
    if not paths:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    results = []
    for g in read(paths):
        g = drop_classes(g, drop)
        if len(g.rows) < 10:
            raise SystemExit(f"{g.title} / {g.config}: only {len(g.rows)} rounds")
        res = analyse(g)
        results.append((g, res))
        print(describe(g, res), flush=True)
    if markdown:
        print()
        print("| padding, provider | config | rounds | Friedman χ² | p | worst pair | "
              "median (ns) | 95% CI (ns) | sign test p |")
        print("| --- | --- | ---: | ---: | ---: | --- | ---: | --- | ---: |")
        for g, res in results:
            print(markdown_row(g, res))
    bad = sum(g.wrong for g, _ in results)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
