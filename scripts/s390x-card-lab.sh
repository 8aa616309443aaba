#!/usr/bin/env bash
# `rustica lab` where its users run it: an IBM Z host whose card every
# side reaches. Under qemu-user, the shared card model (rustica-card,
# native) answers /dev/z90crypt through the z90crypt-card interposer and
# keeps the kernel's request counters under the root's /sys, which the
# lab reads as an IBM Z host's (--sysfs). Sides:
#
#   A   stock OpenSSL 3.5 with its own offload (ioctls from libcrypto)
#   B   rustica, backend auto, which resolves to Debian's libica3 on the
#       card (libica's hardware path)
#   C   Debian's ibmca ENGINE on the same libica
#   A0  stock with its own offload off (OPENSSL_s390xcap=nocex), in a
#       second lab against B on the same card and key pair
#
# The quick settings are sized for qemu: 2048 bits, per-process columns
# and key generation (TLS is left out: C's servers negotiate AES-GCM,
# which the engine takes and qemu cannot run; speed on 3.5 times key
# generation too, minutes under qemu). Called by scripts/s390x-lane.sh for
# Debian 13:
#
#   scripts/s390x-card-lab.sh --sysroot DIR --module SO --engine-deb DEB \
#       --out DIR --card BIN --interposer SO --rustica BIN
#
# Fails unless the lab is valid, every side's signatures and verifications
# reached the card as the design says (the kernel's counts), and C's checks
# pass. Writes facts.tsv (section, item, A, A0, B, C, note, varies) for
# workshop/scripts/comparison.py.
# shellcheck source-path=SCRIPTDIR source-path=.
. "$(dirname "$0")/lib/common.sh"
SYSROOT="" MODULE="" ENGINE_DEB="" OUT="" CARD_BIN="" INTERPOSER="" RUSTICA=""
while [ $# -gt 0 ]; do
  case "$1" in
    --sysroot) SYSROOT=$2; shift 2 ;;
    --module) MODULE=$2; shift 2 ;;
    --engine-deb) ENGINE_DEB=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --card) CARD_BIN=$2; shift 2 ;;
    --interposer) INTERPOSER=$2; shift 2 ;;
    --rustica) RUSTICA=$2; shift 2 ;;
    *) die "unknown argument $1" ;;
  esac
done
for v in SYSROOT MODULE ENGINE_DEB OUT CARD_BIN INTERPOSER RUSTICA; do
  [ -n "${!v}" ] || die "$(echo "--${v,,} is required" | tr _ -)"
done
# Absolute paths: the wrapper and the lab's processes run elsewhere.
for v in SYSROOT MODULE ENGINE_DEB OUT CARD_BIN INTERPOSER RUSTICA; do
  printf -v "$v" '%s' "$(realpath -m "${!v}")"
done
say_as=card-lab say_clock=1
rm -rf "$OUT"
mkdir -p "$OUT"
chmod 700 "$OUT"

. scripts/lib/s390x-root.sh
ROOT=$OUT/root
s390x_make_root "$ROOT" "$SYSROOT" "$ENGINE_DEB" 2 CEX8A
SAMPLE=$ROOT/usr/share/doc/openssl-ibmca/examples/openssl.cnf.sample
[ -f "$SAMPLE" ] || die "the engine package has no openssl.cnf.sample"
cp "$SAMPLE" "$OUT/c.cnf"

# The card, with the kernel's counters in the root's /sys (where the
# s390x programs' sysfs scans already find its two cards).
SOCKET=$OUT/card.sock
. scripts/lib/card.sh
trap card_stop EXIT
card_start "$CARD_BIN" "$SOCKET" "$OUT/card.log" --cards 2 --unit-us "${CARD_UNIT_US:-20}" \
  --sysfs "$ROOT/sys" || die "no card"

# Every side's openssl: the s390x program under qemu, the interposer
# preloaded into it (not into qemu), the card's socket in its environment.
write_wrapper() { # file [OPENSSL_s390xcap value]
  local cap="-u OPENSSL_s390xcap"
  [ -z "${2:-}" ] || cap="OPENSSL_s390xcap=$2"
  cat >"$1" <<WRAP
#!/bin/sh
exec env -u RUSTICA_BACKEND -u RUSTICA_LIBICA $cap QEMU_SET_ENV=LD_PRELOAD="$INTERPOSER" \\
  Z90CRYPT_CARD_SOCKET="$SOCKET" qemu-s390x-static -L "$ROOT" "$ROOT/usr/bin/openssl" "\$@"
WRAP
  chmod +x "$1"
}
WRAPPER=$OUT/openssl-s390x
write_wrapper "$WRAPPER"
version_engine=$(dpkg-deb -f "$ENGINE_DEB" Version)

LAB=$OUT/lab
say "rustica lab on the card: A stock 3.5's own offload, B rustica (backend auto), C the engine"
env -u RUSTICA_MODULE "$RUSTICA" lab --openssl "$WRAPPER" --module "$MODULE" --sysfs "$ROOT/sys" \
  --c-config "$OUT/c.cnf" --c-name "Debian's ibmca engine ($version_engine, openssl.cnf.sample)" \
  --sizes 2048 --count "${CARD_LAB_COUNT:-6}" --keygen-reps 3 --cell-budget 0 \
  --skip newkey,multi,tls,speed,dnssec --out "$LAB" >"$OUT/lab.log" 2>&1 \
  || { tail -n 30 "$OUT/lab.log" >&2; fail "rustica lab on the card failed"; }
