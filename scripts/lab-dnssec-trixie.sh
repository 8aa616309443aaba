#!/usr/bin/env bash
# scripts/lab-dnssec-trixie.sh: the lab's DNSSEC step alone (docs/lab.md,
# "DNSSEC zone signing"), on Debian 13 (trixie, OpenSSL 3.5), where both
# signers reach rustica: BIND 9.20's dnssec-signzone and PowerDNS 4.9's
# pdns_server (which signs through EVP; Debian 12's 4.7 does not).
#
# It runs in the Debian 13 chroot of scripts/coverage-trixie.sh
# ($RUSTICA_CACHE/trixie-coverage-chroot, made when missing:
# scripts/lib/trixie-chroot.sh). rustica comes from its amd64 package, as
# there (built by scripts/package.sh amd64 when target/deb has none;
# built against Debian 12's OpenSSL 3.0, run against trixie's
# libcrypto.so.3, 3.5), installed with dpkg -i in the chroot and purged at
# the end. What the step needs and the chroot lacks is installed with
# apt-get: bind9-utils, pdns-server, pdns-backend-sqlite3, python3 (the
# SQLite tables) and binutils (nm: the lab reads PowerDNS's RSA_* imports).
# These stay installed: they are among the packages coverage-trixie.sh
# installs there anyway (after it runs, nothing is missing).
#
# The lab run (in the chroot, in a mount namespace of its own):
#   rustica lab --module .../rustica.so --skip tls,speed,newkey,multi
#               --count 1 --keygen-reps 1 --out DIR
# --skip leaves out every step it can; the key generation, signature,
# verification and certificate columns cannot be skipped, so --count 1
# and --keygen-reps 1 make them one process a side. Without --sizes it is
# the quick lab: 1024, 2048, 3072 and 4096 bits, the DNSSEC step at 1024
# (RSASHA256, 1,000 names), 2048 (RSASHA256, 500) and 4096 (RSASHA512, 30),
# none at 3072 (no DNSSEC algorithm there).
#
# Then it checks, in the report (report.json): every row is valid; at
# 1024, 2048 and 4096 bits BIND's and PowerDNS's cells were measured
# (PowerDNS not "not reached"); rustica counted exactly the RRSIGs of each
# of B's runs, BIND's and PowerDNS's (the lab's per-run counter checks);
# B's zones verified under A and A's under B. It prints the DNSSEC figures:
# signatures per second per core (per signing thread for PowerDNS), A and
# B (medians), B/A with its 95 % interval, at one thread and at one a core.
#
# Usage (as root, on an amd64 Debian host with debootstrap):
#   scripts/lab-dnssec-trixie.sh [--deb FILE] [--out DIR] [--dnssec-names N]
#   --deb           rustica's amd64 package [default: target/deb/rustica_<version>_amd64.deb]
#   --out           where the lab's output directory is copied
#                   [default: $RUSTICA_CACHE/lab-dnssec-trixie]
#   --dnssec-names  owner names of the zone at every size (the lab's
#                   option) [default: the quick lab's 1,000, 500 and 30]
#
# It shares the coverage chroot with scripts/coverage-trixie.sh and
# scripts/test-sshd-adapter.sh (each installs rustica's package there and
# purges it at the end): run them one after the other, as .ci/run does.
#
# Exit status: 0 passed, or SKIPPED (the Debian archive unreachable when
# the chroot or its packages must be fetched); 1 a check failed; 2 it
# could not run.
# shellcheck source-path=SCRIPTDIR source-path=.
. "$(dirname "$0")/lib/common.sh"
say_clock=1

deb=""
out=""
names=()
while [ $# -gt 0 ]; do
  case $1 in
  --deb) deb=${2:?--deb needs a file}; shift 2 ;;
  --deb=*) deb=${1#*=}; shift ;;
  --out) out=${2:?--out needs a directory}; shift 2 ;;
  --out=*) out=${1#*=}; shift ;;
  --dnssec-names) names=(--dnssec-names "${2:?--dnssec-names needs a number}"); shift 2 ;;
  --dnssec-names=*) names=(--dnssec-names "${1#*=}"); shift ;;
  -h | --help) usage; exit 0 ;;
  *) usage >&2; die "unknown option: $1" ;;
  esac
done
[ "$(id -u)" -eq 0 ] || die "run as root (debootstrap, chroot, pdns_server)"
[ "$(dpkg --print-architecture)" = amd64 ] || die "an amd64 host is needed (the chroot is amd64)"

# shellcheck source=scripts/lib/trixie-chroot.sh
. scripts/lib/trixie-chroot.sh
rustica_amd64_deb

