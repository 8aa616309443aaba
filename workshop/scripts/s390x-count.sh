#!/usr/bin/env bash
# s390x guest instructions per process and per operation, every side on
# the lane's card (Debian 13: OpenSSL 3.5, libica 3.9), counted under
# Debian 12's dynamic qemu-s390x (7.2) with the project's TCG plugin
# (workshop/benches/instructions/qemu-count.c). Under qemu, wall and CPU time
# mostly measure qemu (translating code it has not seen, emulating each
# instruction); an instruction count does not depend on qemu's speed.
#
# Sides, as scripts/s390x-card.sh runs them (the card model rustica-card
# answers /dev/z90crypt through the z90crypt-card interposer, 2 CEX8A
# cards at a 20 us unit):
#   A    stock OpenSSL 3.5 with its own offload
#   A0   the same with it off (OPENSSL_s390xcap=nocex): software
#   B    rustica, backend = libica (Debian's libica3), the deadline on
#   Bnd  B with offload-timeout-ms = 0 (no hand-off to an offload thread)
#   Bsw  rustica, backend = software
#   (S390X_COUNT_B_BACKEND=zcrypt: B and Bnd with backend = zcrypt, the
#   kernel's /dev/z90crypt without libica; not with --record)
#   C    Debian's ibmca ENGINE on the same libica
#
# Per process: `openssl version` (start and exit), `rand -hex 4`,
# `pkey -in KEY -noout` (a 2048-bit key), `dgst -sha256 -sign` of a 1 KiB
# document and `dgst -sha256 -verify`; the differences between rows are the
# phases (the key's load, the first operation). Per operation:
# workshop/benches/instructions/ops.c cross-built for s390x, signatures and
# verifications with a fresh context each (dsign-fresh and dverify-fresh:
# BIND's and PowerDNS's pattern),
# PKCS#1 v1.5 SHA-256, 2048 bits: the instructions between its two marks
# at N and at 2N operations, difference over N (N = 32, so each count
# holds exactly one of OpenSSL's blinding renewals per 32 uses). Also per
# operation: the system calls by name (the plugin counts them), with the
# interposer's exchange per card request (measured on A) counted as the
# one ioctl a host makes, and the voluntary context switches of qemu's
# threads between the marks (the plugin reads them; they vary, and are not
# checked), and the instructions by the library their code is in (the
# plugin's files=on). The interposer's own instructions (under 1 K a
# request) are left out of every count: on a host that work is the
# kernel's.
#
# Every run checks its results: each signature identical to the host's,
# every verification "Verified OK", and each side's card requests per
# signing process as its design says (A: ME 1 + CRT 1, B: CRT 1, C: ME,
# A0 and Bsw none).
#
# Usage: workshop/scripts/s390x-count.sh [--record | --check] [--module SO [--built-from TEXT]] [--out DIR]
#   --module SO  rustica cross-built for s390x against Debian 13's OpenSSL
#                (default: cross-built from the working tree, release, into
#                the lane's target directory, as scripts/s390x-lane.sh does);
#                --built-from says what it was built from, for the record
#   --out DIR    work directory (default target/s390x-lane/stable/count)
#   --record     write the counts to docs/comparison/stable-card-instructions.tsv
#                (then workshop/scripts/comparison.py --write renders docs/comparison.md)
#   --check      fail unless every instruction count agrees with that file
#                within 2.5 % per process and 5 % per operation, and B
#                keeps the host-cost targets: a signature within A + 0.6 x
#                A0's verification, a signing process within 1.10 x A, a
#                verifying process within 1.05 x A0 (one to two
#                minutes). What still varies with a fixed key is random:
#                blinding values, libica's DRBG. Up to five runs of one
#                build on 2026-12-07 spread by up to 1.2 % per process
#                (A's signing process, 18.47-18.69 M) and, the least of 3,
#                2 % per operation (A's signature, 204-208 K; single runs
#                204-214 K). A
#                change such as loading libica in a verifying process
#                (1.2 M of 14.5 M) or a second check per signature (300 K)
#                moves a row far more
#   REPEATS=R    runs per process count, the least kept (default 1)
#   OP_REPEATS=R pairs of runs per operation count on the card sides, the
#                least kept (default 3; A0 and B software: 1). A window of
#                32 operations holds one blinding renewal, whose random
#                cost moves A's count per signature by about 2 %
#   QEMU_COUNT_EXACT=1  the plugin's atomic counting (slower), not its
#                inline adds, which two guest threads can race
# shellcheck source-path=SCRIPTDIR source-path=.
. "$(dirname "$0")/../../scripts/lib/common.sh"
say_clock=1
MODE="" MODULE="" OUT="" BUILT_FROM=""
while [ $# -gt 0 ]; do
  case "$1" in
    --record) MODE=record; shift ;;
    --check) MODE=check; shift ;;
    --module) MODULE=$(realpath "${2:?--module needs a file}"); shift 2 ;;
    --out) OUT=${2:?--out needs a directory}; shift 2 ;;
    --built-from) BUILT_FROM=${2:?--built-from needs a text}; shift 2 ;;
    *) usage >&2; exit 2 ;;
  esac
