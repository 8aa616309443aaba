#!/usr/bin/env bash
# The lab's false calls, measured: runs `rustica lab --aa` (both sides stock
# OpenSSL, the same alternation and sampling as an A/B lab) RUNS times and
# counts, per column and for the whole summary, how often a cell's own 95 %
# interval excluded 1x (what the summary listed before family control) and
# how often a cell survived Holm's control (what the summary lists now).
# Nothing differs between the sides, so every call is a false one.
#
#   workshop/scripts/lab-aa.sh [RUNS] [LAB OPTIONS...]   # default: 5 runs of the quick lab
#   workshop/scripts/lab-aa.sh 20 --sizes 1024,2048 --skip multi
#
# Each run's reports stay in lab-results/aa-<date-time>/run-N/ (AA_OUT).
# A measurement, not a test: harness/tests/lab_aa.rs is the test; the
# figures are in docs/lab.md ("A/A").
# shellcheck source-path=SCRIPTDIR source-path=.
. "$(dirname "$0")/../../scripts/lib/common.sh"
runs=${1:-5}
shift || true
scripts/build.sh >/dev/null
out=${AA_OUT:-lab-results/aa-$(date +%Y-%m-%dT%H-%M-%S)}
mkdir -p "$out"
for i in $(seq 1 "$runs"); do
  start=$(date +%s)
  target/release/rustica lab --aa --out "$out/run-$i" "$@" >"$out/run-$i.log" 2>&1 || {
    echo "lab-aa: run $i failed (exit $?): see $out/run-$i.log" >&2
    exit 1
  }
  echo "lab-aa: run $i of $runs: $(( $(date +%s) - start )) s" >&2
done
python3 - "$out" "$runs" <<'EOF'
import json, sys, collections
out, runs = sys.argv[1], int(sys.argv[2])
raw = collections.Counter()       # column -> cells whose interval excluded 1
kept = collections.Counter()      # column -> cells that survived Holm
cells = collections.Counter()     # column -> cells with an interval
runs_raw = runs_kept = 0
family_sizes = []
for i in range(1, runs + 1):
    report = json.load(open(f"{out}/run-{i}/report.json"))
    any_raw = any_kept = False
    size = 0
    for row in report["rows"]:
        for c in row["columns"]:
            k = c["comparison"]
            if k.get("p_value") is None:
                continue
            size += 1
            cells[c["column"]] += 1
            if k["interval_excludes_1"]:
                raw[c["column"]] += 1
                any_raw = True
            if k["survives_family_control"]:
                kept[c["column"]] += 1
                any_kept = True
    family_sizes.append(size)
    runs_raw += any_raw
    runs_kept += any_kept
print(f"A/A: {runs} runs, {min(family_sizes)}-{max(family_sizes)} cells each ({out})")
print("| column | cells | interval excludes 1x | counted after Holm |")
print("|---|---:|---:|---:|")
for col in cells:
    print(f"| {col} | {cells[col]} | {raw[col]} ({100 * raw[col] / cells[col]:.1f} %) "
          f"| {kept[col]} ({100 * kept[col] / cells[col]:.1f} %) |")
total, total_raw, total_kept = sum(cells.values()), sum(raw.values()), sum(kept.values())
print(f"| every cell | {total} | {total_raw} ({100 * total_raw / total:.1f} %) "
      f"| {total_kept} ({100 * total_kept / total:.1f} %) |")
print(f"| runs whose summary lists anything | {runs} | {runs_raw} ({100 * runs_raw / runs:.0f} %) "
      f"| {runs_kept} ({100 * runs_kept / runs:.0f} %) |")
EOF
