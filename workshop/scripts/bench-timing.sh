#!/usr/bin/env bash
# Timing checks of RSA decryption (benchmarks, not tests; docs/security.md,
# "Measuring it").
#
# dudect mode (the default): interleaved EVP_PKEY_decrypt calls on one
# RSA-2048 key with valid and invalid ciphertexts, rustica and the default
# provider in the same run, Welch's t between the two classes (see
# workshop/benches/timing/dudect.c). A constant-time decryption stays below 4.5.
#
# usage: workshop/scripts/bench-timing.sh [-n SAMPLES] [-c CPU] [pkcs1|oaep ...]
#   defaults: -n 200000, -c the last CPU, both paddings.
#   RUSTICA_MODULE=/path/rustica.so measures that module instead of a
#   fresh release build.
#
# marvin mode: many ciphertext classes (workshop/benches/timing/marvin.c), on the
# default provider, rustica's software backend and rustica's libica
# backend (the emulated libica), a Friedman test per configuration and the
# worst pair's median difference with its 95% CI (workshop/benches/timing/marvin.py).
#
# usage: workshop/scripts/bench-timing.sh marvin [-n ROUNDS] [-r CHUNK] [-c CPU]
#            [-b CONFIGS] [-q MINUTES] [-o DIR] [pkcs1|pkcs1-ir|oaep|raw ...]
#   -n  rounds per configuration (each round times every class once, in
#       random order): 100000 by default.
#   -r  rounds per process (10000): the configurations take turns, one
#       chunk each, so that all of them see the same machine over the run.
#   -b  configurations, "default software libica" by default.
#   -q  wait up to MINUTES for a quiet machine (1-minute load below 0.7,
#       polled every 30 s) before measuring; 0 (default) = do not wait.
#   -o  where the raw timings go (default: a new /var/tmp/rustica-marvin.*,
#       kept; the report is DIR/report.txt).
#   paddings: pkcs1 (implicit rejection off), pkcs1-ir (implicit rejection
#   on; the default provider only from OpenSSL 3.2, which has it), oaep;
#   raw (no padding: the primitive alone, blocks of different sizes, to
#   locate a difference). Default: pkcs1 pkcs1-ir oaep.
#   RUSTICA_MODULE as above; RUSTICA_LIBICA_EMU=/abs/libica_emu.so (default:
#   libica_emu.so beside the module).
# shellcheck source-path=SCRIPTDIR source-path=.
. "$(dirname "$0")/../../scripts/lib/common.sh"

build_module() {
  if [ -z "${RUSTICA_MODULE:-}" ]; then
    scripts/build.sh >/dev/null
    RUSTICA_MODULE=$(pwd)/target/release/rustica.so
  fi
  RUSTICA_MODULE=$(realpath "$RUSTICA_MODULE")
}

header() {
  echo "# $(date -u +%Y-%m-%dT%H:%MZ), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "# $(openssl version), module $RUSTICA_MODULE, pinned to CPU $cpu"
}

