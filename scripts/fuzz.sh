#!/usr/bin/env bash
# Runs each of rustica's cargo-fuzz targets for a fixed time.
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]   # default 60 s each, all targets
#
# Needs the nightly toolchain and cargo-fuzz (installed here if missing).
# Corpora grow in fuzz/corpus/<target>, crashes land in
# fuzz/artifacts/<target>; both are git-ignored. A summary line per target
# (runs, coverage, corpus size) is printed at the end and appended to
# fuzz/runs.log. Exits non-zero if any target crashed.
set -euo pipefail
cd "$(dirname "$0")/.."

secs=${1:-60}
shift || true
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
    targets=(key_import sig_padding enc_padding ctx_params)
fi

rustup toolchain list | grep -q '^nightly' || rustup toolchain install nightly --profile minimal
cargo +nightly fuzz --version >/dev/null 2>&1 || cargo install cargo-fuzz --locked

# Fuzzing must not touch the user's shared counters file.
export RUSTICA_STATS=0

(cd fuzz && cargo +nightly fuzz build -O 2>&1 | tail -1)
status=0
summary=()
for t in "${targets[@]}"; do
    mkdir -p "fuzz/corpus/$t" "fuzz/artifacts/$t"
    log="fuzz/artifacts/$t/last-run.log"
    echo "== $t: ${secs}s"
    if (cd fuzz && cargo +nightly fuzz run -O "$t" "corpus/$t" -- \
            -max_total_time="$secs" -max_len=1200 -rss_limit_mb=4096 \
            -print_final_stats=1 >"../$log" 2>&1); then
        result=ok
    else
        result=CRASH
        status=1
        grep -E "panicked|ERROR|SUMMARY|Test unit written" "$log" | head -20 || true
    fi
    runs=$(grep -E '^stat::number_of_executed_units' "$log" | awk '{print $2}' | tail -1 || true)
    cov=$(grep -oE 'cov: [0-9]+' "$log" | tail -1 | awk '{print $2}' || true)
    ft=$(grep -oE 'ft: [0-9]+' "$log" | tail -1 | awk '{print $2}' || true)
    corpus=$(find "fuzz/corpus/$t" -type f | wc -l)
    line="$(date -u +%FT%TZ) $t ${secs}s result=$result runs=${runs:-?} cov=${cov:-?} ft=${ft:-?} corpus=$corpus"
    summary+=("$line")
    echo "$line" >> fuzz/runs.log
done
echo
printf '%s\n' "${summary[@]}"
exit $status
