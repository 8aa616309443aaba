#!/usr/bin/env bash
# scripts/coverage-trixie.sh: scripts/coverage.sh's rows on Debian 13
# (trixie, OpenSSL 3.5), with trixie's own packages, in a chroot.
#
# The chroot is a copy of the one scripts/test-trixie.sh uses
# ($RUSTICA_CACHE/trixie-chroot, made with debootstrap when missing:
# scripts/lib/trixie-chroot.sh), kept as $RUSTICA_CACHE/trixie-coverage-chroot
# so that the packages coverage.sh installs there (nginx, apache2, openssh,
# bind9-utils, pdns-server, ...) stay cached and never reach the minimal
# chroot in which test-trixie.sh checks the package's dependencies.
# rustica comes from its amd64 package (scripts/package.sh amd64, built
# when target/deb has none), installed with dpkg -i in the chroot and
# purged at the end; coverage.sh and scripts/lib/coverage/ are copied in
# and run there against /usr/lib/x86_64-linux-gnu/ossl-modules/rustica.so
# and /usr/bin/rustica, in a mount namespace of their own with /proc,
# /dev/pts, /dev/shm and /run mounted there only. The chroot shares the
# host's network: the daemons listen on free high ports of 127.0.0.1.
#
# Usage (as root, on an amd64 Debian host with debootstrap):
#   scripts/coverage-trixie.sh [--deb FILE] [--out FILE] [--check] [--keep]
#   --deb   rustica's amd64 package [default: target/deb/rustica_<version>_amd64.deb]
#   --out   also write the table (with its header lines) to FILE
#   --check compare the table with Debian 13's in docs/system-wide.md
#           (scripts/coverage-check.py): exit 1 when a row changed
#   --keep  keep coverage.sh's work directory (inside the chroot's /tmp)
#
# Exit status: coverage.sh's (0 every row measured, 1 a row was not,
# 2 nothing was), and 1 with --check when a row changed; 2 as well when the chroot or the package cannot be
# made; 0 with SKIPPED when debootstrap cannot reach the archive.
# shellcheck source-path=SCRIPTDIR source-path=.
. "$(dirname "$0")/lib/common.sh"
say_clock=1

deb=""
out=""
keep=()
check=0
while [ $# -gt 0 ]; do
  case $1 in
  --deb) deb=${2:?--deb needs a file}; shift 2 ;;
  --deb=*) deb=${1#*=}; shift ;;
  --out) out=${2:?--out needs a file}; shift 2 ;;
  --out=*) out=${1#*=}; shift ;;
  --check) check=1; shift ;;
  --keep) keep=(--keep); shift ;;
  -h | --help) usage; exit 0 ;;
  *) usage >&2; die "unknown option: $1" ;;
  esac
done
[ "$(id -u)" -eq 0 ] || die "run as root (debootstrap, chroot, daemons)"
[ "$(dpkg --print-architecture)" = amd64 ] || die "an amd64 host is needed (the chroot is amd64)"

# shellcheck source=scripts/lib/trixie-chroot.sh
. scripts/lib/trixie-chroot.sh
rustica_amd64_deb

trixie_chroot_or_skip coverage-trixie
trixie_coverage_chroot
CHROOT=$COV_CHROOT
ossl=$(in_cov_chroot 'openssl version')
say "Debian $(cat "$CHROOT/etc/debian_version"); $ossl"
case $ossl in "OpenSSL 3.5"*) ;; *) die "the chroot's openssl is not trixie's 3.5: $ossl" ;; esac

# coverage.sh and its row files, and the package, in the chroot.
R=$CHROOT/root/rustica-coverage
# shellcheck disable=SC2317 # called by the EXIT trap
cleanup() {
  in_cov_chroot 'dpkg -P rustica >/dev/null 2>&1 || true' || true
  rm -rf "$R"
}
rm -rf "$R"
mkdir -p "$R/scripts/lib/coverage"
trap cleanup EXIT
trap 'exit 130' INT TERM
cp scripts/coverage.sh "$R/scripts/"
cp scripts/lib/coverage/*.sh "$R/scripts/lib/coverage/"
cp scripts/lib/common.sh scripts/lib/sshd-config.sh "$R/scripts/lib/"
cp "$deb" "$R/rustica.deb"
in_cov_chroot 'dpkg -P rustica >/dev/null 2>&1 || true; dpkg -i /root/rustica-coverage/rustica.deb' \
  >"$CACHE/trixie-coverage-install.log" 2>&1 ||
  { tail -n 20 "$CACHE/trixie-coverage-install.log" >&2; die "dpkg -i $(basename "$deb") failed in the chroot"; }

say "scripts/coverage.sh in the chroot (installs what is missing with apt-get)"
rc=0
in_cov_chroot 'cd /root/rustica-coverage && exec scripts/coverage.sh "$@"' \
  --module /usr/lib/x86_64-linux-gnu/ossl-modules/rustica.so --rustica /usr/bin/rustica \
  --out /root/rustica-coverage/table.md "${keep[@]}" || rc=$?
if [ -n "$out" ] && [ -f "$R/table.md" ]; then cp "$R/table.md" "$out"; fi
say "done (coverage.sh exit $rc)"
if [ "$rc" = 0 ] && [ "$check" = 1 ]; then
  python3 scripts/coverage-check.py --release 13 --doc docs/system-wide.md "$R/table.md" || rc=1
fi
exit "$rc"