done
REPEATS=${REPEATS:-1}
OP_REPEATS=${OP_REPEATS:-3}
LANE=${S390X_LANE_DIR:-$repo/target/s390x-lane}
OUT=${OUT:-$LANE/stable/count}
FACTS_FILE=docs/comparison/stable-card-instructions.tsv
TARGET=s390x-unknown-linux-gnu
N=32

# --- tools: the dynamic qemu-user (plugins) beside the lane's static one ----------
scripts/setup.sh build s390x >&2 || die "could not install the count's tools (scripts/setup.sh build s390x)"
QEMU=/usr/bin/qemu-s390x
[ -x "$QEMU" ] || die "$QEMU (Debian's dynamic qemu-user) is missing"

# --- the lane's pieces: sysroot, module, engine package, card, interposer ---------
SYSROOT=$(scripts/s390x-lane.sh --release stable --sysroot-only) || die "no Debian 13 s390x sysroot"
LIBDIR=$SYSROOT/usr/lib/s390x-linux-gnu
APTDIR=$(dirname "$SYSROOT")/apt
if [ -z "$MODULE" ]; then
  say "cross-building rustica for $TARGET (release, as the lane does)"
  CARGO_TARGET_S390X_UNKNOWN_LINUX_GNU_LINKER=s390x-linux-gnu-gcc \
  CARGO_TARGET_S390X_UNKNOWN_LINUX_GNU_RUSTFLAGS="-C link-arg=--sysroot=$SYSROOT" \
  CC_s390x_unknown_linux_gnu=s390x-linux-gnu-gcc CFLAGS_s390x_unknown_linux_gnu="--sysroot=$SYSROOT" \
  OPENSSL_LIB_DIR=$LIBDIR OPENSSL_INCLUDE_DIR=$SYSROOT/usr/include RUSTICA_SYSROOT=$SYSROOT \
    cargo build -q --release --target "$TARGET" --target-dir "$(dirname "$SYSROOT")/target" -p rustica -p libica-emu --lib \
    || die "cross build failed"
  MODULE=$(dirname "$SYSROOT")/target/$TARGET/release/librustica.so
  BUILT_FROM="built from $(git rev-parse --short=12 HEAD)$(git diff --quiet HEAD 2>/dev/null || echo ' with local changes')"
fi
BUILT_FROM=${BUILT_FROM:-$MODULE}
[ -f "$MODULE" ] || die "no module $MODULE"
engine_deb=$(ls "$APTDIR"/debs/openssl-ibmca_*.deb 2>/dev/null | head -n1 || true)
if [ -z "$engine_deb" ]; then
  (cd "$APTDIR/debs" && apt-get -q -o APT::Architecture=s390x -o APT::Architectures=s390x \
     -o Dir::State="$APTDIR" -o Dir::State::Lists="$APTDIR/lists" -o Dir::State::status="$APTDIR/status" \
     -o Dir::Cache="$APTDIR/cache" -o Dir::Etc::SourceList="$APTDIR/sources.list" \
     -o Dir::Etc::SourceParts="$APTDIR/sources.list.d" -o APT::Sandbox::User=root \
     download openssl-ibmca >/dev/null 2>&1) || die "could not download Debian's s390x openssl-ibmca"
  engine_deb=$(ls "$APTDIR"/debs/openssl-ibmca_*.deb | head -n1)
