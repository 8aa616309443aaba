#!/usr/bin/env bash
# Builds and runs rustica's cargo-fuzz targets with overflow checks and
# debug assertions on (`cargo fuzz build -O -a`), under AddressSanitizer.
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]   fuzz each target (default 60 s, all)
#   scripts/fuzz.sh --ci [SECONDS]          CI: replay the committed seeds, then
#                                           fuzz every target (default 20 s each)
#   scripts/fuzz.sh --replay [TARGET...]    only replay the committed seeds
#   scripts/fuzz.sh --minimize [TARGET...]  fold what runs found into the
#                                           committed seeds (cargo fuzz cmin)
#
# Seeds are committed in fuzz/corpus/<target>. Files there named by libFuzzer
# (40 hex digits) are the minimized set; any other name is a hand-added
# regression input (e.g. sig_padding/zero-bit-modulus-0a0a) that --minimize
# always keeps. Runs read the seeds and write what they find to
# fuzz/target/work-corpus/<target> (git-ignored); crashes land in
# fuzz/artifacts/<target>. A summary line per target is printed and appended
# to fuzz/runs.log. Exits non-zero if any seed or run crashed.
#
# Needs the nightly toolchain and cargo-fuzz; both are installed if missing,
# cargo-fuzz into $RUSTICA_CACHE/cargo-fuzz (reused by later runs; the cache
# is scripts/lib/common.sh's cache_dir, /var/cache/rustica-build for root,
# ~/.cache/rustica-build for others; what is reused must be yours alone).
# With --ci the fuzz build directory is $RUSTICA_CACHE/fuzz-target,
# so a warm CI run recompiles only rustica itself.
# shellcheck source-path=SCRIPTDIR source-path=.
. "$(dirname "$0")/lib/common.sh"

