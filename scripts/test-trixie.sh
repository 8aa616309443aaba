#!/usr/bin/env bash
# rustica's amd64 package (built on Debian 12) installed and used on Debian 13
# (trixie, OpenSSL 3.5), in a chroot made with debootstrap from Debian's
# archive and cached under $RUSTICA_CACHE/trixie-chroot:
#
#   scripts/test-trixie.sh target/deb/rustica_<version>_amd64.deb
#
# First, what dh_shlibdeps computes for the binaries from trixie's symbols
# files (libssl3t64, where Debian 12's give libssl3). Then in the chroot
# (its own mount namespace, /proc mounted there only): dpkg -i
# (Depends resolved by trixie's packages: libssl3t64 provides libssl3);
# `rustica config --out /etc/ssl/openssl-rustica.cnf`; rustica doctor under
# that file; a signature made by trixie's openssl under it, counted by
# rustica and verified by the default provider; dpkg -r (warning about the
# file), dpkg -P, no packaged file left. Run as root. When debootstrap
# cannot reach the archive, it says so and exits 0 (SKIPPED).
# shellcheck source-path=SCRIPTDIR source-path=.
. "$(dirname "$0")/lib/common.sh"
say_clock=1
DEB=$(realpath "${1:?usage: $0 rustica_VERSION_amd64.deb}")
[ "$(dpkg-deb -f "$DEB" Architecture)" = amd64 ] || die "$DEB is not an amd64 package"
[ "$(id -u)" -eq 0 ] || die "run as root (debootstrap, chroot)"
# shellcheck source=scripts/lib/trixie-chroot.sh
. scripts/lib/trixie-chroot.sh
trixie_chroot_or_skip test-trixie
say "Debian $(cat "$CHROOT/etc/debian_version"); $(in_chroot 'openssl version')"
case "$(in_chroot 'openssl version')" in "OpenSSL 3.5"*) ;; *) die "trixie's openssl is not 3.5" ;; esac
say "libssl3t64: $(in_chroot "dpkg-query -W -f '\${Version}; Provides: \${Provides}' libssl3t64")"
# What dh_shlibdeps computes for these binaries from trixie's own symbols
# files (a build on Debian 13 would write it): dpkg-shlibdeps against a copy
# of the chroot's dpkg database whose file lists carry the chroot's prefix.
ADMIN=$(mktemp -d)
SHLIB=$(mktemp -d)
mkdir -p "$ADMIN/info" "$ADMIN/updates" "$SHLIB/debian" "$SHLIB/pkg"
cp "$CHROOT/var/lib/dpkg/status" "$ADMIN/"
for f in "$CHROOT"/var/lib/dpkg/info/*; do
  case "$f" in
    *.symbols|*.shlibs|*/format) cp "$f" "$ADMIN/info/" ;;
    *.list) sed "s|^|$CHROOT|" "$f" >"$ADMIN/info/$(basename "$f")" ;;
  esac
done
cp debian/control "$SHLIB/debian/"
dpkg-deb -x "$DEB" "$SHLIB/pkg"
TRIXIE_DEPENDS=$(cd "$SHLIB" && dpkg-shlibdeps -O --admindir="$ADMIN" -l"$CHROOT/usr/lib/x86_64-linux-gnu" \
  pkg/usr/bin/rustica pkg/usr/lib/x86_64-linux-gnu/ossl-modules/rustica.so 2>/dev/null | sed -n 's/^shlibs:Depends=//p')
rm -rf "$ADMIN" "$SHLIB"
say "built on Debian 13, dh_shlibdeps would compute: Depends: $TRIXIE_DEPENDS"
case "$TRIXIE_DEPENDS" in *libssl3t64*) ;; *) fail "trixie's symbols files did not give libssl3t64" ;; esac
# A previous run's leftovers go first.
in_chroot 'dpkg -P rustica >/dev/null 2>&1 || true; rm -rf /root/rustica-test /etc/ssl/openssl-rustica.cnf'
mkdir -p "$CHROOT/root/rustica-test"
cp "$DEB" "$CHROOT/root/rustica-test/rustica.deb"
trap 'in_chroot "dpkg -P rustica >/dev/null 2>&1 || true; rm -rf /root/rustica-test /etc/ssl/openssl-rustica.cnf" || true' EXIT

