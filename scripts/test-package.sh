#!/usr/bin/env bash
# rustica's packages, as an administrator uses them (run as root, on a
# Debian 12 machine where nothing else owns the package name rustica):
#
#  0. debian/copyright has a stanza for every crate linked into the binaries;
#  1. build the amd64 package from debian/ (scripts/package.sh amd64:
#     dpkg-buildpackage, then lintian with 0 errors and 0 warnings);
#  2. dpkg -i it; the module is where `openssl version -m` says, `rustica`
#     is on PATH, the manual pages and completion are in place;
#  3. `rustica config` (to a temporary file, never the system openssl.cnf)
#     picks the installed module and says so; `rustica doctor` against the
#     installed module and that config passes; a signature made under that
#     config is counted by rustica;
#  4. dpkg -r warns about the config still loading the module, then
#     dpkg -P; no file the package listed (dpkg -c) remains;
#  5. the s390x package cross-builds (lintian 0/0 too), installs into the
#     s390x lane's sysroot with dpkg -x, and the lane runs from it
#     (scripts/s390x-lane.sh --from-deb);
#  6. the amd64 package on Debian 13 (trixie, OpenSSL 3.5) in a cached
#     debootstrap chroot: install, doctor, a counted signature, removal
#     (scripts/test-trixie.sh; skipped, saying so, if the archive is
#     unreachable);
#  7. the RPMs (scripts/package-rpm.sh x86_64 and s390x: rpmbuild, rpmlint
#     with 0 errors), each listing the same files as the .deb of its
#     architecture, but for the differences the two formats dictate.
#
#   scripts/test-package.sh            # all of it
#   scripts/test-package.sh --amd64    # steps 0-4 only
# (Pipelines end in `grep >/dev/null`, not `grep -q`: under pipefail, a grep
# that stops reading early can kill the writer with SIGPIPE.)
# shellcheck source-path=SCRIPTDIR source-path=.
. "$(dirname "$0")/lib/common.sh"
REPO=$(pwd)
say_clock=1

[ "$(id -u)" -eq 0 ] || die "run as root: it installs and removes the package with dpkg"
if dpkg -s rustica >/dev/null 2>&1; then
  die "a rustica package is already installed; remove it first (dpkg -P rustica)"
fi
WORK=$(mktemp -d /tmp/rustica-test-package.XXXXXX)
cleanup() {
  if dpkg -s rustica >/dev/null 2>&1; then dpkg -P rustica >/dev/null 2>&1 || true; fi
  rm -rf "$WORK"
}
trap cleanup EXIT

say "0. debian/copyright names every crate linked into the binaries"
for triple in x86_64-unknown-linux-gnu s390x-unknown-linux-gnu; do
  # Normal dependencies without proc-macros: what ends up in the binaries.
  cargo tree -q --offline --locked -e normal,no-proc-macro --target "$triple" \
    -p rustica -p rustica-harness --prefix none --format '{p}' \
    | grep -v '(/' | awk 'NF {print $1}'
done | sort -u >"$WORK/crates"
[ -s "$WORK/crates" ] || die "cargo tree listed no crates"
missing=$(while read -r crate; do
  grep -qxF "Files: vendor/$crate-[0-9]*" debian/copyright || echo "$crate"
done <"$WORK/crates")
[ -z "$missing" ] || fail "debian/copyright has no stanza for: $missing"
say "$(wc -l <"$WORK/crates") crates, each with its stanza"

say "1. building the amd64 package (dpkg-buildpackage, lintian 0/0)"
DEB=$(scripts/package.sh amd64 | tail -n1)
[ -f "$DEB" ] || die "scripts/package.sh did not produce a package"
dpkg-deb -c "$DEB" | awk '{print $6}' | sed 's|^\./|/|' | grep -v '/$' >"$WORK/files"
say "$(wc -l <"$WORK/files") files in $(basename "$DEB")"

