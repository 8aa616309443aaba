#!/usr/bin/env bash
# dudect-style timing check of RSA decryption (a benchmark, not a test):
# interleaved EVP_PKEY_decrypt calls on one RSA-2048 key with valid and
# invalid ciphertexts, rustica and the default provider in the same run,
# Welch's t between the two classes (see benches/timing/dudect.c). A
# constant-time decryption stays below |t| = 4.5.
#
# usage: scripts/bench-timing.sh [-n SAMPLES] [-c CPU] [pkcs1|oaep ...]
#   defaults: -n 200000, -c the last CPU, both paddings.
#   RUSTICA_MODULE=/path/rustica.so measures that module instead of a
#   fresh release build.
set -euo pipefail
cd "$(dirname "$0")/.."
samples=200000
cpu=$(($(nproc) - 1))
while getopts "n:c:" opt; do
  case $opt in
    n) samples=$OPTARG ;; c) cpu=$OPTARG ;;
    *) sed -n '2,12p' "$0"; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
pads=("${@:-pkcs1 oaep}")
read -r -a pads <<<"${pads[*]}"

if [ -z "${RUSTICA_MODULE:-}" ]; then
  scripts/build.sh >/dev/null
  RUSTICA_MODULE=$(pwd)/target/release/rustica.so
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cc -O2 -Wall -Wextra -o "$work/dudect" benches/timing/dudect.c -lcrypto -lm
# Counting is not what is measured.
export RUSTICA_STATS=0

echo "# $(date -u +%Y-%m-%dT%H:%MZ), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# $(openssl version), module $RUSTICA_MODULE, pinned to CPU $cpu"
for pad in "${pads[@]}"; do
  taskset -c "$cpu" "$work/dudect" "$RUSTICA_MODULE" "$pad" "$samples"
done
