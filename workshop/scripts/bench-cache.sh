#!/usr/bin/env bash
# Level-1 cache misses and instructions per RSA operation, A/B, counted
# (issue 49): callgrind with its cache simulation (--cache-sim=yes) over
# N operations, at two values of N; per operation = (C(N2) - C(N1)) /
# (N2 - N1) for each count. A is the default provider alone, B rustica
# preferred through openssl.cnf (scripts/lib/openssl-cnf.sh). Two call
# patterns, PKCS#1 v1.5 with SHA-256:
#   fresh:  a new EVP_MD_CTX, EVP_DigestSignInit_ex / EVP_DigestVerifyInit_ex,
#           one EVP_DigestSign / EVP_DigestVerify, free: what a DNSSEC
#           signer does for every RRSIG (dsign-fresh and dverify-fresh);
#   reused: one EVP_PKEY_CTX for every operation, as `openssl speed` does
#           (sign-pkcs1 and verify-pkcs1); both workshop/benches/instructions/ops.c.
# The simulated caches are fixed (I1 and D1 32 KiB, 8-way, 64-byte lines;
# LL 8 MiB, 16-way), so the counts do not depend on the host's CPU. D1
# misses are read and write misses together. Every run checks its results
# and which provider ran them. Prints a Markdown table.
#
# usage: workshop/scripts/bench-cache.sh [--check] [SIZES...]   (default 1024 2048)
#   BENCH_KEYS=DIR: keys from (or generated into) DIR/key-BITS.pem.
#   RUSTICA_MODULE=FILE: the module of side B (default: a release build).
#   I1_BOUND, D1_BOUND: --check's bounds on I1 and D1 misses (1.05, 1.05).
#   --check: fresh-context verification and signature only (about 40 s);
#            fails if B/A of fresh-context instructions exceeds 1.01 at 1024
#            bits or 1.005 at 2048, or if B/A of the fresh-context 1024-bit
#            verification exceeds I1_BOUND in I1 misses or D1_BOUND in D1
#            misses. The targets are 1.05 and 1.03; reached 1.02-1.03 and
#            1.03-1.04 (docs/performance.md, "A fresh signing context per
#            operation"). The same code moves by about +-0.02 in I1 from
#            build to build (where functions land in the cache's sets),
#            and D1 by about +-0.01 from run to run of one build (B's runs
#            are not identical: a whole run's instructions vary by about
#            0.15 %, cause not traced; setarch -R does not change it), so
#            D1's bound keeps what was reached with that margin.
# shellcheck source-path=SCRIPTDIR source-path=.
. "$(dirname "$0")/../../scripts/lib/common.sh"
check=0
if [ "${1:-}" = "--check" ]; then check=1; shift; fi
case "${1:-}" in -*) sed -n '2,33p' "$script_path"; exit 2 ;; esac
sizes=("${@:-}")
[ -n "${sizes[*]}" ] || sizes=(1024 2048)
command -v valgrind >/dev/null || die "valgrind is missing (scripts/setup.sh tests installs it)"
. workshop/scripts/lib/callgrind.sh
bench_setup
bench_driver
cg_options=(--cache-sim=yes --I1=32768,8,64 --D1=32768,8,64 --LL=8388608,16,64)

i1_bound=${I1_BOUND:-1.05}
d1_bound=${D1_BOUND:-1.05}
operations=(dverify-fresh dsign-fresh verify-pkcs1 sign-pkcs1)
[ "$check" = 1 ] && operations=(dverify-fresh dsign-fresh)

# counts PRIVATE -> "WARMUP N1 N2". A blinding pair is drawn at the first
# and the 33rd private operation on both sides: operations 5 to 32 hold
# no renewal.
counts() { if [ "$1" = 1 ]; then echo 2 2 30; else echo 1 10 110; fi; }

# per_op SIDE OPERATION KEY -> "Ir I1 D1" per operation.
per_op() {
  local private=0 warmup n1 n2 d
  case $2 in *sign*) private=1 ;; esac
  read -r warmup n1 n2 <<<"$(counts "$private")"
  d=$(cg_per_op "$1" "$2" "$3" "$warmup" "$n1" "$n2" 1 Ir I1mr D1mr D1mw) || return 1
  awk -v d="$d" 'BEGIN {
    split(d, x, " "); printf "%d %.1f %.1f\n", x[2] / x[1], x[3] / x[1], (x[4] + x[5]) / x[1] }'
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", (a > 0 ? b / a : 0) }'; }

bench_title
echo
echo "| operation | bits | A instr/op | B instr/op | B/A | A I1 miss/op | B I1 miss/op | B/A | A D1 miss/op | B D1 miss/op | B/A |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
status=0
for bits in "${sizes[@]}"; do
  key=$(bench_key "$bits")
  for op in "${operations[@]}"; do
    per_a=$(per_op a "$op" "$key") || exit 1
    per_b=$(per_op b "$op" "$key") || exit 1
    read -r a_ir a_i1 a_d1 <<<"$per_a"
    read -r b_ir b_i1 b_d1 <<<"$per_b"
    r_ir=$(ratio "$a_ir" "$b_ir")
    r_i1=$(ratio "$a_i1" "$b_i1")
    r_d1=$(ratio "$a_d1" "$b_d1")
    flag=
    case $op in
      *-fresh)
        bound=1.01
        [ "$bits" -ge 2048 ] && bound=1.005
        if bench_over "$r_ir" "$bound"; then flag=" **instructions over $bound**"; fi
        if [ "$op" = dverify-fresh ] && [ "$bits" = 1024 ]; then
          if bench_over "$r_i1" "$i1_bound"; then flag="$flag **I1 over $i1_bound**"; fi
          if bench_over "$r_d1" "$d1_bound"; then flag="$flag **D1 over $d1_bound**"; fi
        fi
        ;;
    esac
    [ -n "$flag" ] && status=1
    echo "| $op | $bits | $a_ir | $b_ir | $r_ir | $a_i1 | $b_i1 | $r_i1 | $a_d1 | $b_d1 | $r_d1 |$flag"
  done
done
if [ "$check" = 1 ] && [ "$status" != 0 ]; then
  echo "bench-cache: B over its bound (marked above)" >&2
  exit 1
fi
exit 0