all_targets=(key_import sig_padding enc_padding ctx_params)
mode=fuzz
case "${1:-}" in
--ci | --replay | --minimize)
    mode=${1#--}
    shift
    ;;
esac
secs=60
if [ "$mode" = ci ]; then
    secs=${1:-20}
    targets=("${all_targets[@]}")
elif [ "$mode" = fuzz ]; then
    secs=${1:-60}
    shift || true
    targets=("$@")
else
    targets=("$@")
fi
[ ${#targets[@]} -gt 0 ] || targets=("${all_targets[@]}")

cache_dir
cache=$RUSTICA_CACHE
# cargo-fuzz's bin/ goes first on PATH and the build directory's programs
# run: both must be yours alone.
cache_reuse -r "$cache/cargo-fuzz"
cache_reuse "$cache/fuzz-target"
export PATH="$cache/cargo-fuzz/bin:$PATH"
rustup toolchain list | grep -q '^nightly' || rustup toolchain install nightly --profile minimal
if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
    echo "== installing cargo-fuzz into $cache/cargo-fuzz"
    cargo install cargo-fuzz --locked --root "$cache/cargo-fuzz"
fi

# Overflow checks and debug assertions on, optimized: an arithmetic bug
# panics instead of wrapping silently.
build_flags=(-O -a)
if [ "$mode" = ci ] && [ -z "${CARGO_TARGET_DIR:-}" ]; then
    build_flags+=(--target-dir "$cache/fuzz-target")
fi
# Per-input limits: a slow or hungry input is reported as a crash.
limits=(-max_len=1200 -timeout=20 -rss_limit_mb=4096)

# Fuzzing must not touch the user's shared counters file.
export RUSTICA_STATS=0

fuzz() { (cd fuzz && cargo +nightly fuzz "$@"); }

echo "== building ${targets[*]} (cargo fuzz build ${build_flags[*]})"
mkdir -p fuzz/target
for t in "${targets[@]}"; do
    if ! fuzz build "${build_flags[@]}" "$t" >fuzz/target/build.log 2>&1; then
        tail -30 fuzz/target/build.log
        echo "fuzz build of $t failed" >&2
        exit 1
    fi
done

status=0
summary=()

# Runs the committed seeds of $1 once (no mutation).
replay() {
    local t=$1 log="fuzz/artifacts/$1/replay.log"
    mkdir -p "fuzz/corpus/$t" "fuzz/artifacts/$t"
    local n
    n=$(find "fuzz/corpus/$t" -type f | wc -l)
    if fuzz run "${build_flags[@]}" "$t" "corpus/$t" -- -runs=0 "${limits[@]}" >"$log" 2>&1; then
        summary+=("$t replay of $n seeds: ok")
    else
        summary+=("$t replay of $n seeds: CRASH (see $log)")
        grep -E "panicked|ERROR|SUMMARY|Test unit written" "$log" | head -20 || true
        status=1
    fi
}

# Fuzzes $1 for $secs seconds from the seeds plus earlier finds.
run() {
    local t=$1 log="fuzz/artifacts/$1/last-run.log" work="fuzz/target/work-corpus/$1"
    mkdir -p "fuzz/corpus/$t" "$work" "fuzz/artifacts/$t"
    echo "== $t: ${secs}s"
    local result=ok
    # New inputs go to the first directory only; the seeds stay as committed.
    # The outer timeout only catches a run that never starts fuzzing.
    if ! timeout $((secs + 300)) bash -c 'cd fuzz && exec cargo +nightly fuzz "$@"' fuzz \
        run "${build_flags[@]}" "$t" "target/work-corpus/$t" "corpus/$t" -- \
        -max_total_time="$secs" "${limits[@]}" -print_final_stats=1 >"$log" 2>&1; then
        result=CRASH
        status=1
        grep -E "panicked|ERROR|SUMMARY|Test unit written" "$log" | head -20 || true
    fi
    local runs cov ft found
    runs=$(grep -E '^stat::number_of_executed_units' "$log" | awk '{print $2}' | tail -1 || true)
    cov=$(grep -oE 'cov: [0-9]+' "$log" | tail -1 | awk '{print $2}' || true)
    ft=$(grep -oE 'ft: [0-9]+' "$log" | tail -1 | awk '{print $2}' || true)
    found=$(find "$work" -type f | wc -l)
    local line
    line="$(date -u +%FT%TZ) $t ${secs}s result=$result runs=${runs:-?} cov=${cov:-?} ft=${ft:-?} work-corpus=$found"
    summary+=("$line")
    echo "$line" >>fuzz/runs.log
}

# Replaces the libFuzzer-named seeds of $1 with a minimized set covering
# the seeds and the work corpus; hand-named regression inputs stay.
minimize() {
    local t=$1 seeds="fuzz/corpus/$1" work="fuzz/target/work-corpus/$1"
    local merged="fuzz/target/cmin/$1"
    rm -rf "$merged"
    mkdir -p "$merged" "$seeds" "$work"
    find "$seeds" -type f -exec cp -t "$merged" {} +
    find "$work" -type f -exec cp -t "$merged" {} +
    fuzz cmin "${build_flags[@]}" "$t" "target/cmin/$t" -- "${limits[@]}" -use_counters=0 >"fuzz/target/cmin-$t.log" 2>&1 || {
        echo "cmin of $t failed, see fuzz/target/cmin-$t.log" >&2
        status=1
        return
    }
    find "$seeds" -type f -regextype posix-extended -regex '.*/[0-9a-f]{40}' -delete
    find "$merged" -type f -regextype posix-extended -regex '.*/[0-9a-f]{40}' -exec cp -t "$seeds" {} +
    summary+=("$t: $(find "$seeds" -type f | wc -l) seeds, $(du -sk "$seeds" | cut -f1) KiB")
}

for t in "${targets[@]}"; do
    case $mode in
    ci)
        replay "$t"
        run "$t"
        ;;
    fuzz) run "$t" ;;
    replay) replay "$t" ;;
    minimize) minimize "$t" ;;
    esac
done
echo
printf '%s\n' "${summary[@]}"
exit $status