say "2. dpkg -i"
dpkg -i "$DEB" >"$WORK/install.log" 2>&1 || { cat "$WORK/install.log"; fail "dpkg -i failed"; }
grep -q "rustica config" "$WORK/install.log" || fail "postinst did not say how to enable rustica"
# It names the root-owned file of the README, never a shared directory.
grep -q "rustica config --out /etc/ssl/openssl-rustica.cnf" "$WORK/install.log" \
  || { cat "$WORK/install.log"; fail "postinst does not recommend /etc/ssl/openssl-rustica.cnf"; }
if grep '^rustica:' "$WORK/install.log" | grep -E '/tmp|/dev/shm|/var/tmp' >/dev/null; then
  cat "$WORK/install.log"; fail "postinst names a shared directory"
fi
MODULES_DIR=$(openssl version -m | cut -d'"' -f2)
MODULE=$MODULES_DIR/rustica.so
[ -f "$MODULE" ] || fail "no $MODULE after dpkg -i"
[ "$(stat -c '%a %u %g' "$MODULE")" = "644 0 0" ] || fail "$MODULE is not mode 0644, root:root"
[ "$(command -v rustica)" = /usr/bin/rustica ] || fail "rustica is not /usr/bin/rustica on PATH"
MANWIDTH=80 man rustica 2>/dev/null | grep "rustica config" >/dev/null || fail "man rustica does not work"
MANWIDTH=80 man rustica-provider 2>/dev/null | grep "offload-max-bits" >/dev/null \
  || fail "man rustica-provider does not work"
[ -f /usr/share/bash-completion/completions/rustica ] || fail "no bash completion"
# The metrics unit writes into root's own directory, never through the
# textfile directory another user owns; node_exporter reads the file
# through a link that directory's owner made (docs/monitoring.md).
UNIT=/lib/systemd/system/rustica-metrics.service
grep -q '^StateDirectory=rustica-metrics$' "$UNIT" || fail "$UNIT does not write to its own state directory"
if grep -E '^(BindPaths|ReadWritePaths)=' "$UNIT" >/dev/null; then
  fail "$UNIT makes a path it does not own writable"
fi
TEXTFILE=/var/lib/prometheus/node-exporter
if [ -d "$TEXTFILE" ]; then
  [ "$(readlink "$TEXTFILE/rustica.prom")" = /var/lib/rustica-metrics/rustica.prom ] \
    || fail "postinst did not link $TEXTFILE/rustica.prom to the metrics file"
  [ "$(stat -c %U "$TEXTFILE/rustica.prom")" = "$(stat -c %U "$TEXTFILE")" ] \
    || fail "the link in $TEXTFILE was not made by the directory's owner"
  [ -f /var/lib/rustica-metrics/rustica.prom ] || fail "the link dangles before the timer's first run"
fi
# The unprefixed module name works, as the package puts it where OpenSSL looks.
OPENSSL_CONF=/dev/null openssl list -providers -provider rustica | grep rustica >/dev/null \
  || fail "openssl -provider rustica does not find the installed module"

say "3. rustica config (temporary file) and rustica doctor"
CNF=$WORK/openssl.cnf
# From /tmp, so no module beside a build tree's rustica is in play; the
# packaged command must pick the installed module and say so.
(cd "$WORK" && env -u RUSTICA_MODULE rustica config --out "$CNF") 2>"$WORK/config.err" \
  || { cat "$WORK/config.err"; fail "rustica config failed"; }
grep -q "module $MODULE (installed in OpenSSL's modules directory)" "$WORK/config.err" \
  || { cat "$WORK/config.err"; fail "rustica config did not say it chose the installed module"; }
grep -q "^module = $MODULE\$" "$CNF" || fail "the written config does not load $MODULE"
# A build-tree rustica must also prefer the installed module for config.
if [ -x target/release/rustica ] && [ -f target/release/rustica.so ]; then
  env -u RUSTICA_MODULE target/release/rustica config --fresh 2>&1 >/dev/null \
    | grep "module $MODULE (installed" >/dev/null || fail "a build tree's rustica config did not prefer the installed module"
