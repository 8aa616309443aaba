#!/usr/bin/env bash
# scripts/test-sshd-adapter.sh: sshd of Debian 13 (OpenSSH 10.0, OpenSSL
# 3.5) with rustica on the libica backend, on the emulated libica and the
# shared card, in the Debian 13 chroot of scripts/coverage-trixie.sh
# ($RUSTICA_CACHE/trixie-coverage-chroot; scripts/lib/trixie-chroot.sh).
#
# rustica comes from its amd64 package, as in coverage-trixie.sh (built by
# scripts/package.sh amd64 when target/deb has none); the emulated libica
# (target/release/libica_emu.so) and the card (target/release/rustica-card)
# are built here on the host by cargo, against Debian 12's OpenSSL 3.0,
# like the package, and run in the chroot against trixie's libcrypto.so.3
# (3.5). In the chroot (scripts/lib/sshd-adapter-chroot.sh): sshd with an
# openssl.cnf from `rustica config --backend libica --libica
# .../libica_emu.so`, LIBICA_EMU_CARD pointing at one rustica-card, and
# LOGINS publickey logins (RSA host key, RSA user key) as a test user, by
# an ssh client that does not load rustica. Then it checks:
#
#   - every login succeeded;
#   - rustica counted LOGINS signatures, all on libica (the host key's, in
#     the key exchange), and LOGINS verifications (the user's key: public
#     operations run in software), nothing failed or fell back;
#   - the emulated libica saw LOGINS ica_rsa_crt calls (rsa_crt in its log), one per login, each
#     from a privileged sshd-session (the monitor: a pid the listener logged
#     as "Forked child"), none from the sandboxed sshd-auth ("Network child
#     is on pid"), and the card served the same calls from the same pids;
#   - no sandbox kill: sshd logged no "terminated by signal", and the
#     kernel logged no seccomp kill (audit type=1326) of sshd-auth;
#   - what a live sshd-auth (after the key exchange, at its password
#     prompt) and a live monitor hold: threads, eventfds, seccomp mode,
#     whether rustica.so and libica_emu.so are mapped (reported; the
#     sandboxed child must run in seccomp filter mode).
#
# Usage (as root, amd64 Debian 12 host with debootstrap):
#   scripts/test-sshd-adapter.sh [--logins N] [--no-card] [--deb FILE]
#   --logins   publickey logins [default: 200]
#   --no-card  the emulated libica computes in the process (no rustica-card)
#   --deb      rustica's amd64 package [default: target/deb/rustica_<version>_amd64.deb]
#
# It shares the coverage chroot with scripts/coverage-trixie.sh (each
# installs rustica's package there and purges it at the end): run them one
# after the other, as .ci/run does.
#
# Exit status: 0 passed, or SKIPPED (the Debian archive unreachable when
# the chroot or its openssh packages must be fetched); 1 a check failed;
# 2 it could not run. Logs: $RUSTICA_CACHE/sshd-adapter/.
# shellcheck source-path=SCRIPTDIR source-path=.
. "$(dirname "$0")/lib/common.sh"
say_clock=1

logins=200
card=1
deb=""
while [ $# -gt 0 ]; do
  case $1 in
  --logins) logins=${2:?--logins needs a number}; shift 2 ;;
  --logins=*) logins=${1#*=}; shift ;;
  --no-card) card=0; shift ;;
  --deb) deb=${2:?--deb needs a file}; shift 2 ;;
  --deb=*) deb=${1#*=}; shift ;;
  -h | --help) usage; exit 0 ;;
  *) usage >&2; die "unknown option: $1" ;;
  esac
done
case $logins in '' | *[!0-9]* | 0) die "--logins needs a positive number" ;; esac
[ "$(id -u)" -eq 0 ] || die "run as root (chroot, sshd)"
[ "$(dpkg --print-architecture)" = amd64 ] || die "an amd64 host is needed (the chroot is amd64)"

# shellcheck source=scripts/lib/trixie-chroot.sh
. scripts/lib/trixie-chroot.sh
rustica_amd64_deb
say "cargo build --release -p libica-emu -p rustica-card (libica_emu.so, rustica-card)"
cargo build --release -q -p libica-emu -p rustica-card || die "cannot build libica-emu"

trixie_chroot_or_skip test-sshd-adapter
trixie_coverage_chroot
LOGS=$CACHE/sshd-adapter
rm -rf "$LOGS"
mkdir -p "$LOGS"