say "lab done: $LAB/report.md"
# A0: the same lab with stock's own offload turned off (OPENSSL_s390xcap=nocex
# for every side's openssl: only libcrypto reads it), the first run's key
# pair reused and no side C: B against a software baseline on the same card.
WRAPPER0=$OUT/openssl-s390x-nocex
write_wrapper "$WRAPPER0" nocex
LAB0=$OUT/lab-nocex
env -u RUSTICA_MODULE "$RUSTICA" lab --openssl "$WRAPPER0" --module "$MODULE" --sysfs "$ROOT/sys" \
  --keys "$LAB" --sizes 2048 --count "${CARD_LAB_COUNT:-6}" --cell-budget 0 \
  --skip newkey,multi,tls,speed,dnssec --out "$LAB0" >"$OUT/lab-nocex.log" 2>&1 \
  || { tail -n 30 "$OUT/lab-nocex.log" >&2; fail "rustica lab against A0 (nocex) failed"; }
say "lab against A0 done: $LAB0/report.md"

python3 - "$LAB/report.json" "$OUT/facts.tsv" "$LAB0/report.json" <<'PY' || fail "the lab on the card is not what the sides' design says"
import json, sys
report = json.load(open(sys.argv[1]))
row = report["rows"][0]
row0 = json.load(open(sys.argv[3]))["rows"][0]
problems = []
if row0["status"] != "valid":
    problems.append(f"the nocex lab's row is {row0['status']}")
cols0 = {c["column"]: c for c in row0["columns"]}
def per_op0(kind):
    r = (cols0[kind].get("card_requests") or {}).get("A") or {}
    return r.get("per_operation")
if any(per_op0(k) != 0.0 for k in ["signatures", "verifications", "process_without_rsa"]):
    problems.append("A0 (nocex) reached the card: " +
                    str({k: per_op0(k) for k in ["signatures", "verifications", "process_without_rsa"]}))
if row["status"] != "valid":
    problems.append(f"row status {row['status']}: " +
                    "; ".join(f"{c['check']}: {c['detail']}" for c in row["checks"] if not c["ok"]))
failed = [c["name"] for c in row.get("C_checks", []) if not c["ok"]]
if failed or not row.get("C_checks"):
    problems.append(f"side C checks failed: {failed or 'none ran'}")
if not isinstance(report["environment"]["zcrypt_counters"], dict):
    problems.append("the lab read no zcrypt counters under the root's /sys")
cols = {c["column"]: c for c in row["columns"]}
def per_op(kind, side):
    r = (cols[kind].get("card_requests") or {}).get(side) or {}
    return r.get("per_operation")
sig = {s: per_op("signatures", s) for s in "ABC"}
ver = {s: per_op("verifications", s) for s in "ABC"}
load = {s: per_op("process_without_rsa", s) for s in "ABC"}
# Each side's signature reaches the card (A: stock's CRT, and its
# blinding ME in a process's first operation; B: one CRT; C: the engine's
# ME); rustica verifies in software, A and C on the card; no side sends
# anything without RSA.
if not all(sig[s] is not None and sig[s] >= 1 for s in "ABC"):
    problems.append(f"signature requests per operation {sig}")
if sig["B"] != 1.0:
    problems.append(f"rustica's signature took {sig['B']} requests, not 1")
if ver["B"] != 0.0 or not (ver["A"] or 0) >= 1:
    problems.append(f"verification requests per operation {ver}")
if any(load[s] != 0.0 for s in "ABC"):
    problems.append(f"requests without RSA {load}")
if problems:
    print("card lab: " + "; ".join(problems), file=sys.stderr)
    sys.exit(1)
def ratio(c, key):
    k = c.get(key) or {}
    if not k.get("ratio"):
        return "-"
    lo, hi = k["ci95"]
    return f"{k['ratio']:.3g}x [{lo:.3g}-{hi:.3g}]"
with open(sys.argv[2], "w") as facts:
    def fact(item, a, a0, b, c, note=""):
        facts.write(f"card-lab\t{item}\t{a}\t{a0}\t{b}\t{c}\t{note}\t\n")
    for kind, label in [("signatures", "card requests per signing process"),
                        ("verifications", "card requests per verifying process"),
                        ("process_without_rsa", "card requests per process without RSA")]:
        a, b, c = (f"{per_op(kind, s):.2f}" for s in "ABC")
        fact(label, a, f"{per_op0(kind):.2f}", b, c, note="the kernel's counters (request_count), rustica lab --sysfs")
    for kind in ["keygen", "process_without_rsa", "signatures", "verifications", "certificates"]:
        c = cols[kind]
        cpu = lambda s: c[s]["cpu"]["median"] * 1e3 if c[s].get("cpu") else float("nan")
        print(f"card-lab: {kind}: wall B/A {ratio(c, 'comparison')}, B/C {ratio(c, 'comparison_B_over_C')}; "
              f"CPU/op A {cpu('A'):.1f} ms, B {cpu('B'):.1f} ms, C {cpu('C'):.1f} ms; "
              f"host CPU B/A {ratio(c, 'comparison_host_cpu')}", file=sys.stderr)
    for kind in ["process_without_rsa", "signatures", "verifications", "certificates"]:
        c = cols0[kind]
        cpu = lambda s: c[s]["cpu"]["median"] * 1e3 if c[s].get("cpu") else float("nan")
        print(f"card-lab: nocex: {kind}: wall B/A0 {ratio(c, 'comparison')}; CPU/op A0 {cpu('A'):.1f} ms, "
              f"B {cpu('B'):.1f} ms; host CPU B/A0 {ratio(c, 'comparison_host_cpu')}", file=sys.stderr)
PY
say "valid: every side's requests as designed ($(cut -f2- "$OUT/facts.tsv" | tr '\t' ' ' | tr '\n' ';'))"
