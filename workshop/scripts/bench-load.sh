#!/usr/bin/env bash
# What rustica costs every process it is loaded into (a benchmark, not a
# test): stock OpenSSL, an idle provider that registers RSA names and does
# nothing (workshop/benches/load/idle_provider.c, built here), and rustica preferred
# by openssl.cnf, interleaved, medians of ROUNDS processes each, for
# `rand`, `dgst -sign`, `dgst -verify` and `req -x509` with an existing
# 2048-bit key. Prints a Markdown table of medians, deltas and ratios (each
# with its 95 % interval and verdict, `rustica compare`), and
# checks that every rustica-side signature and verification was counted.
# Then, rotating the sides the same way, one signing process timed phase
# by phase from inside (workshop/benches/load/phases.c: configuration, key read,
# sign init, signature, cleanup; wall time and minor faults of each),
# every run's signer checked by EVP_PKEY_CTX_get0_provider.
# Then the resident set of an idle process and of one after 1,000
# signatures (workshop/benches/load/rss.c), per side.
#
# With -c MODULE, a second rustica build ("before", e.g. main's) runs in
# the same rotation, counted the same way. With -f, every side loads its
# providers by command-line flags instead of openssl.cnf (stock:
# `-provider default`; idle and rustica: `-provider-path DIR -provider
# NAME -provider default`, rustica's with `-propquery ?provider=rustica`).
#
# usage: workshop/scripts/bench-load.sh [-f] [-c MODULE] [ROUNDS]      (default 60)
# shellcheck source-path=SCRIPTDIR source-path=.
. "$(dirname "$0")/../../scripts/lib/common.sh"
before=
by_flags=0
if [ "${1:-}" = -f ]; then by_flags=1; shift; fi
if [ "${1:-}" = -c ]; then before=$(realpath "$2"); shift 2; fi
rounds=${1:-60}
if [ -z "${RUSTICA_MODULE:-}" ]; then
  scripts/build.sh >/dev/null
  RUSTICA_MODULE=$(pwd)/target/release/rustica.so
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/idle"
cc -shared -fPIC -O2 -o "$work/idle/idle.so" workshop/benches/load/idle_provider.c
cc -O2 -o "$work/phases" workshop/benches/load/phases.c -lcrypto

. scripts/lib/openssl-cnf.sh
. scripts/lib/counted.sh
stock_conf "$work/stock.cnf"
rustica_conf "$work/rustica.cnf" "$RUSTICA_MODULE"
cat >"$work/idle.cnf" <<CNF
openssl_conf = openssl_init
[openssl_init]
providers = provider_sect
[provider_sect]
default = default_sect
idle = idle_sect
[default_sect]
activate = 1
[idle_sect]
module = $work/idle/idle.so
activate = 1
CNF

[ -n "$before" ] && rustica_conf "$work/before.cnf" "$before"
if [ "$by_flags" = 1 ]; then
  # -provider takes a module's file name without .so: each module gets a
  # directory of its own under that name.
  provider_flags() { # SIDE MODULE NAME [PROPQUERY]
    mkdir -p "$work/$1-dir"
    ln -sf "$2" "$work/$1-dir/$3.so"
    printf '%s\n' -provider-path "$work/$1-dir" -provider "$3" -provider default >"$work/$1.flags"
    if [ -n "${4:-}" ]; then printf '%s\n' -propquery "$4" >>"$work/$1.flags"; fi
  }
  printf '%s\n' -provider default >"$work/stock.flags"
  provider_flags idle "$work/idle/idle.so" idle
  provider_flags rustica "$RUSTICA_MODULE" rustica "?provider=rustica"
  [ -n "$before" ] && provider_flags before "$before" rustica "?provider=rustica"
fi

export RUSTICA_STATS_PATH=$work/stats
unset RUSTICA_BACKEND RUSTICA_LIBICA RUSTICA_DEBUG RUSTICA_STATS
o() { OPENSSL_CONF=$work/stock.cnf openssl "$@"; }
o genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$work/key.pem" 2>/dev/null
o pkey -in "$work/key.pem" -pubout -out "$work/pub.pem"
head -c $((3 * 1024 * 1024)) /dev/urandom >"$work/doc.bin"
o dgst -sha256 -sign "$work/key.pem" -out "$work/sig.bin" "$work/doc.bin"

rustica=$(dirname "$RUSTICA_MODULE")/rustica
[ -x "$rustica" ] || rustica=$(pwd)/target/release/rustica
echo "# workshop/scripts/bench-load.sh, $(date -u +%Y-%m-%d), $(nproc) cores, $(openssl version), $rounds processes per side and command"
python3 workshop/benches/load/run.py "$work" "$rounds" "$rustica"
# Proof that the rustica side ran on rustica: warm-up + rounds per command.
want=$((rounds + 1))
[ -n "$before" ] && want=$((2 * want))
stats=$("$rustica" stats --json --path "$RUSTICA_STATS_PATH" 2>/dev/null || true)
sign=$(rustica_counted sign <<<"$stats") && verify=$(rustica_counted verify <<<"$stats") \
  || fail "no rustica counters: rustica did not run"
# dgst -sign and req -x509 sign once each; dgst -verify verifies once.
if [ "$sign" -ne $((2 * want)) ] || [ "$verify" -ne "$want" ]; then
  echo "bench-load: rustica counted $sign signatures and $verify verifications, expected $((2 * want)) and $want" >&2
  exit 1
fi
echo
echo "rustica counted $sign signatures and $verify verifications: every rustica-side operation ran on rustica."

# Memory: the resident set of an idle process (configuration loaded, no
# RSA) and of one that made 1,000 signatures with the 2048-bit key (one
# context each, the key kept), medians of 5 processes per side.
cc -O2 -o "$work/rss" workshop/benches/load/rss.c -lcrypto
export RUSTICA_STATS_PATH=$work/stats-rss
echo
echo "| process | side | VmRSS (kB) | RssAnon (kB) | RssFile (kB) | signed by |"
echo "|---|---|---:|---:|---:|---|"
for what in idle 1000; do
  for side in stock idle rustica ${before:+before}; do
    args=(0); [ "$what" = 1000 ] && args=(1000 "$work/key.pem")
    for _ in 1 2 3 4 5; do OPENSSL_CONF=$work/$side.cnf "$work/rss" "${args[@]}"; done >"$work/rss.txt"
    med() { cut -d' ' -f"$1" "$work/rss.txt" | sort -n | sed -n 3p; }
    by=$(cut -d' ' -f4 "$work/rss.txt" | sort -u | paste -sd' ')
    want=default; case $side in rustica | before) want=rustica ;; esac; [ "$what" = idle ] && want=-
    [ "$by" = "$want" ] || fail "$side signed with $by, not $want"
    label="idle (no RSA)"; [ "$what" = 1000 ] && label="after 1,000 signatures"
    echo "| $label | $side | $(med 1) | $(med 2) | $(med 3) | $by |"
  done
done