# OpenSSH in the chroot (coverage-trixie.sh installs it too).
# shellcheck disable=SC2016 # expanded in the chroot
have=$(in_cov_chroot 'dpkg-query -W -f="\${Status}\n" openssh-server openssh-client 2>/dev/null | grep -c "install ok installed" || true')
if [ "$have" != 2 ]; then
  say "apt-get install openssh-server openssh-client in the chroot"
  # shellcheck disable=SC2016 # expanded in the chroot
  if ! in_cov_chroot '
      printf "#!/bin/sh\nexit 101\n" >/usr/sbin/policy-rc.d; chmod 755 /usr/sbin/policy-rc.d
      rc=0
      { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
          openssh-server openssh-client; } || rc=$?
      rm -f /usr/sbin/policy-rc.d
      exit $rc' >"$LOGS/apt.log" 2>&1; then
    if grep -qE "Temporary failure resolving|Could not resolve|Failed to fetch|Unable to fetch" "$LOGS/apt.log"; then
      echo "test-sshd-adapter: SKIPPED: apt-get in the chroot cannot reach the Debian archive (log: $LOGS/apt.log)" >&2
      exit 0
    fi
    tail -n 20 "$LOGS/apt.log" >&2
    die "apt-get install openssh-server failed in the chroot"
  fi
fi
# shellcheck disable=SC2016 # expanded in the chroot
say "Debian $(cat "$COV_CHROOT/etc/debian_version"); $(in_cov_chroot 'openssl version'); $(in_cov_chroot 'dpkg-query -W -f="OpenSSH \${Version}" openssh-server')"

R=$COV_CHROOT/root/rustica-sshd
# shellcheck disable=SC2317 # called by the EXIT trap
cleanup() {
  [ -d "$R" ] && cp -a "$R/." "$LOGS/" 2>/dev/null
  in_cov_chroot 'dpkg -P rustica >/dev/null 2>&1 || true' || true
  rm -rf "$R"
}
rm -rf "$R"
mkdir -p "$R"
trap cleanup EXIT
trap 'exit 130' INT TERM
cp "$deb" "$R/rustica.deb"
cp target/release/libica_emu.so target/release/rustica-card "$R/"
cp scripts/lib/sshd-adapter-chroot.sh "$R/run.sh"
cp scripts/lib/sshd-config.sh "$R/sshd-config.sh"
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
# Seccomp kills the kernel logged before the run (audit type=1326); -1
# when the kernel's log cannot be read (then sshd's own log decides).
if dmesg >/dev/null 2>&1; then
  kills_before=$(dmesg | grep -c 'type=1326' || true)
else
  kills_before=-1
fi

say "in the chroot: sshd on 127.0.0.1:$port, rustica on libica (emulated$([ "$card" = 1 ] && echo ", shared card")), $logins logins"
t0=$SECONDS
in_cov_chroot 'exec bash /root/rustica-sshd/run.sh "$@"' "$logins" "$port" "$card" ||
  { tail -n 20 "$R/sshd.log" >&2 2>/dev/null; die "the run in the chroot failed"; }
say "the logins and probes took $((SECONDS - t0)) s"

kills=-1
if [ "$kills_before" -ge 0 ]; then
  kills=$(dmesg | grep 'type=1326' | tail -n +"$((kills_before + 1))" | grep -c 'sshd' || true)
fi
python3 - "$R" "$logins" "$card" "$kills" <<'EOF' || fail "see above (logs: $LOGS)"
import json, re, sys
from collections import Counter
R, n, card, kills = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1", int(sys.argv[4])
bad = []
def check(ok, what):
    print(("ok    " if ok else "FAIL  ") + what, file=sys.stderr)
    if not ok:
        bad.append(what)

logins = dict(l.strip().split("=") for l in open(f"{R}/logins"))
check(int(logins["ok"]) == n and int(logins["failed"]) == 0,
      f"logins: {logins['ok']} of {n} succeeded, {logins['failed']} failed")

ops = json.load(open(f"{R}/stats.json"))["ops"]
s, v = ops["sign"], ops["verify"]
check(s["libica"] == n and s["software"] == 0 and s["fallback"] == 0 and s["failed"] == 0,
      f"rustica's sign counters: libica {s['libica']} (expected {n}), software {s['software']}, fallback {s['fallback']}, failed {s['failed']}")
check(v["libica"] + v["software"] + v["fallback"] == n and v["failed"] == 0,
      f"rustica's verify counters: software {v['software']}, libica {v['libica']}, fallback {v['fallback']} (expected {n} in all), failed {v['failed']}")