say "dpkg -i $(basename "$DEB") (Depends: $(dpkg-deb -f "$DEB" Depends))"
in_chroot 'dpkg -i /root/rustica-test/rustica.deb' >"$CACHE/trixie-install.log" 2>&1 \
  || { cat "$CACHE/trixie-install.log" >&2; fail "dpkg -i failed on trixie"; }
grep "rustica config --out /etc/ssl/openssl-rustica.cnf" "$CACHE/trixie-install.log" >/dev/null \
  || { cat "$CACHE/trixie-install.log" >&2; fail "postinst did not recommend /etc/ssl/openssl-rustica.cnf"; }

say "rustica config and rustica doctor with trixie's OpenSSL"
in_chroot '
  cd /root/rustica-test
  rustica config --out /etc/ssl/openssl-rustica.cnf
  OPENSSL_CONF=/etc/ssl/openssl-rustica.cnf RUSTICA_STATS_PATH=/root/rustica-test/doctor-stats rustica doctor
' 2>&1 | tee "$CACHE/trixie-doctor.log" | sed 's/^/test-trixie:   /' >&2
grep "^ok    signature" "$CACHE/trixie-doctor.log" >/dev/null || fail "rustica doctor did not pass on trixie"
grep "^ok    openssl: OpenSSL 3.5" "$CACHE/trixie-doctor.log" >/dev/null || fail "rustica doctor did not run on OpenSSL 3.5"

say "a signature through /etc/ssl/openssl-rustica.cnf, counted by rustica"
in_chroot '
  cd /root/rustica-test
  export RUSTICA_STATS_PATH=/root/rustica-test/stats
  OPENSSL_CONF=/dev/null openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out key.pem 2>/dev/null
  echo "rustica on trixie" >doc.txt
  rustica stats --reset >/dev/null
  OPENSSL_CONF=/etc/ssl/openssl-rustica.cnf openssl dgst -sha256 -sign key.pem -out doc.sig doc.txt
  OPENSSL_CONF=/dev/null openssl pkey -in key.pem -pubout -out pub.pem
  OPENSSL_CONF=/dev/null openssl dgst -sha256 -verify pub.pem -signature doc.sig doc.txt
  rustica stats --json >stats.json
' >"$CACHE/trixie-sign.log" 2>&1 || { cat "$CACHE/trixie-sign.log" >&2; fail "signing on trixie failed"; }
grep "Verified OK" "$CACHE/trixie-sign.log" >/dev/null || fail "the default provider does not verify the signature"
signed=$(python3 -c '
import json, sys
s = json.load(open(sys.argv[1]))["ops"]["sign"]
print(s["libica"] + s["software"] + s["fallback"])' "$CHROOT/root/rustica-test/stats.json")
[ "$signed" = 1 ] || fail "rustica counted $signed signatures on trixie, expected 1"
say "rustica counted the signature (sign: $(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["ops"]["sign"])' "$CHROOT/root/rustica-test/stats.json"))"

say "dpkg -r warns about /etc/ssl/openssl-rustica.cnf; dpkg -P leaves no packaged file"
dpkg-deb -c "$DEB" | awk '{print $6}' | sed 's|^\./|/|' | grep -v '/$' >"$CACHE/trixie-files"
in_chroot 'dpkg -r rustica' >"$CACHE/trixie-remove.log" 2>&1 || { cat "$CACHE/trixie-remove.log" >&2; fail "dpkg -r failed"; }
grep "WARNING: /etc/ssl/openssl-rustica.cnf still loads rustica" "$CACHE/trixie-remove.log" >/dev/null \
  || { cat "$CACHE/trixie-remove.log" >&2; fail "dpkg -r did not warn about the configuration"; }
in_chroot 'dpkg -P rustica >/dev/null'
left=$(while read -r f; do [ ! -e "$CHROOT$f" ] || echo "$f"; done <"$CACHE/trixie-files")
[ -z "$left" ] || fail "files left on trixie after removal: $left"
say "OK: installed on Debian $(cat "$CHROOT/etc/debian_version") with $(in_chroot 'openssl version' | awk '{print $1, $2}'), doctor passed, a counted signature, removed cleanly"