fi
env -u RUSTICA_MODULE -u RUSTICA_BACKEND OPENSSL_CONF="$CNF" rustica doctor >"$WORK/doctor.log" 2>&1 \
  || { cat "$WORK/doctor.log"; fail "rustica doctor failed against the installed package"; }
grep -q "^ok    module: $MODULE" "$WORK/doctor.log" \
  || { cat "$WORK/doctor.log"; fail "rustica doctor did not check the installed module"; }

say "3b. a signature through the written config, counted by rustica"
export RUSTICA_STATS_PATH=$WORK/stats
OPENSSL_CONF=/dev/null openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 \
  -out "$WORK/key.pem" 2>/dev/null
echo "rustica package test" >"$WORK/doc.txt"
rustica stats --reset >/dev/null
env -u RUSTICA_BACKEND OPENSSL_CONF="$CNF" openssl dgst -sha256 -sign "$WORK/key.pem" \
  -out "$WORK/doc.sig" "$WORK/doc.txt" || fail "signing under the written config failed"
OPENSSL_CONF=/dev/null openssl dgst -sha256 -verify <(openssl pkey -in "$WORK/key.pem" -pubout) \
  -signature "$WORK/doc.sig" "$WORK/doc.txt" | grep "Verified OK" >/dev/null \
  || fail "the default provider does not verify rustica's signature"