others = {k: o for k, o in ops.items() if k in ("keygen", "encrypt", "decrypt")
          and o["libica"] + o["software"] + o["fallback"] + o["failed"]}
check(not others, f"no other operation counted ({others or 'none'})")

log = open(f"{R}/sshd.log", errors="replace").read()
monitors = set(re.findall(r"Forked child (\d+)\.", log))
preauth = set(re.findall(r"Network child is on pid (\d+)", log))
calls = [l.split() for l in open(f"{R}/calls.logins") if l.strip()]
by_pid = Counter(c[1] for c in calls)
funcs = Counter((c[2], c[3], c[4]) for c in calls)
check(len(calls) == n and funcs == Counter({("rsa_crt", "2048", "ok"): n}),
      f"emulated libica: {len(calls)} calls (expected {n}): {dict(funcs)}")
check(len(monitors) >= n and len(preauth) >= n,
      f"sshd's log names {len(monitors)} sshd-session monitors (Forked child) and {len(preauth)} sshd-auth children (Network child)")
check(set(by_pid) <= monitors and all(c == 1 for c in by_pid.values()),
      f"each signature made by a privileged sshd-session (monitor): {len(set(by_pid) & monitors)} monitor pids, one call each; "
      f"{len(set(by_pid) - monitors)} other pids")
check(not set(by_pid) & preauth, f"no call from a sandboxed sshd-auth ({len(set(by_pid) & preauth)} pids)")
if card:
    cs = json.load(open(f"{R}/card.json"))
    req = Counter()
    for r in cs["requests"]:
        req[(str(r["pid"]), r["type"], r["bits"], r["outcome"])] += r["count"]
    served = sum(c for (p, t, b, o), c in req.items() if t == "crt" and b == 2048 and o == "ok")
    check(served == n and sum(req.values()) == n, f"the card served {served} CRT requests of 2048 bits (expected {n}), {sum(req.values())} requests in all")
    check({p for (p, *_rest) in req} == set(by_pid), "the card's client pids are the pids that called the emulated libica")
sig = re.findall(r".*(?:terminated by signal|Killed by signal|seccomp).*", log)
check(not sig, f"sshd logged no child killed by a signal ({len(sig)} lines{': ' + sig[0] if sig else ''})")
if kills < 0:
    print("      the kernel's log cannot be read (dmesg): seccomp kills checked in sshd's log only", file=sys.stderr)
else:
    check(kills == 0, f"the kernel logged no seccomp kill of sshd (audit type=1326): {kills}")
fatal = re.findall(r".*fatal.*", log)
check(not fatal, f"sshd logged no fatal error ({len(fatal)}{': ' + fatal[0] if fatal else ''})")

probe = dict(l.strip().split("=", 1) for l in open(f"{R}/probe") if "=" in l)
for name in ("listener", "monitor", "session", "preauth"):
    if f"{name}.pid" not in probe:
        continue
    g = lambda k: probe.get(f"{name}.{k}")
    print(f"      {name}: {g('exe')} uid {g('uid')}, threads {g('threads')}, eventfds {g('eventfds')}, "
          f"seccomp {g('seccomp')}, rustica.so mapped {'yes' if g('rustica_so') != '0' else 'no'}, "
          f"libica_emu.so mapped {'yes' if g('libica_emu_so') != '0' else 'no'}", file=sys.stderr)
check("preauth.pid" in probe and probe["preauth.seccomp"] == "2",
      "a live sshd-auth after the key exchange was found, in seccomp filter mode (Seccomp: 2)")
check("monitor.pid" in probe, "a live sshd-session monitor was found")
all_calls = [l.split() for l in open(f"{R}/calls.all") if l.strip()]
if "monitor.pid" in probe:
    mc = sum(1 for c in all_calls if c[1] == probe["monitor.pid"])
    check(mc == 1, f"the held session's monitor (pid {probe['monitor.pid']}) made its session's signature: {mc} call")
if "preauth.pid" in probe:
    pc = sum(1 for c in all_calls if c[1] == probe["preauth.pid"])
    check(pc == 0, f"the live sshd-auth (pid {probe['preauth.pid']}) made no libica call: {pc}")
sys.exit(1 if bad else 0)
EOF
say "OK: $logins logins through sshd on rustica's libica backend$([ "$card" = 1 ] && echo " and the shared card"), every host-key signature counted on libica, made by sshd-session's monitor; no sandbox kill"