fi
cargo build -q -p rustica-card --bin rustica-card || die "building rustica-card failed"
CARD_BIN=$repo/target/debug/rustica-card

rm -rf "$OUT"
mkdir -p "$OUT"
PLUGIN=$OUT/qemu-count.so
gcc -shared -fPIC -O2 -Wall -Wextra -Werror -fvisibility=hidden -o "$PLUGIN" workshop/benches/instructions/qemu-count.c \
  || die "building the qemu plugin failed"
INTERPOSER=$OUT/libz90crypt-card.so
s390x-linux-gnu-gcc -shared -fPIC -O2 -Wall -Wextra -Werror -o "$INTERPOSER" \
  testbed/card/interposer/z90crypt-card.c testbed/card/interposer/z90crypt-exchange.c testbed/card/interposer/z90crypt-requests.c -ldl \
  || die "cross-building the z90crypt-card interposer failed"
. scripts/lib/s390x-root.sh
. scripts/lib/openssl-cnf.sh
ROOT=$OUT/root
s390x_make_root "$ROOT" "$SYSROOT" "$engine_deb" 2 CEX8A
# The sysroot's own C library and start files first: Debian 13's libcrypto
# needs a newer glibc than the cross toolchain's.
s390x-linux-gnu-gcc --sysroot="$SYSROOT" -B"$LIBDIR" -L"$LIBDIR" -O2 -Wall -Werror -DQEMU_COUNT_MARKS -o "$ROOT/usr/bin/fresh" \
  workshop/benches/instructions/ops.c -lcrypto || die "cross-building workshop/benches/instructions/ops.c failed"
cp "$MODULE" "$OUT/rustica.so"
# Every side but C the same minimal configuration (C: the engine's sample).
stock_conf "$OUT/a.cnf"
# S390X_COUNT_B_BACKEND=zcrypt: sides B and Bnd on the kernel's device
# directly (no libica in the process); a measurement, never --record.
b_route=("backend = libica" "libica = libica.so.3")
if [ "${S390X_COUNT_B_BACKEND:-libica}" = zcrypt ]; then
  [ "$MODE" != record ] || die "S390X_COUNT_B_BACKEND=zcrypt is a measurement: the recorded facts are libica's"
  b_route=("backend = zcrypt")
fi
rustica_conf "$OUT/b.cnf" "$OUT/rustica.so" "${b_route[@]}"
rustica_conf "$OUT/bnd.cnf" "$OUT/rustica.so" "${b_route[@]}" "offload-timeout-ms = 0"
rustica_conf "$OUT/bsw.cnf" "$OUT/rustica.so" "backend = software"
cp "$ROOT/usr/share/doc/openssl-ibmca/examples/openssl.cnf.sample" "$OUT/c.cnf"

. scripts/lib/card.sh
SOCKET=$OUT/card.sock
card_start "$CARD_BIN" "$SOCKET" "$OUT/card.log" --cards 2 --unit-us 20 || die "no card"
trap card_stop EXIT

# One key and one document for every run: a private operation's count
# follows its key (the exponents' lengths), so a new key each run would
# move the counts by about 1 %. The key is a test fixture (2048 bits, e =
# 65537); the document 1 KiB of a fixed pattern.
KEY=$OUT/key-2048.pem PUB=$OUT/pub-2048.pem DOC=$OUT/doc.bin
host_openssl() { OPENSSL_CONF=/dev/null openssl "$@"; }
cp tests/fixtures/implicit-rejection/RSA-2048.pem "$KEY"
host_openssl pkey -in "$KEY" -pubout -out "$PUB"
head -c 1024 /dev/zero | tr '\0' r >"$DOC"
host_openssl dgst -sha256 -sign "$KEY" -out "$OUT/ref.sig" "$DOC"

