#!/usr/bin/env bash
# Instructions per process, A/B: callgrind over whole `openssl` runs (the
# dynamic loader, configuration, key decoding, the operation and exit), so
# that what rustica costs a short process is a count, not a guess. Four
# commands: `rand -hex 16` (no RSA: what loading rustica costs every
# process), `dgst -sha256 -sign` and `-verify` of a 3 MiB file with a
# 2048-bit key, and `req -x509 -new -key` with that key. Two ways of
# loading rustica, each against its own stock side:
#   conf:  openssl.cnf with `default_properties = ?provider=rustica` (B),
#          against the default provider alone (A);
#   flags: `-provider-path DIR -provider rustica -provider default
#          -propquery ?provider=rustica` on the command line (B), against
#          `-provider default` (A).
# Prints the totals, then where B's extra goes: the inclusive count of the
# libcrypto functions that make up an RSA command (module load, key
# decoding, the operation's init, the operation), B against A. Every
# B run must be counted by rustica (its statistics), and each B signature
# must equal A's (PKCS#1 v1.5 is deterministic).
#
# A process's private operation draws a blinding pair, whose modular
# inversion costs about ±0.1 M instructions more or less with its random
# value (on both sides, so B - A of one pair of runs moves by up to about
# ±0.25 M): each count is the least of REPEATS runs.
#
# usage: workshop/scripts/bench-process-instructions.sh [--check]
#   REPEATS=R: runs per count (default 2, with --check 3).
#   OPENSSL_DIR=PREFIX: another OpenSSL (scripts/openssl-build.sh's
#            prefix, e.g. 3.5's), whose `openssl` both sides run;
#            RUSTICA_MODULE must then be a rustica built against it.
#   --check: fails if B - A exceeds 0.6 M instructions for `rand` or
#            1.8 M for an RSA command, either way of loading (about 35 s;
#            docs/performance.md, "Instructions per process").
# shellcheck source-path=SCRIPTDIR source-path=.
. "$(dirname "$0")/../../scripts/lib/common.sh"
check=0
if [ "${1:-}" = "--check" ]; then check=1; shift; fi
case "${1:-}" in -*|?*) sed -n '2,31p' "$script_path"; exit 2 ;; esac
repeats=${REPEATS:-$((check ? 3 : 2))}
command -v valgrind >/dev/null || die "valgrind is missing (scripts/setup.sh tests installs it)"
command -v callgrind_annotate >/dev/null || die "callgrind_annotate is missing (valgrind)"
. workshop/scripts/lib/callgrind.sh
bench_openssl_dir
bench_setup RUSTICA_STATS
. scripts/lib/counted.sh

OPENSSL_CONF=$work/a.cnf openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$work/key.pem" 2>/dev/null
OPENSSL_CONF=$work/a.cnf openssl pkey -in "$work/key.pem" -pubout -out "$work/pub.pem"
# A deterministic 3 MiB document (the lab's size).
python3 -c 'import sys; sys.stdout.buffer.write(bytes(range(256)) * (3 * 4096))' >"$work/doc.bin"
OPENSSL_CONF=$work/a.cnf openssl dgst -sha256 -sign "$work/key.pem" -out "$work/sig.bin" "$work/doc.bin"

# command_args NAME: the openssl command line of a command (after the
# subcommand name, which is the first word).
command_args() {
  case $1 in
    rand) echo "rand -hex 16" ;;
    sign) echo "dgst -sha256 -sign $work/key.pem -out $work/out.sig $work/doc.bin" ;;
    verify) echo "dgst -sha256 -verify $work/pub.pem -signature $work/sig.bin $work/doc.bin" ;;
    req) echo "req -x509 -new -key $work/key.pem -subj /CN=bench -days 30 -out $work/out.pem" ;;
  esac
}
commands=(rand sign verify req)
# steps_of NAME: the libcrypto function that does each step of the
# breakdown (module load, key decoding, init, operation; "-": the command
# has no such step). req signs through EVP_DigestSign, which includes the
# final step on A.
steps_of() {
  case $1 in
    rand) echo "DSO_load - - -" ;;
    sign) echo "DSO_load OSSL_DECODER_CTX_new_for_pkey EVP_DigestSignInit_ex EVP_DigestSignFinal" ;;
    verify) echo "DSO_load OSSL_DECODER_CTX_new_for_pkey EVP_DigestVerifyInit_ex EVP_DigestVerifyFinal" ;;
    req) echo "DSO_load OSSL_DECODER_CTX_new_for_pkey EVP_DigestSignInit_ex EVP_DigestSign" ;;
  esac
}
flags=(-provider-path "$(dirname "$RUSTICA_MODULE")" -provider "$(basename "$RUSTICA_MODULE" .so)"
       -provider default -propquery "?provider=rustica")

