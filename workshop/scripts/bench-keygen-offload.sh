#!/usr/bin/env bash
# Key generation with its Miller-Rabin exponentiations on an (emulated)
# adapter, against rustica's software path and OpenSSL's default provider,
# in the same run: N keys per side and size, sides alternating, each key a
# separate `openssl genpkey`. Sides:
#   A     the default provider;
#   S     rustica, backend = software;
#   E<L>  rustica on the emulated libica, 16 units of L microseconds each.
# Per key: wall time, and CPU time outside the adapter: the process's user
# + system time minus what the emulator's arithmetic took
# (LIBICA_EMU_CPU_LOG). On IBM Z that arithmetic runs on the card; here it
# runs in the process, so it is measured and taken out. Ratios come with
# their 95 % interval and verdict (rustica compare --unpaired: every key's
# primes are random, so keys are not pairs). Each E key is checked to be
# counted `keygen libica` with its exponentiations on the emulator, and
# every key of every side passes `openssl pkey -check`.
#
#   workshop/scripts/bench-keygen-offload.sh [N] [SIZES] [LATENCIES_US]
#   defaults: 10 "2048 3072 4096" "100 1000"
#
# A benchmark, not a test: it asserts nothing about time.
# shellcheck source-path=SCRIPTDIR source-path=.
. "$(dirname "$0")/../../scripts/lib/common.sh"
n=${1:-10}
sizes=${2:-2048 3072 4096}
latencies=${3:-100 1000}
scripts/build.sh >/dev/null
command -v /usr/bin/time >/dev/null || { apt-get install -y time >/dev/null; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
module_dir=$PWD/target/release
emu=$module_dir/libica_emu.so
[ -f "$emu" ] || die "$emu missing"
export OPENSSL_CONF=/dev/null
rustica=$module_dir/rustica
bench_rustica=$rustica
. scripts/lib/bench-stats.sh

gen() { # side bits -> prints "wall cpu adapter_cpu" (seconds)
  local side=$1 bits=$2 adapter=0
  local -a cmd=(openssl genpkey -algorithm RSA -pkeyopt "rsa_keygen_bits:$bits" -out "$dir/key.pem")
  local -a env_=(env RUSTICA_STATS_PATH="$dir/stats-$side")
  if [ "$side" != A ]; then
    cmd=(openssl genpkey -provider-path "$module_dir" -provider rustica -provider default
      -propquery '?provider=rustica' -algorithm RSA -pkeyopt "rsa_keygen_bits:$bits"
      -out "$dir/key.pem")
  fi
  case $side in
    S) env_+=(RUSTICA_BACKEND=software) ;;
    E*) env_+=(RUSTICA_BACKEND=libica RUSTICA_LIBICA="$emu" LIBICA_EMU_UNITS=16
          LIBICA_EMU_LATENCY_US="${side#E}" LIBICA_EMU_CPU_LOG="$dir/cpu") ;;
  esac
  rm -f "$dir/cpu"
  "${env_[@]}" /usr/bin/time -f "%e %U %S" -o "$dir/time" "${cmd[@]}" 2>/dev/null \
    || fail "$side $bits genpkey failed"
  openssl pkey -in "$dir/key.pem" -check -noout >/dev/null 2>&1 \
    || fail "$side $bits-bit key fails pkey -check"
  [ -s "$dir/cpu" ] && adapter=$(awk '{ s += $2 } END { printf "%.6f", s / 1e9 }' "$dir/cpu")
  awk -v a="$adapter" '{ printf "%s %.6f %s\n", $1, $2 + $3 - a, a }' "$dir/time"
}
mean() { awk '{ s += $1 } END { printf "%.3f", s / NR }'; }
cell() { # file-a file-b column
  { awk -v c="$3" '{ print "A", $c }' "$1"; awk -v c="$3" '{ print "B", $c }' "$2"; } \
    | bench_cell --unpaired --lower-is-better
}
modexp() { # side -> "libica software fallback" of keygen_modexp
  RUSTICA_STATS_PATH="$dir/stats-$1" "$rustica" stats --json | python3 -c '
import json, sys
m = json.load(sys.stdin)["ops"]["keygen_modexp"]
print(m["libica"], m["software"], m["fallback"])'
}
sides=(A S)
for l in $latencies; do sides+=("E$l"); done
echo "| bits | side | keys | wall mean (s) | CPU outside the adapter, mean (s) | adapter CPU, mean (s) | exponentiations per key: libica / software / fallback |"
echo "|---:|---|---:|---:|---:|---:|---|"
declare -A ratios
for bits in $sizes; do
  for s in "${sides[@]}"; do : >"$dir/$s"; rm -f "$dir/stats-$s"; done
  for ((i = 0; i < n; i++)); do
    for s in "${sides[@]}"; do gen "$s" "$bits" >>"$dir/$s"; done
  done
  for s in "${sides[@]}"; do
    exps="-"
    if [ "$s" != A ]; then
      read -r ml ms mf < <(modexp "$s")
      exps="$((ml / n)) / $((ms / n)) / $((mf / n))"
      if [[ $s == E* ]]; then
        keys=$(RUSTICA_STATS_PATH="$dir/stats-$s" "$rustica" stats --json \
          | python3 -c 'import json,sys; print(json.load(sys.stdin)["ops"]["keygen"]["libica"])')
        [ "$keys" = "$n" ] || fail "$s counted $keys keys on libica, expected $n"
      fi
    fi
    printf "| %s | %s | %s | %s | %s | %s | %s |\n" "$bits" "$s" "$n" \
      "$(awk '{ print $1 }' "$dir/$s" | mean)" "$(awk '{ print $2 }' "$dir/$s" | mean)" \
      "$(awk '{ print $3 }' "$dir/$s" | mean)" "$exps"
  done
  for s in "${sides[@]}"; do
    [[ $s == E* ]] || continue
    ratios[$bits $s]="| $bits | $s | $(cell "$dir/S" "$dir/$s" 1) | $(cell "$dir/S" "$dir/$s" 2) | $(cell "$dir/A" "$dir/$s" 2) |"
  done
done
echo
echo "| bits | side | wall E/S [95 % interval]: verdict | CPU outside the adapter E/S | CPU outside the adapter E/A |"
echo "|---:|---|---|---|---|"
for bits in $sizes; do
  for s in "${sides[@]}"; do
    [[ $s == E* ]] && echo "${ratios[$bits $s]}"
  done
done
echo
echo "OpenSSL $(openssl version | cut -d' ' -f2); $(nproc) CPUs; $(date -u +%Y-%m-%dT%H:%MZ)"