SIDES=(A A0 B Bnd Bsw C)
# Runs PROGRAM (under the root) on SIDE under the counting qemu; sets
# INSNS (guest instructions, the interposer's left out: on a host its work
# is the kernel's), SYSCALLS, MARKS (the plugin's "i k s" at each mark),
# NRS (its "nrX=C" system calls between the first two marks), FILES (its
# "file:NAME=C" instructions by file between them), CSW ("voluntary
# involuntary" context switches of qemu's threads between them) and
# ME_CRT (the card's requests from the process).
counted() { # side program args...
  local side=$1 program=$2 line skipped
  shift 2
  local -a cmd=(env -u OPENSSL_CONF -u RUSTICA_BACKEND -u RUSTICA_LIBICA -u RUSTICA_DEBUG -u LIBICA_STATS_MODE
                -u LD_LIBRARY_PATH -u OPENSSL_s390xcap RUSTICA_STATS_PATH="$OUT/stats-$side"
                QEMU_SET_ENV=LD_PRELOAD="$INTERPOSER" Z90CRYPT_CARD_SOCKET="$SOCKET")
  case "$side" in
    A) cmd+=(OPENSSL_CONF="$OUT/a.cnf") ;;
    A0) cmd+=(OPENSSL_CONF="$OUT/a.cnf" OPENSSL_s390xcap=nocex) ;;
    B) cmd+=(OPENSSL_CONF="$OUT/b.cnf") ;;
    Bnd) cmd+=(OPENSSL_CONF="$OUT/bnd.cnf") ;;
    Bsw) cmd+=(OPENSSL_CONF="$OUT/bsw.cnf") ;;
    C) cmd+=(OPENSSL_CONF="$OUT/c.cnf") ;;
  esac
  local plugin=$PLUGIN,skip=libz90crypt-card,files=on
  [ -n "${QEMU_COUNT_EXACT:-}" ] && plugin=$plugin,exact=on
  rm -f "$OUT/plugin.log"
  card_ctl reset >/dev/null
  "${cmd[@]}" "$QEMU" -plugin "$plugin" -d plugin -D "$OUT/plugin.log" \
    -L "$ROOT" "$ROOT$program" "$@" >"$OUT/out.txt" 2>>"$OUT/run.log" || return 1
  line=$(grep '^qemu-count ' "$OUT/plugin.log") || return 1
  read -r _ _ INSNS _ skipped _ SYSCALLS _ _ MARKS <<<"$line"
  INSNS=$((INSNS - skipped))
  NRS=$(grep -o 'nr[0-9]*=[0-9]*' <<<"$MARKS" | tr '\n' ' ' || true)
  FILES=$(grep -o 'file:[^ ]*' <<<"$MARKS" | tr '\n' ' ' || true)
  CSW=$(grep -o 'csw=[0-9]*/[0-9]*' <<<"$MARKS" | sed 's/csw=//; s|/| |' || true)
  MARKS=${MARKS%% csw=*}
  MARKS=${MARKS%% nr*}
  MARKS=${MARKS%% file:*}
  ME_CRT=$(card_ctl stats | python3 -c '
import json, sys
n = {"me": 0, "crt": 0}
for r in json.load(sys.stdin)["requests"]:
    n[r["type"]] += r["count"]
print(n["me"], n["crt"])')
}
# The least of REPEATS counts of one command; checks its result and its
# card requests. Prints "insns syscalls".
process_count() { # side what args...
  local side=$1 what=$2 best="" r me crt
  shift 2
  for ((r = 0; r < REPEATS; r++)); do
    rm -f "$OUT/sig.bin"
    counted "$side" /usr/bin/openssl "$@" || fail "side $side: $what failed (log: $OUT/run.log)"
    read -r me crt <<<"$ME_CRT"
    case $what in
      sign)
        cmp -s "$OUT/sig.bin" "$OUT/ref.sig" || fail "side $side: the signature differs from the host's"
        case $side in
          A) [ "$me $crt" = "1 1" ] || fail "A's signing process: ME $me CRT $crt, not ME 1 + CRT 1" ;;
          A0|Bsw) [ "$me $crt" = "0 0" ] || fail "$side's signing process reached the card (ME $me CRT $crt)" ;;
          B|Bnd) [ "$me $crt" = "0 1" ] || fail "$side's signing process: ME $me CRT $crt, not CRT 1" ;;
          C) [ "$me" -ge 1 ] || fail "C's signing process sent no ME to the card" ;;
        esac ;;
      verify) grep -q "Verified OK" "$OUT/out.txt" || fail "side $side: the verification failed" ;;
    esac
    if [ -z "$best" ] || [ "$INSNS" -lt "${best%% *}" ]; then best="$INSNS $SYSCALLS"; fi
  done
  echo "$best"
}
# The driver's N operations (fresh context) on SIDE; appends to $OUT/ops.txt:
# "side op n insns syscalls voluntary involuntary me crt nrX=C...
# file:NAME=C...", the counts between its two marks (the card requests:
# the whole process's).
marked() { # side op n
  local i1 k1 s1 i2 k2 s2 provider
  counted "$1" /usr/bin/fresh "$2" 2 "$3" "$KEY" || fail "side $1: fresh $2 $3 failed (log: $OUT/run.log)"
  read -r provider _ <"$OUT/out.txt"
  case $1 in
    B|Bnd|Bsw) [ "$provider" = rustica ] || fail "side $1: fresh's operations ran on $provider, not rustica" ;;
    *) [ "$provider" = default ] || fail "side $1: fresh's operations ran on $provider, not default" ;;
  esac
  read -r i1 k1 s1 i2 k2 s2 <<<"$MARKS"
  [ -n "${s2:-}" ] && [ -n "$CSW" ] || fail "side $1: fresh made no marks (plugin: $(cat "$OUT/plugin.log"))"
  echo "$1 $2 $3 $((i2 - k2 - i1 + k1)) $((s2 - s1)) $CSW $ME_CRT $NRS $FILES" >>"$OUT/ops.txt"
}