# measure WAY SIDE COMMAND: runs it under callgrind REPEATS times, keeps the
# profile of the run with the fewest instructions as $work/WAY-SIDE-COMMAND.cg.
measure() {
  local way=$1 side=$2 cmd=$3 r best= total conf=a extra=() words
  read -r -a words <<<"$(command_args "$cmd")"
  case $way:$side in
    conf:b) conf=b ;;
    flags:a) extra=(-provider default) ;;
    flags:b) extra=("${flags[@]}") ;;
  esac
  for r in $(seq "$repeats"); do
    cg_run "$conf" "$work/run.cg" openssl "${words[0]}" "${extra[@]}" "${words[@]:1}" >/dev/null || {
      echo "bench-process-instructions: $cmd failed ($way, side $side)" >&2
      exit 1
    }
    if [ "$cmd" = sign ]; then
      cmp -s "$work/out.sig" "$work/sig.bin" || { echo "bench-process-instructions: side $side ($way) signed differently from stock" >&2; exit 1; }
    fi
    total=$(cg_totals "$work/run.cg")
    if [ -z "$best" ] || [ "$total" -lt "$best" ]; then
      best=$total
      mv "$work/run.cg" "$work/$way-$side-$cmd.cg"
    fi
  done
}

# inclusive FILE FUNCTIONS: "function count" lines for the functions named
# in the space-separated list FUNCTIONS.
inclusive() {
  callgrind_annotate --inclusive=yes --threshold=100 "$1" 2>/dev/null | awk -v list="$2" '
    BEGIN { n = split(list, f, " "); for (i = 1; i <= n; i++) want[f[i]] = 1 }
    $1 ~ /^[0-9,]+$/ {
      name = $0; sub(/.*:/, "", name); sub(/ .*/, "", name)
      if (name in want && !(name in seen)) { c = $1; gsub(",", "", c); seen[name] = c }
    }
    END { for (k in seen) print k, seen[k] }'
}
mega() { awk -v n="$1" 'BEGIN { printf "%.2f M", n / 1e6 }'; }
signed_mega() { awk -v n="$1" 'BEGIN { printf "%+.2f M", n / 1e6 }'; }

echo "$(bench_title), least of $repeats runs"
# counted OP: operations of kind OP rustica counted so far (0 before any).
counted() {
  "$rustica" stats --json --path "$RUSTICA_STATS_PATH" 2>/dev/null | rustica_counted "$1" || echo 0
}
signs_before=$(counted sign)
verifies_before=$(counted verify)
for way in conf flags; do
  for cmd in "${commands[@]}"; do
    measure "$way" a "$cmd"
    measure "$way" b "$cmd"
  done
done
# Proof that side B ran on rustica: two signing commands (dgst -sign and
# req) and one verification per B run.
signs=$(($(counted sign) - signs_before))
verifies=$(($(counted verify) - verifies_before))
if [ "$signs" -ne $((2 * 2 * repeats)) ] || [ "$verifies" -ne $((2 * repeats)) ]; then
  echo "bench-process-instructions: rustica counted $signs signatures and $verifies verifications," \
    "expected $((2 * 2 * repeats)) and $((2 * repeats)): side B did not run on rustica" >&2
  exit 1
fi

status=0
echo
echo "| loaded by | command | A | B | B - A | B/A |"
echo "|---|---|---:|---:|---:|---:|"
for way in conf flags; do
  for cmd in "${commands[@]}"; do
    a=$(cg_totals "$work/$way-a-$cmd.cg")
    b=$(cg_totals "$work/$way-b-$cmd.cg")
    bound=1800000
    [ "$cmd" = rand ] && bound=600000
    mark=
    if [ $((b - a)) -gt "$bound" ]; then
      mark=" (over +$(mega "$bound"))"
      status=1
    fi
    label="openssl.cnf"
    [ "$way" = flags ] && label="-provider flags"
    printf '| %s | `%s` | %s | %s | %s%s | %s |\n' "$label" "$(command_args "$cmd" | sed "s|$work/||g")" \
      "$(mega "$a")" "$(mega "$b")" "$(signed_mega $((b - a)))" "$mark" \
      "$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.4f", b / a }')"
  done
done

echo
echo "Where B's extra goes (openssl.cnf): the inclusive instructions of the libcrypto function that does each step, B - A; the rest is everything else (configuration, method construction, exit):"
echo
echo "| command | module load (DSO_load) | key decoding (OSSL_DECODER_CTX_new_for_pkey) | init (EVP_Digest*Init_ex) | operation | rest | B - A |"
echo "|---|---:|---:|---:|---:|---:|---:|"
for cmd in "${commands[@]}"; do
  read -r -a steps <<<"$(steps_of "$cmd")"
  inclusive "$work/conf-a-$cmd.cg" "${steps[*]}" >"$work/a.inc"
  inclusive "$work/conf-b-$cmd.cg" "${steps[*]}" >"$work/b.inc"
  diff_total=$(($(cg_totals "$work/conf-b-$cmd.cg") - $(cg_totals "$work/conf-a-$cmd.cg")))
  rest=$diff_total
  row="| $cmd |"
  for f in "${steps[@]}"; do
    if [ "$f" = - ]; then row="$row |"; continue; fi
    a=$(awk -v f="$f" '$1 == f { print $2 }' "$work/a.inc")
    b=$(awk -v f="$f" '$1 == f { print $2 }' "$work/b.inc")
    d=$((${b:-0} - ${a:-0}))
    rest=$((rest - d))
    row="$row $(signed_mega "$d") |"
  done
  echo "$row $(signed_mega "$rest") | $(signed_mega "$diff_total") |"
done
[ "$check" = 1 ] || exit 0
[ "$status" = 0 ] && echo "bench-process-instructions: every command within its bound (+0.6 M for rand, +1.8 M for an RSA command)" >&2
exit $status