signed=$(rustica stats --json | python3 -c '
import json, sys
sign = json.load(sys.stdin)["ops"]["sign"]
print(sign["libica"] + sign["software"] + sign["fallback"])')
[ "$signed" = 1 ] || fail "rustica counted $signed signatures, expected 1"
unset RUSTICA_STATS_PATH

say "4. dpkg -r warns about a config still loading the module; dpkg -P removes every file"
OPENSSL_CONF=$CNF dpkg -r rustica >"$WORK/remove.log" 2>&1 \
  || { cat "$WORK/remove.log"; fail "dpkg -r failed"; }
grep -q "WARNING: $CNF still loads rustica" "$WORK/remove.log" \
  || { cat "$WORK/remove.log"; fail "dpkg -r did not warn about $CNF"; }
dpkg -P rustica >/dev/null 2>&1 || fail "dpkg -P failed"
dpkg -s rustica >/dev/null 2>&1 && fail "rustica is still known to dpkg after purge"
left=$(while read -r f; do [ ! -e "$f" ] || echo "$f"; done <"$WORK/files")
[ -z "$left" ] || fail "files left after removal: $left"
[ ! -e /usr/share/doc/rustica ] || fail "/usr/share/doc/rustica left after removal"
[ ! -L "$TEXTFILE/rustica.prom" ] || fail "the metrics link is left after removal"
[ ! -e /var/lib/rustica-metrics ] || fail "/var/lib/rustica-metrics is left after purge"
say "amd64 package: installed, checked, removed without a trace"

if [ "${1:-}" = "--amd64" ]; then
  say "OK (amd64 only)"
  exit 0
fi

say "5. the s390x package, installed into the lane's sysroot, runs the lane"
S390X_DEB=$(scripts/package.sh s390x | tail -n1)
[ -f "$S390X_DEB" ] || die "scripts/package.sh s390x did not produce a package"
[ "$(dpkg-deb -f "$S390X_DEB" Architecture)" = s390x ] || fail "$S390X_DEB is not s390x"
dpkg-deb -c "$S390X_DEB" >"$WORK/s390x-files"
grep -q "\./usr/lib/s390x-linux-gnu/ossl-modules/rustica.so$" "$WORK/s390x-files" \
  || fail "the s390x package does not hold the module in s390x's modules directory"
[ "$(dpkg-deb -f "$S390X_DEB" Depends)" = "$(dpkg-deb -f "$DEB" Depends)" ] \
  || fail "the s390x package's Depends ($(dpkg-deb -f "$S390X_DEB" Depends)) differ from amd64's ($(dpkg-deb -f "$DEB" Depends))"
scripts/s390x-lane.sh --from-deb "$S390X_DEB" || fail "the s390x lane failed from the package"

say "6. the amd64 package on Debian 13 (trixie chroot)"
scripts/test-trixie.sh "$DEB" || fail "the trixie run failed"

# The files of an .rpm and of a .deb, under names both formats share: the
# modules directory (Debian's multiarch one, the RPM's %{_libdir} one) as
# MODULES. What the formats dictate differs, and nothing else may:
# Debian ships its changelog as a file and refers to
# /usr/share/common-licenses for the Apache text, where the RPM keeps its
# changelog in the header and ships the text in /usr/share/licenses; the
# copyright file moves from the doc directory to the licenses directory;
# rpm adds /usr/lib/.build-id symbolic links (regular files are compared);
# Debian 12's debhelper puts systemd units in /lib/systemd/system, the
# RPM in /usr/lib/systemd/system (one directory on merged-/usr systems);
# dh_compress gzips the larger documents (docs/*.md), rpm does not.
deb_files() {
  dpkg-deb -c "$1" | awk '$1 ~ /^-/ {print $6}' | sed -e 's|^\./|/|' \
    -e 's|^/usr/lib/[a-z0-9_]*-linux-gnu/ossl-modules/|MODULES/|' \
    -e 's|^/lib/systemd/system/|/usr/lib/systemd/system/|' \
    -e 's|^\(/usr/share/doc/rustica/.*\.md\)\.gz$|\1|' \
    -e 's|^/usr/share/doc/rustica/copyright$|/usr/share/licenses/rustica/copyright|' \
    | grep -vx /usr/share/doc/rustica/changelog.gz | sort
}
rpm_files() {
  rpm -qlvp "$1" 2>/dev/null | awk '$1 ~ /^-/ {print $NF}' \
    | sed -e 's|^/usr/lib64/ossl-modules/|MODULES/|' \
    | grep -vx /usr/share/licenses/rustica/LICENSE | sort
}

say "7. the RPMs: rpmbuild, rpmlint, the same files as the .deb"
for arch in x86_64 s390x; do
  RPM=$(scripts/package-rpm.sh "$arch" | tail -n1)
  [ -f "$RPM" ] || die "scripts/package-rpm.sh $arch did not produce an rpm"
  [ "$(rpm -qp --qf '%{ARCH}' "$RPM" 2>/dev/null)" = "$arch" ] || fail "$RPM is not $arch"
  rpm -qlp "$RPM" 2>/dev/null | grep -x /usr/lib64/ossl-modules/rustica.so >/dev/null \
    || fail "$RPM does not hold the module in %{_libdir}/ossl-modules"
  if rpm -qlp "$RPM" 2>/dev/null | grep -E 'openssl\.cnf$' >/dev/null; then
    fail "$RPM ships an openssl.cnf"
  fi
  rpm -qp --scripts "$RPM" 2>/dev/null | grep openssl.cnf >/dev/null && fail "$RPM has scriptlets touching openssl.cnf"
  [ "$arch" = x86_64 ] && deb=$DEB || deb=$S390X_DEB
  if ! diff <(deb_files "$deb") <(rpm_files "$RPM") >"$WORK/files-$arch.diff"; then
    cat "$WORK/files-$arch.diff" >&2
    fail "$(basename "$RPM") and $(basename "$deb") do not list the same files (< deb, > rpm)"
  fi
  say "$(basename "$RPM"): $(rpm_files "$RPM" | wc -l) files, the same as $(basename "$deb")'s"
done
say "OK: both Debian packages built, lintian-clean; amd64 installed, worked and removed cleanly on Debian 12 and 13; the s390x lane ran from its package; both RPMs built, rpmlint-clean, with the .deb's files"