FACTS=$OUT/facts.tsv
: >"$FACTS"
fact() { # item A A0 B Bnd Bsw C note [varies]
  say "counted: $1: $2 | $3 | $4 | $5 | $6 | $7"
  printf 'card-instructions\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" "$5" "$6" "$7" "$8" \
    "${9:-}" >>"$FACTS"
}
mega() { awk -v x="$1" 'BEGIN {printf "%.2f M", x / 1e6}'; }

say "per process (REPEATS=$REPEATS), module $MODULE"
declare -A SYS RAW
for row in "version|openssl version (start and exit)|version" \
           "rand|openssl rand -hex 4|rand -hex 4" \
           "pkey|openssl pkey -in (a 2048-bit key) -noout|pkey -in $KEY -noout" \
           "sign|openssl dgst -sha256 -sign, 1 KiB, 2048 bits|dgst -sha256 -sign $KEY -out $OUT/sig.bin $DOC" \
           "verify|openssl dgst -sha256 -verify, 1 KiB, 2048 bits|dgst -sha256 -verify $PUB -signature $OUT/ref.sig $DOC"; do
  IFS='|' read -r what label args <<<"$row"
  cells=()
  for side in "${SIDES[@]}"; do
    # shellcheck disable=SC2086
    read -r insns sys <<<"$(process_count "$side" "$what" $args)"
    cells+=("$(mega "$insns")")
    SYS[$what,$side]=$sys RAW[$what,$side]=$insns
  done
  fact "$label, per process" "${cells[@]}" "guest instructions, the least of $REPEATS"
done
# The phases, as differences of the rows above (checked through them).
phase() { # label note minuend subtrahend [subtrahend's side, default each side's own]
  local side cells=()
  for side in "${SIDES[@]}"; do
    cells+=("$(mega $((RAW[$3,$side] - RAW[$4,${5:-$side}])))")
  done
  fact "$1" "${cells[@]}" "$2" varies
}
phase "phase: loading the configuration's provider or engine" "openssl version, over A's" version version A
phase "phase: the key's load" "pkey - rand" pkey rand
phase "phase: the first signature, with what it loads" "dgst -sign - pkey (B: libica's load too)" sign pkey
cells=()
for side in "${SIDES[@]}"; do cells+=("${SYS[sign,$side]} / ${SYS[verify,$side]}"); done
fact "system calls per signing / verifying process" "${cells[@]}" \
  "the plugin's count; each card request through the interposer is about 19 of them (a host's kernel: one ioctl)" varies