trixie_chroot_or_skip lab-dnssec-trixie
trixie_coverage_chroot
out=${out:-$CACHE/lab-dnssec-trixie}
ossl=$(in_cov_chroot 'openssl version')
case $ossl in "OpenSSL 3.5"*) ;; *) die "the chroot's openssl is not trixie's 3.5: $ossl" ;; esac

# What the DNSSEC step needs in the chroot.
pkgs=(bind9-utils pdns-server pdns-backend-sqlite3 python3 binutils)
# shellcheck disable=SC2016 # expanded in the chroot
missing=$(in_cov_chroot 'for p in "$@"; do
    dpkg-query -W -f="\${Status}" "$p" 2>/dev/null | grep -q " installed$" || echo "$p"
  done' "${pkgs[@]}" | tr '\n' ' ')
missing=${missing% }
if [ -n "$missing" ]; then
  mkdir -p "$CACHE"
  say "apt-get install $missing in the chroot (they stay installed: coverage-trixie.sh installs them too)"
  # policy-rc.d: pdns-server's installation must not start its service.
  # shellcheck disable=SC2016 # expanded in the chroot
  if ! in_cov_chroot '
      printf "#!/bin/sh\nexit 101\n" >/usr/sbin/policy-rc.d; chmod 755 /usr/sbin/policy-rc.d
      rc=0
      { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$@"; } || rc=$?
      rm -f /usr/sbin/policy-rc.d
      exit $rc' "${pkgs[@]}" >"$CACHE/lab-dnssec-trixie-apt.log" 2>&1; then
    if grep -qE "Temporary failure resolving|Could not resolve|Failed to fetch|Unable to fetch" "$CACHE/lab-dnssec-trixie-apt.log"; then
      echo "lab-dnssec-trixie: SKIPPED: apt-get in the chroot cannot reach the Debian archive (log: $CACHE/lab-dnssec-trixie-apt.log)" >&2
      exit 0
    fi
    tail -n 20 "$CACHE/lab-dnssec-trixie-apt.log" >&2
    die "apt-get install $missing failed in the chroot (log: $CACHE/lab-dnssec-trixie-apt.log)"
  fi
fi
# shellcheck disable=SC2016 # expanded in the chroot
say "Debian $(cat "$COV_CHROOT/etc/debian_version"); $ossl; $(in_cov_chroot 'dpkg-query -W -f="BIND \${Version}" bind9-utils; dpkg-query -W -f=", PowerDNS \${Version}" pdns-server')"

R=$COV_CHROOT/root/rustica-lab-dnssec
# shellcheck disable=SC2317 # called by the EXIT trap
cleanup() {
  if [ -d "$R" ]; then
    { rm -rf "$out"; mkdir -p "$out"; } || true
    [ ! -d "$R/out" ] || cp -a "$R/out/." "$out/" || true
    cp "$R"/*.log "$out/" 2>/dev/null || true
  fi
  in_cov_chroot 'dpkg -P rustica >/dev/null 2>&1 || true' || true
  rm -rf "$R"
}
rm -rf "$R"
mkdir -p "$R"
trap cleanup EXIT
trap 'exit 130' INT TERM
cp "$deb" "$R/rustica.deb"
in_cov_chroot 'dpkg -P rustica >/dev/null 2>&1 || true; dpkg -i /root/rustica-lab-dnssec/rustica.deb' \
  >"$R/install.log" 2>&1 ||
  { tail -n 20 "$R/install.log" >&2; die "dpkg -i $(basename "$deb") failed in the chroot"; }
# A package built before the lab had PowerDNS's signer (the column key is
# in the program's text) would make a run without it.
grep -qa pdns_sign_per_core_1 "$COV_CHROOT/usr/bin/rustica" ||
  die "$deb's rustica has no PowerDNS step in its lab: rebuild it (scripts/package.sh amd64)"

lab=(lab --module /usr/lib/x86_64-linux-gnu/ossl-modules/rustica.so
  --skip "tls,speed,newkey,multi" --count 1 --keygen-reps 1 "${names[@]}")
say "in the chroot: rustica ${lab[*]}"
t0=$SECONDS
say "load average before the lab $(cut -d' ' -f1-3 /proc/loadavg)"
lab_rc=0
# shellcheck disable=SC2016 # expanded in the chroot
in_cov_chroot 'cd /root/rustica-lab-dnssec && exec rustica "$@" --out /root/rustica-lab-dnssec/out' "${lab[@]}" \
  >"$R/lab.log" 2>&1 || lab_rc=$?
say "the lab took $((SECONDS - t0)) s, exit $lab_rc (its report: $out/report.md); load average $(cut -d' ' -f1-3 /proc/loadavg)"
# The lab exits 1 when a row is INVALID: the checks below say which.
[ -f "$R/out/report.json" ] ||
  { tail -n 30 "$R/lab.log" >&2; fail "rustica lab wrote no report (exit $lab_rc; log: $out/lab.log)"; }

python3 - "$R/out/report.json" <<'EOF' || fail "see above (report: $out/report.md)"
import json, re, sys
rep = json.load(open(sys.argv[1]))
bad = []
def check(ok, what):
    print(("ok    " if ok else "FAIL  ") + what, file=sys.stderr)
    if not ok:
        bad.append(what)

SIGNERS = {  # lab column keys: (one thread, one a core, linearity)
    "BIND": ("dnssec_sign_per_core_1", "dnssec_sign_per_core_n", "dnssec_linearity"),
    "PowerDNS": ("pdns_sign_per_core_1", "pdns_sign_per_core_n", "pdns_linearity"),
}
COUNTED = {
    "BIND": "B's zone signatures",
    "PowerDNS": "B's PowerDNS signatures",
}
check(bool(rep["rows"]) and all(r["valid"] for r in rep["rows"]) and not rep["interrupted"],
      "every row of the report is valid: " + ", ".join(f"{r['bits']} {r['status']}" for r in rep["rows"]))
figures = []
for row in rep["rows"]:
    bits = row["bits"]
    cols = {c["column"]: c for c in row["columns"]}
    if bits not in (1024, 2048, 4096):
        continue
    for signer, keys in SIGNERS.items():
        cells = [cols.get(k) for k in keys]
        if None in cells:
            check(False, f"{bits} bits: the report has {signer}'s cells")
            continue
        st = {c["status"] for c in cells}
        reason = next((c["reason"] for c in cells if c["reason"]), "")
        check(st == {"measured"}, f"{bits} bits: {signer}'s cells measured ({', '.join(sorted(st))}{': ' + reason if reason else ''})")
        if "not reached" in reason:
            check(False, f"{bits} bits: {signer} reached by rustica")
        counted = [c for c in row["checks"] if c["check"].startswith(COUNTED[signer]) and "counted by rustica" in c["check"]]
        rounds = re.findall(r"round \d+", counted[0]["detail"]) if counted else []
        check(len(counted) == 1 and counted[0]["ok"] and rounds,
              f"{bits} bits: {signer}: rustica counted exactly the RRSIGs of each of B's runs ({len(rounds)} rounds"
              + (f"; round 1: {counted[0]['detail'].split(';')[0].split(': ', 1)[-1]}" if counted else "") + ")")
        figures.append((bits, signer, cells))
    verify = [c for c in row["checks"] if "passes dnssec-verify" in c["check"] or "byte for byte" in c["check"]]
    check(len(verify) == 3 and all(c["ok"] for c in verify),
          f"{bits} bits: A's and B's zones the same, each verified under the other side ({sum(c['ok'] for c in verify)} of 3 checks)")

def fmt(v):
    return "-" if v is None else (f"{v:,.0f}" if v >= 100 else f"{v:#.3g}")
def ratio(c):
    k = c["comparison"]
    if k.get("ratio") is None:
        return "-"
    lo, hi = k["ci95"]
    return f"{k['ratio']:#.3g}x [{lo:#.3g}-{hi:#.3g}]" + (" DIFFERS" if k.get("differs") else "")
print(f"DNSSEC on Debian 13 (lab started {rep['started']}, {rep['duration_seconds']:.0f} s):", file=sys.stderr)
print("  signer    bits  1 thread sig/s A / B   B/A [95 %]             per core at N A / B   B/A [95 %]             linearity A / B", file=sys.stderr)
for bits, signer, (one, n, lin) in figures:
    print(f"  {signer:<9} {bits:<5} {fmt(one['A']['figure']):>8} / {fmt(one['B']['figure']):<8}  {ratio(one):<22} "
          f"{fmt(n['A']['figure']):>8} / {fmt(n['B']['figure']):<8}  {ratio(n):<22} "
          f"{fmt(lin['A']['figure'])} / {fmt(lin['B']['figure'])}", file=sys.stderr)
sys.exit(1 if bad else 0)
EOF
[ "$lab_rc" = 0 ] || { tail -n 30 "$R/lab.log" >&2; fail "rustica lab exited $lab_rc (log: $out/lab.log)"; }
say "OK: BIND's and PowerDNS's signers on Debian 13, every RRSIG of B's counted by rustica"
