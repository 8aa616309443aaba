# Sourced, after scripts/lib/common.sh, by the workshop's callgrind benches
# (bench-instructions.sh, bench-process-instructions.sh, bench-cache.sh)
# and, for its set-up, by bench-fresh-ctx.sh: the driver they share
# (workshop/benches/instructions/ops.c), the two sides' configurations,
# and callgrind's runs and totals.
#
#   bench_openssl_dir   with OPENSSL_DIR=PREFIX (scripts/openssl-build.sh's
#                       prefix): that OpenSSL's `openssl` first on PATH and
#                       its flags in bench_cflags, for building the driver;
#                       dies unless RUSTICA_MODULE is set too (a rustica
#                       built against it). Before bench_setup.
#   bench_setup [VAR...]
#                       RUSTICA_MODULE (a release build, scripts/build.sh,
#                       when unset) and `rustica`, the command beside it;
#                       `work`, a directory removed at exit, holding
#                       a.cnf (the default provider alone: side A) and
#                       b.cnf (rustica beside it and preferred: side B);
#                       RUSTICA_STATS_PATH there. Unsets RUSTICA_BACKEND,
#                       RUSTICA_LIBICA, RUSTICA_DEBUG and the VARs.
#   bench_driver        builds the driver as $work/ops.
#   bench_key BITS      prints the path of an RSA key of BITS,
#                       ${BENCH_KEYS:-$work}/key-BITS.pem, made if missing.
#   bench_title         the first line of a bench's table: script, --check
#                       (when check=1), date, OpenSSL, module.
#   bench_over R BOUND  true if the ratio R exceeds BOUND.
#   cg_run SIDE FILE [OPTION...] COMMAND...
#                       COMMAND under callgrind with side SIDE's openssl.cnf
#                       (a or b), the valgrind options in the array
#                       cg_options and the OPTIONs, its profile in FILE; the
#                       command's output on standard output. Fails, with
#                       valgrind's messages on standard error, if the
#                       command does.
#   cg_totals FILE [EVENT...]
#                       a profile's totals of the EVENTs (default Ir, the
#                       instructions), in that order.
#   cg_ops SIDE OPERATION WARMUP N KEY [EVENT...]
#                       the totals of the driver's N operations after its
#                       warm-up (callgrind collects only those); fails
#                       unless provider `default` ran them on side a and
#                       `rustica` on side b.
#   cg_per_op SIDE OPERATION KEY WARMUP N1 N2 RUNS [EVENT...]
#                       "N2-N1 D..." with D the difference of each EVENT's
#                       totals between N2 and N1 operations; each count
#                       the run with the fewest of the first EVENT of RUNS
#                       runs (what randomness is left only adds).
# Failures print "NAME: ..." (common.sh's say_as) and return 1, which in a
# command substitution the caller must check.

# shellcheck source-path=SCRIPTDIR/../../.. source-path=.
. scripts/lib/openssl-cnf.sh

bench_cflags=()
cg_options=()

bench_openssl_dir() {
  [ -n "${OPENSSL_DIR:-}" ] || return 0
  [ -n "${RUSTICA_MODULE:-}" ] || die "OPENSSL_DIR needs RUSTICA_MODULE built against it"
  export PATH=$OPENSSL_DIR/bin:$PATH
  bench_cflags=(-I"$OPENSSL_DIR/include" -L"$OPENSSL_DIR/lib" -Wl,-rpath,"$OPENSSL_DIR/lib")
}

bench_setup() {
  if [ -z "${RUSTICA_MODULE:-}" ]; then
    scripts/build.sh >/dev/null
    RUSTICA_MODULE=$(pwd)/target/release/rustica.so
  fi
  rustica=$(dirname "$RUSTICA_MODULE")/rustica
  [ -x "$rustica" ] || rustica=$(pwd)/target/release/rustica
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  stock_conf "$work/a.cnf"
  rustica_conf "$work/b.cnf" "$RUSTICA_MODULE"
  unset RUSTICA_BACKEND RUSTICA_LIBICA RUSTICA_DEBUG "$@"
  export RUSTICA_STATS_PATH=$work/stats
}

bench_driver() {
  cc -O2 -Wall "${bench_cflags[@]}" -o "$work/ops" workshop/benches/instructions/ops.c -lcrypto
}

bench_key() {
  local keys=${BENCH_KEYS:-$work}
  mkdir -p "$keys"
  [ -f "$keys/key-$1.pem" ] || OPENSSL_CONF=$work/a.cnf openssl genpkey -algorithm RSA \
    -pkeyopt "rsa_keygen_bits:$1" -out "$keys/key-$1.pem" 2>/dev/null
  echo "$keys/key-$1.pem"
}

bench_title() {
  echo "# workshop/scripts/$say_as.sh$([ "${check:-0}" = 1 ] && echo " --check"), $(date -u +%FT%RZ), $(openssl version), B = $RUSTICA_MODULE"
}

bench_over() { awk -v r="$1" -v m="$2" 'BEGIN { exit !(r > m) }'; }

cg_run() {
  local side=$1 file=$2
  shift 2
  OPENSSL_CONF=$work/$side.cnf valgrind --tool=callgrind "${cg_options[@]}" \
    --callgrind-out-file="$file" "$@" 2>"$work/valgrind.log" || {
    cat "$work/valgrind.log" >&2
    return 1
  }
}

cg_totals() {
  local file=$1
  shift
  awk -v want="${*:-Ir}" '
    $1 == "events:" { for (i = 2; i <= NF; i++) col[$i] = i }
    $1 == "totals:" || $1 == "summary:" {
      n = split(want, w, " "); line = ""
      for (i = 1; i <= n; i++) line = line (i > 1 ? " " : "") $col[w[i]]
      print line; exit
    }' "$file"
}

cg_ops() {
  local side=$1 op=$2 warmup=$3 n=$4 key=$5 want=default out
  shift 5
  [ "$side" = b ] && want=rustica
  out=$(cg_run "$side" "$work/cg.out" --collect-atstart=no "$work/ops" "$op" "$warmup" "$n" "$key") || {
    echo "$say_as: $op $n failed on side $side" >&2
    return 1
  }
  [ "$out" = "$want $n" ] || { echo "$say_as: side $side ran $op on '$out', not $want" >&2; return 1; }
  cg_totals "$work/cg.out" "$@"
}

cg_per_op() {
  local side=$1 op=$2 key=$3 warmup=$4 n1=$5 n2=$6 runs=$7 n r t least counts=()
  shift 7
  for n in "$n1" "$n2"; do
    least=
    for r in $(seq "$runs"); do
      t=$(cg_ops "$side" "$op" "$warmup" "$n" "$key" "$@") || return 1
      if [ -z "$least" ] || [ "${t%% *}" -lt "${least%% *}" ]; then least=$t; fi
    done
    counts+=("$least")
  done
  awk -v a="${counts[0]}" -v b="${counts[1]}" -v n=$((n2 - n1)) 'BEGIN {
    k = split(a, x, " "); split(b, y, " "); line = n
    for (i = 1; i <= k; i++) line = line " " (y[i] - x[i])
    print line }'
}