say "per operation, fresh context each, N = $N and $((2 * N))"
: >"$OUT/ops.txt"
for op in dsign-fresh dverify-fresh; do
  for side in "${SIDES[@]}"; do
    reps=$OP_REPEATS
    case $side in A0|Bsw) reps=1 ;; esac
    for ((r = 0; r < reps; r++)); do
      marked "$side" "$op" "$N"
      marked "$side" "$op" $((2 * N))
    done
  done
done
# Per operation, (2N - N) / N: instructions (the least of the REPEATS
# pairs); system calls by name, each card request counted as the one
# ioctl a host makes (A's exchange through the interposer, per request,
# taken out of every side); context switches.
python3 - "$OUT/ops.txt" "$SYSROOT/usr/include/s390x-linux-gnu/asm/unistd_64.h" "$N" "${SIDES[*]}" \
  >"$OUT/ops.tsv" <<'PY'
import re, sys
from collections import defaultdict

ops_path, unistd, n, sides = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4].split()
names = {}
for line in open(unistd):
    m = re.match(r"#define __NR_(\w+)\s+(\d+)$", line)
    if m:
        names[int(m.group(2))] = m.group(1)
runs = defaultdict(list)  # (side, op) -> [(n, fields...)]
for line in open(ops_path):
    f = line.split()
    side, op, count = f[0], f[1], int(f[2])
    insns, sysc, vol, invol, me, crt = map(int, f[3:9])
    nrs = {int(k[2:]): int(v) for k, v in (x.split("=") for x in f[9:] if x.startswith("nr"))}
    files = {k[5:]: int(v) for k, v in (x.rsplit("=", 1) for x in f[9:] if x.startswith("file:"))}
    runs[side, op].append((count, insns, sysc, vol, invol, me + crt, nrs, files))

def per_op(side, op):
    rs = runs[side, op]
    pairs = [(rs[i], rs[i + 1]) for i in range(0, len(rs), 2)]
    best = min(pairs, key=lambda p: p[1][1] - p[0][1])
    a, b = best
    d = lambda i: (b[i] - a[i]) / n
    nrs = {k: (b[6].get(k, 0) - a[6].get(k, 0)) / n for k in set(a[6]) | set(b[6])}
    files = {k: (b[7].get(k, 0) - a[7].get(k, 0)) / n for k in set(a[7]) | set(b[7])}
    return {"insns": d(1), "syscalls": d(2), "vol": d(3), "invol": d(4), "requests": d(5), "nrs": nrs,
            "files": files}

for op in ("dsign-fresh", "dverify-fresh"):
    res = {s: per_op(s, op) for s in sides}
    a = res["A"]
    # A's exchange per card request: every system call A makes between the
    # marks, but for the marks' own write.
    exchange = {k: v / a["requests"] for k, v in a["nrs"].items() if names.get(k) != "write"}
    ins, sysc, named, csw, files = [], [], [], [], []
    for s in sides:
        r = res[s]
        rest = {}
        for k, v in r["nrs"].items():
            if names.get(k) == "write":
                continue
            left = v - r["requests"] * exchange.get(k, 0)
            if abs(left) >= 0.2:
                rest[names.get(k, f"nr{k}")] = left
        if r["requests"] >= 0.05:
            rest["ioctl"] = rest.get("ioctl", 0) + r["requests"]
        total = sum(rest.values())
        ins.append(f"{r['insns'] / 1e3:.0f} K")
        sysc.append(f"{total:.2f}")
        named.append(", ".join(f"{k} {v:.2f}" for k, v in sorted(rest.items(), key=lambda kv: (-kv[1], kv[0]))) or "none")
        # Differences of two whole-process counts: noise can make them negative.
        csw.append(f"{max(r['vol'], 0):.1f}")
        # By library: the file the code came from (a library's own code,
        # whoever called it), the interposer left out; 0.5 K and more.
        by = sorted(((v, re.sub(r"\.so[.0-9]*$", "", k)) for k, v in r["files"].items()
                     if "z90crypt" not in k and v >= 500), reverse=True)
        files.append(", ".join(f"{name} {v / 1e3:.1f} K" for v, name in by) or "none")
    print("\t".join([op, "insns"] + ins))
    print("\t".join([op, "syscalls"] + sysc))
    print("\t".join([op, "named"] + named))
    print("\t".join([op, "csw"] + csw))
    print("\t".join([op, "files"] + files))