marvin() {
  local rounds=100000 chunk=10000 configs="default software libica" quiet=0 out=""
  OPTIND=1
  while getopts "n:r:c:b:q:o:" opt; do
    case $opt in
      n) rounds=$OPTARG ;; r) chunk=$OPTARG ;; c) cpu=$OPTARG ;;
      b) configs=$OPTARG ;; q) quiet=$OPTARG ;; o) out=$OPTARG ;;
      *) sed -n '15,36p' "$0"; exit 2 ;;
    esac
  done
  shift $((OPTIND - 1))
  local pads=("$@")
  [ ${#pads[@]} -gt 0 ] || pads=(pkcs1 pkcs1-ir oaep)
  local cfgs
  read -r -a cfgs <<<"$configs"

  build_module
  local emu=${RUSTICA_LIBICA_EMU:-$(dirname "$RUSTICA_MODULE")/libica_emu.so}
  if [[ " ${cfgs[*]} " == *" libica "* ]]; then
    [ -f "$emu" ] || die "no emulated libica at $emu (set RUSTICA_LIBICA_EMU)"
    emu=$(realpath "$emu")
  fi
  if [ -z "$out" ]; then
    out=$(mktemp -d /var/tmp/rustica-marvin.XXXXXX)
  fi
  mkdir -p "$out"
  if compgen -G "$out/*.csv" >/dev/null; then
    echo "$out already holds timings; give a new directory" >&2
    exit 1
  fi
  local bin="$out/marvin"
  cc -O2 -Wall -Wextra -o "$bin" workshop/benches/timing/marvin.c -lcrypto
  # Nothing of the system's openssl.cnf (which may load rustica) in the key
  # generation; marvin configures its own library context.
  OPENSSL_CONF=/dev/null openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 \
    -out "$out/key.pem" 2>/dev/null
  # Counting is not what is measured.
  export RUSTICA_STATS=0
  local run=(taskset -c "$cpu" "$bin" -k "$out/key.pem" -m "$RUSTICA_MODULE" -l "$emu")

  # The implicit-rejection parameter exists in the default provider from 3.2.
  local v
  v=$(openssl version | awk '{print $2}')
  local stock_ir=0
  if [ "$(printf '%s\n3.2.0\n' "$v" | sort -V | head -n1)" = 3.2.0 ]; then stock_ir=1; fi

  # The libica configuration must really reach the emulator: one round,
  # with the emulator's call log on (it is off while timing).
  if [[ " ${cfgs[*]} " == *" libica "* ]]; then
    LIBICA_EMU_COUNTS="$out/emu-calls" "${run[@]}" -b libica -p pkcs1 \
      -c valid_48,no_structure -n 1 -o "$out/preflight.csv"
    local calls
    calls=$(grep -c ' rsa_crt 2048 ok$' "$out/emu-calls" || true)
    if [ "$calls" -lt 10 ]; then
      echo "the libica configuration made $calls ica_rsa_crt calls, not 10: not on the emulator" >&2
      exit 1
    fi
    rm -f "$out/emu-calls" "$out/preflight.csv"
  fi

  if [ "$quiet" -gt 0 ]; then
    local waited=0 load
    while :; do
      load=$(cut -d' ' -f1 /proc/loadavg)
      if awk -v l="$load" 'BEGIN { exit !(l < 0.7) }'; then
        echo "# quiet after ${waited} s (1-minute load $load)"
        break
      fi
      if [ "$waited" -ge $((quiet * 60)) ]; then
        echo "# NOT QUIET: 1-minute load still $load after $quiet minutes; measuring anyway"
        break
      fi
      sleep 30
      waited=$((waited + 30))
    done
  fi

  {
    header
    echo "# marvin: rounds $rounds per configuration, chunks of $chunk, paddings ${pads[*]}, configurations ${cfgs[*]}, raw timings in $out"
  } | tee "$out/report.txt"
  local start=$SECONDS done=0 pad cfg
  while [ "$done" -lt "$rounds" ]; do
    local n=$((rounds - done < chunk ? rounds - done : chunk)) part
    part=$(printf '%03d' $((done / chunk)))
    for pad in "${pads[@]}"; do
      for cfg in $(printf '%s\n' "${cfgs[@]}" | shuf); do
        if [ "$cfg" = default ] && [ "$pad" = pkcs1-ir ] && [ "$stock_ir" = 0 ]; then
          continue
        fi
        "${run[@]}" -b "$cfg" -p "$pad" -n "$n" -o "$out/$pad-$cfg-$part.csv"
      done
    done
    done=$((done + n))
    echo "# $done/$rounds rounds, $(((SECONDS - start) / 60)) min, load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
  done
  echo "# measured in $(((SECONDS - start) / 60)) min, load at the end $(cut -d' ' -f1-3 /proc/loadavg)" |
    tee -a "$out/report.txt"
  if [ "$stock_ir" = 0 ] && [[ " ${pads[*]} " == *" pkcs1-ir "* ]]; then
    echo "# pkcs1-ir: no default provider figures ($v has no implicit rejection)" | tee -a "$out/report.txt"
  fi
  python3 workshop/benches/timing/marvin.py --markdown "$out"/*-[0-9][0-9][0-9].csv | tee -a "$out/report.txt"
}

cpu=$(($(nproc) - 1))
if [ "${1:-}" = marvin ]; then
  shift
  marvin "$@"
  exit
fi

samples=200000
while getopts "n:c:" opt; do
  case $opt in
    n) samples=$OPTARG ;; c) cpu=$OPTARG ;;
    *) sed -n '2,13p' "$0"; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
pads=("${@:-pkcs1 oaep}")
read -r -a pads <<<"${pads[*]}"

build_module
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cc -O2 -Wall -Wextra -o "$work/dudect" workshop/benches/timing/dudect.c -lcrypto -lm
# Counting is not what is measured.
export RUSTICA_STATS=0

header
for pad in "${pads[@]}"; do
  taskset -c "$cpu" "$work/dudect" "$RUSTICA_MODULE" "$pad" "$samples"
done
