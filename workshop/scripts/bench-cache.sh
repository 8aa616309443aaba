#!/usr/bin/env bash
# Level-1 cache misses and instructions per RSA operation, A/B, counted
# (issue 49): callgrind with its cache simulation (--cache-sim=yes) over
# N operations, at two values of N; per operation = (C(N2) - C(N1)) /
# (N2 - N1) for each count. A is the default provider alone, B rustica
# preferred through openssl.cnf (scripts/lib/openssl-cnf.sh). Two call
# patterns, PKCS#1 v1.5 with SHA-256:
#   fresh:  a new EVP_MD_CTX, EVP_DigestSignInit_ex / EVP_DigestVerifyInit_ex,
#           one EVP_DigestSign / EVP_DigestVerify, free: what a DNSSEC
#           signer does for every RRSIG (workshop/benches/instructions/fresh.c);
#   reused: one EVP_PKEY_CTX for every operation, as `openssl speed` does
#           (workshop/benches/instructions/ops.c, sign-pkcs1 and verify-pkcs1).
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
if [ -z "${RUSTICA_MODULE:-}" ]; then
  scripts/build.sh >/dev/null
  RUSTICA_MODULE=$(pwd)/target/release/rustica.so
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cc -O2 -Wall -o "$work/ops" workshop/benches/instructions/ops.c -lcrypto
cc -O2 -Wall -o "$work/fresh" workshop/benches/instructions/fresh.c -lcrypto
. scripts/lib/openssl-cnf.sh
stock_conf "$work/a.cnf"
rustica_conf "$work/b.cnf" "$RUSTICA_MODULE"
unset RUSTICA_BACKEND RUSTICA_LIBICA RUSTICA_DEBUG
export RUSTICA_STATS_PATH=$work/stats

i1_bound=${I1_BOUND:-1.05}
d1_bound=${D1_BOUND:-1.05}
operations=(dverify-fresh dsign-fresh verify-pkcs1 sign-pkcs1)
[ "$check" = 1 ] && operations=(dverify-fresh dsign-fresh)

# counts PRIVATE -> "WARMUP N1 N2". A blinding pair is drawn at the first
# and the 33rd private operation on both sides: operations 5 to 32 hold
# no renewal.
counts() { if [ "$1" = 1 ]; then echo 2 2 30; else echo 1 10 110; fi; }

# events SIDE OPERATION WARMUP N KEY -> "Ir I1mr D1mr D1mw" of N operations.
events() {
  local want=default driver=ops out
  [ "$1" = b ] && want=rustica
  case $2 in *-fresh) driver=fresh ;; esac
  out=$(OPENSSL_CONF=$work/$1.cnf valgrind --tool=callgrind --collect-atstart=no \
    --cache-sim=yes --I1=32768,8,64 --D1=32768,8,64 --LL=8388608,16,64 \
    --callgrind-out-file="$work/cg.out" "$work/$driver" "$2" "$3" "$4" "$5" 2>"$work/valgrind.log") || {
    cat "$work/valgrind.log" >&2
    echo "bench-cache: $2 $4 failed on side $1" >&2
    exit 1
  }
  [ "$out" = "$want $4" ] || { echo "bench-cache: side $1 ran $2 on '$out', not $want" >&2; exit 1; }
  awk '$1 == "events:" { for (i = 2; i <= NF; i++) col[$i] = i }
       $1 == "totals:" || $1 == "summary:" { print $col["Ir"], $col["I1mr"], $col["D1mr"], $col["D1mw"]; exit }' \
    "$work/cg.out"
}
# per_op SIDE OPERATION KEY -> "Ir I1 D1" per operation.
per_op() {
  local private=0 warmup n1 n2 a b
  case $2 in *sign*) private=1 ;; esac
  read -r warmup n1 n2 <<<"$(counts "$private")"
  a=$(events "$1" "$2" "$warmup" "$n1" "$3")
  b=$(events "$1" "$2" "$warmup" "$n2" "$3")
  awk -v a="$a" -v b="$b" -v n="$((n2 - n1))" 'BEGIN {
    split(a, x, " "); split(b, y, " ")
    printf "%d %.1f %.1f\n", (y[1] - x[1]) / n, (y[2] - x[2]) / n, (y[3] + y[4] - x[3] - x[4]) / n }'
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", (a > 0 ? b / a : 0) }'; }
over() { awk -v r="$1" -v m="$2" 'BEGIN { exit !(r > m) }'; }

echo "# workshop/scripts/bench-cache.sh$([ "$check" = 1 ] && echo " --check"), $(date -u +%FT%RZ), $(openssl version), B = $RUSTICA_MODULE"
echo
echo "| operation | bits | A instr/op | B instr/op | B/A | A I1 miss/op | B I1 miss/op | B/A | A D1 miss/op | B D1 miss/op | B/A |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
status=0
for bits in "${sizes[@]}"; do
  keys=${BENCH_KEYS:-$work}
  mkdir -p "$keys"
  [ -f "$keys/key-$bits.pem" ] || OPENSSL_CONF=$work/a.cnf openssl genpkey -algorithm RSA \
    -pkeyopt "rsa_keygen_bits:$bits" -out "$keys/key-$bits.pem" 2>/dev/null
  for op in "${operations[@]}"; do
    read -r a_ir a_i1 a_d1 <<<"$(per_op a "$op" "$keys/key-$bits.pem")"
    read -r b_ir b_i1 b_d1 <<<"$(per_op b "$op" "$keys/key-$bits.pem")"
    r_ir=$(ratio "$a_ir" "$b_ir")
    r_i1=$(ratio "$a_i1" "$b_i1")
    r_d1=$(ratio "$a_d1" "$b_d1")
    flag=
    case $op in
      *-fresh)
        bound=1.01
        [ "$bits" -ge 2048 ] && bound=1.005
        if over "$r_ir" "$bound"; then flag=" **instructions over $bound**"; fi
        if [ "$op" = dverify-fresh ] && [ "$bits" = 1024 ]; then
          if over "$r_i1" "$i1_bound"; then flag="$flag **I1 over $i1_bound**"; fi
          if over "$r_d1" "$d1_bound"; then flag="$flag **D1 over $d1_bound**"; fi
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