PY
while IFS=$'\t' read -r op kind c1 c2 c3 c4 c5 c6; do
  name=signature
  [ "$op" = dverify-fresh ] && name=verification
  case $kind in
    insns) fact "one $name, fresh context, 2048 bits, per operation" "$c1" "$c2" "$c3" "$c4" "$c5" "$c6" \
             "guest instructions, ($((2 * N)) - $N) / $N, the least of $OP_REPEATS (A0, B software: 1)" ;;
    syscalls) fact "system calls per $name" "$c1" "$c2" "$c3" "$c4" "$c5" "$c6" \
                "($((2 * N)) - $N) / $N, a card request counted as one ioctl" varies ;;
    named) fact "system calls per $name, by name" "$c1" "$c2" "$c3" "$c4" "$c5" "$c6" \
             "clock_gettime is a vDSO call on a host, not a system call" varies ;;
    files) fact "instructions per $name, by the library they are in" "$c1" "$c2" "$c3" "$c4" "$c5" "$c6" \
             "($((2 * N)) - $N) / $N, of the pair counted above; calls from rustica into libcrypto count as libcrypto" varies ;;
    csw) fact "voluntary context switches per $name" "$c1" "$c2" "$c3" "$c4" "$c5" "$c6" \
           "qemu's threads between the marks (/proc/self/task), ($((2 * N)) - $N) / $N" varies ;;
  esac
done <"$OUT/ops.tsv"
fact "what was counted" "OpenSSL 3.5, own offload" "OPENSSL_s390xcap=nocex" \
  "${b_route[0]}" "offload-timeout-ms = 0" "backend = software" "openssl.cnf.sample" \
  "$(date -u +%F): Debian 13 s390x, qemu-s390x 7.2 (guest instructions, the interposer's left out), card unit 20 us, rustica ${BUILT_FROM} for s390x (release)" varies

card_stop
say "facts in $FACTS"
case $MODE in
  record)
    cp "$FACTS" "$FACTS_FILE"
    say "recorded $FACTS_FILE; render it: workshop/scripts/comparison.py --write" ;;
  check)
    python3 - "$FACTS_FILE" "$FACTS" <<'PY' || fail "the counts differ from $FACTS_FILE beyond the tolerance"
import sys

def read(path):
    rows = {}
    for line in open(path):
        c = line.rstrip("\n").split("\t")
        rows[c[1]] = c
    return rows

def value(text):
    number, unit = text.split()
    return float(number) * {"M": 1e6, "K": 1e3}[unit]

recorded, fresh = read(sys.argv[1]), read(sys.argv[2])
bad = 0
for item, r in recorded.items():
    if r[-1] == "varies":
        continue
    if item not in fresh:
        print(f"s390x-count: missing now: {item}", file=sys.stderr)
        bad = 1
        continue
    tolerance = 0.025 if "per process" in item else 0.05
    for side, want, got in zip(["A", "A0", "B", "Bnd", "Bsw", "C"], r[2:8], fresh[item][2:8]):
        w, g = value(want), value(got)
        if abs(g - w) > tolerance * w:
            print(f"s390x-count: {item}, {side}: recorded {want}, now {got} (tolerance {tolerance:.0%})", file=sys.stderr)
            bad = 1
sys.exit(bad)
PY
    # The host-cost targets (docs/libica.md), as docs/performance.md renders them.
    python3 workshop/scripts/comparison_instructions.py "$FACTS" || fail "B misses a host-cost target"
    say "OK: every count within its tolerance of $FACTS_FILE and within the host-cost targets" ;;
esac
