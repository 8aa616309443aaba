#!/usr/bin/env bash
# scripts/coverage.sh: measures which programs on this host actually do
# their RSA through rustica when it is configured the system-wide way.
#
# For every program and operation below it resets a private rustica
# counters file, runs the operation once with OPENSSL_CONF pointing at an
# openssl.cnf that loads rustica with `default_properties =
# ?provider=rustica` (written by `rustica config`, merged with the
# system's), reads the counters again and records whether rustica counted
# the operation. It prints a markdown table: program, operation, counted by
# rustica (yes / no / not measured), the counter delta, whether rustica.so
# was loaded into the program at all (LD_DEBUG=files), and why for a "no".
#
#   one-shot commands: openssl (genpkey, req -x509, dgst -sign/-verify,
#     pkeyutl -encrypt/-decrypt, s_client), ssh-keygen (-t rsa, -Y sign,
#     -Y verify), DNSSEC zone signing with RSASHA256 keys (BIND's
#     dnssec-keygen, dnssec-signzone and dnssec-verify; PowerDNS's pdnsutil
#     test-algorithm 8, which makes a key, signs and verifies; a zone in
#     PowerDNS's SQLite backend: a KSK by pdnsutil add-zone-key, and
#     pdns_server's signed answer to a query with the DO bit),
#     pyca/cryptography through Debian's python3-cryptography
#     (keygen, sign, verify, encrypt, decrypt), curl and Python's ssl module
#     as TLS clients (verify: the server certificate's signature by the
#     test CA and the server's handshake signature);
#   servers, on 127.0.0.1, random free high ports, started here and
#     stopped on exit: openssl s_server, Python ssl, nginx, apache2,
#     haproxy, stunnel4, postfix smtpd (STARTTLS; once as Debian's
#     master.cf runs it, chrooted, once not), sshd (host key signature,
#     user key verification; the ssh client's side is measured too).
#     Each TLS server is handshaken three times by a stock `openssl
#     s_client` that does not load rustica: TLS 1.3 (server signs),
#     TLS 1.2 ECDHE-RSA (server signs), TLS 1.2 AES128-SHA256 (RSA key
#     exchange: server decrypts).
#
# Counters of daemons: a root process cannot use a counters file owned by
# another user, nor the reverse (rustica checks the owner), and the file is
# opened at the first count. nginx (`user root`), haproxy and stunnel (no
# user switch), sshd (the monitor signs) and the Python / openssl servers
# therefore run their TLS work as root and count in root-owned files.
# apache2 (workers as www-data, it refuses to run them as root) and
# postfix smtpd (runs as postfix) count in a file of their own user, in a
# directory owned by that user, created (and checked to count) by that
# user before the daemon starts; root processes of those daemons (the
# apache2 parent, postfix master) do no handshakes. The counters are read
# and reset as that user. The chrooted smtpd gets its counters file inside
# its jail (RUSTICA_STATS_PATH is then the path inside the jail).
#
# Usage (as root, Debian 12 or 13; installs missing packages with apt-get;
# scripts/coverage-trixie.sh runs it in a Debian 13 chroot):
#   scripts/coverage.sh [--module PATH] [--rustica PATH] [--out FILE]
#                       [--no-install] [--keep] [--check]
#   --module   rustica.so to load  [default: target/release/rustica.so]
#   --rustica  the rustica command [default: target/release/rustica]
#              (when both defaults are missing, scripts/build.sh builds them)
#   --out      also write the table (with its header lines) to FILE
#   --no-install  do not apt-get install missing programs (their rows then
#              say "not measured")
#   --keep     keep the work directory (configs, logs, LD_DEBUG output)
#   --check    compare the table with this release's in docs/system-wide.md
#              (scripts/coverage-check.py): exit 1 when a row changed
#
# Exit status: 0 when every row was measured, whatever it says (a program
# rustica does not serve is a result, not a failure); 1 when some row could
# not be measured, or with --check when a row differs from the documented
# one; 2 when nothing could be measured (no root, rustica not
# loading or not counting, bad options).
#
# Python: Debian's /usr/bin/python3 is used on purpose; a python3 earlier in
# PATH (pyenv, a venv) may carry a pip wheel of cryptography that bundles
# its own libcrypto instead of the system's libssl3.
# shellcheck source-path=SCRIPTDIR source-path=.
. "$(dirname "$0")/lib/common.sh"
caller=$OLDPWD # where relative --module, --rustica and --out paths start
module=""
rustica=""
out=""
install=1
keep=0
check=0
PY=/usr/bin/python3

while [ $# -gt 0 ]; do
    case $1 in
    --module) module=${2:?--module needs a path}; shift 2 ;;
    --module=*) module=${1#*=}; shift ;;
    --rustica) rustica=${2:?--rustica needs a path}; shift 2 ;;
    --rustica=*) rustica=${1#*=}; shift ;;
    --out) out=${2:?--out needs a file}; shift 2 ;;
    --out=*) out=${1#*=}; shift ;;
    --no-install) install=0; shift ;;
    --keep) keep=1; shift ;;
    --check) check=1; shift ;;
    -h | --help) usage; exit 0 ;;
    *) usage >&2; die "unknown option: $1" ;;
    esac
done
for v in module rustica out; do
    case ${!v} in '' | /*) ;; *) printf -v "$v" '%s/%s' "$caller" "${!v}" ;; esac
done

[ "$(id -u)" = 0 ] || die "run as root (it starts daemons on loopback and switches users)"

if [ -z "$module" ] && [ -z "$rustica" ] &&
    { [ ! -e "$repo/target/release/rustica.so" ] || [ ! -e "$repo/target/release/rustica" ]; }; then
    say "no release build in target/release; running scripts/build.sh"
    "$repo/scripts/build.sh" >&2
fi
module=${module:-$repo/target/release/rustica.so}
rustica=${rustica:-$repo/target/release/rustica}
[ -f "$module" ] || die "module not found: $module"
[ -x "$rustica" ] || die "rustica command not found: $rustica"
module=$(realpath "$module")
rustica=$(realpath "$rustica")
modbase=$(basename "$module")

# --- programs -------------------------------------------------------------
# command (or test) -> Debian package
declare -A pkg_of=(
    [openssl]=openssl [curl]=curl [nginx]=nginx-light [apache2]=apache2
    [haproxy]=haproxy [stunnel4]=stunnel4 [ssh-keygen]=openssh-client
    [ssh]=openssh-client [/usr/sbin/sshd]=openssh-server [postfix]=postfix
    [nm]=binutils [setpriv]=util-linux [ss]=iproute2 [$PY]=python3
    [dnssec-signzone]=bind9-utils [pdnsutil]=pdns-server
)
have() { command -v "$1" >/dev/null 2>&1; }
pyca_ok() { [ -x "$PY" ] && "$PY" -c 'import cryptography, sys; sys.exit(not cryptography.__file__.startswith("/usr/lib/python3/"))' 2>/dev/null; }
missing=()
for c in "${!pkg_of[@]}"; do have "$c" || missing+=("${pkg_of[$c]}"); done
pyca_ok || missing+=(python3-cryptography)
dpkg-query -W -f='${Status}' pdns-backend-sqlite3 2>/dev/null | grep -q ' installed$' || missing+=(pdns-backend-sqlite3)
if [ ${#missing[@]} -gt 0 ]; then
    mapfile -t missing < <(printf '%s\n' "${missing[@]}" | sort -u)
    if [ "$install" = 1 ]; then
        say "installing ${missing[*]}"
        # Keep the packages' own services (apache2 on :80, ...) from being
        # started by the installation, unless the host already decides that.
        made_policy=0
        if [ ! -e /usr/sbin/policy-rc.d ]; then
            printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
            chmod 755 /usr/sbin/policy-rc.d
            made_policy=1
        fi
        echo "postfix postfix/main_mailer_type select No configuration" | debconf-set-selections
        echo "postfix postfix/mailname string localhost" | debconf-set-selections
        rc=0
        { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
            --no-install-recommends "${missing[@]}"; } >&2 || rc=$?
        [ "$made_policy" = 1 ] && rm -f /usr/sbin/policy-rc.d
        [ "$rc" = 0 ] || say "apt-get failed ($rc); measuring what is there"
    else
        say "not installed (--no-install): ${missing[*]}"
    fi
fi
have openssl || die "the openssl command is needed"
have setpriv || die "setpriv (util-linux) is needed"
have ss || die "ss (iproute2) is needed"
[ -x "$PY" ] || die "$PY is needed"

# --- work directory, config, PKI ----------------------------------------------
W=$(mktemp -d /tmp/rustica-coverage.XXXXXXXX)
chmod 711 "$W" # daemons' users reach their own counters directory below
mkdir -p "$W/logs" "$W/ld" "$W/stats" "$W/pki" "$W/py"
chmod 700 "$W/logs" "$W/ld" "$W/stats"
pids=()      # background processes started here, killed on exit
postfixes=() # postfix config directories started here
made_run_sshd=0
# shellcheck disable=SC2317 # called by the EXIT trap
cleanup() {
    local p d
    for d in "${postfixes[@]}"; do postfix -c "$d" stop >/dev/null 2>&1 || true; done
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    for p in "${pids[@]}"; do
        for _ in 1 2 3 4 5 6 7 8 9 10; do kill -0 "$p" 2>/dev/null || break; sleep 0.2; done
        kill -9 "$p" 2>/dev/null || true
    done
    [ "$made_run_sshd" = 1 ] && rmdir /run/sshd 2>/dev/null
    if [ "$keep" = 1 ]; then say "work directory kept: $W"; else rm -rf "$W"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Which provider an RSA signature fetch with a given property query gets.
cat >"$W/py/propq.py" <<'EOF'
import ctypes, sys
c = ctypes.CDLL("libcrypto.so.3")
c.OPENSSL_init_crypto(ctypes.c_uint64(0x40), None)  # OPENSSL_INIT_LOAD_CONFIG
c.EVP_SIGNATURE_fetch.restype = ctypes.c_void_p
c.EVP_SIGNATURE_get0_provider.restype = ctypes.c_void_p
c.EVP_SIGNATURE_get0_provider.argtypes = [ctypes.c_void_p]
c.OSSL_PROVIDER_get0_name.restype = ctypes.c_char_p
c.OSSL_PROVIDER_get0_name.argtypes = [ctypes.c_void_p]
s = c.EVP_SIGNATURE_fetch(None, b"RSA", sys.argv[1].encode())
print(c.OSSL_PROVIDER_get0_name(c.EVP_SIGNATURE_get0_provider(s)).decode() if s else "no")
EOF

cnf=$W/openssl.cnf
"$rustica" config --module "$module" --out "$cnf" >"$W/logs/rustica-config.log" 2>&1 ||
    die "rustica config failed: $(tail -1 "$W/logs/rustica-config.log")"
chmod 644 "$cnf"
plain=$W/plain.cnf # what the peers of the measured programs use: no rustica
printf '# empty: OpenSSL defaults, no provider configuration (no rustica)\n' >"$plain"
chmod 644 "$plain"

P=$W/pki
pl() { OPENSSL_CONF=$plain openssl "$@"; }
{
    pl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$P/ca.key"
    pl req -x509 -new -key "$P/ca.key" -subj "/CN=rustica coverage test CA" -days 2 \
        -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign -out "$P/ca.pem"
    pl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$P/leaf.key"
    pl req -new -key "$P/leaf.key" -subj /CN=localhost -out "$P/leaf.csr"
    printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\nbasicConstraints=CA:FALSE\n' >"$P/leaf.ext"
    pl x509 -req -in "$P/leaf.csr" -CA "$P/ca.pem" -CAkey "$P/ca.key" -CAcreateserial -days 2 \
        -extfile "$P/leaf.ext" -out "$P/leaf.pem"
    cat "$P/leaf.pem" "$P/leaf.key" >"$P/leaf-combined.pem"
    pl pkey -in "$P/leaf.key" -pubout -out "$P/leaf.pub"
} >"$W/logs/pki.log" 2>&1 || die "could not make the test certificates: $(tail -1 "$W/logs/pki.log")"
chmod 600 "$P"/*.key "$P/leaf-combined.pem"
chmod 711 "$P"

# --- measuring (scripts/lib/coverage/measure.sh) -----------------------------------
# shellcheck source=scripts/lib/coverage/measure.sh
. "$repo/scripts/lib/coverage/measure.sh"
cli=$W/stats/cli # one-shot commands and clients, root
prime "$cli" root

# --- the programs (scripts/lib/coverage/), in this order: the openssl
# command's rows come first, as they check that the set-up counts at all and
# start the TLS peer that the clients' rows use.
# shellcheck source=scripts/lib/coverage/commands.sh
. "$repo/scripts/lib/coverage/commands.sh"
# shellcheck source=scripts/lib/sshd-config.sh
. "$repo/scripts/lib/sshd-config.sh"
# shellcheck source=scripts/lib/coverage/openssh.sh
. "$repo/scripts/lib/coverage/openssh.sh"
# shellcheck source=scripts/lib/coverage/dnssec.sh
. "$repo/scripts/lib/coverage/dnssec.sh"
# shellcheck source=scripts/lib/coverage/servers.sh
. "$repo/scripts/lib/coverage/servers.sh"

# --- the table -----------------------------------------------------------------------------------
{
    echo "Measured $(date -u +%Y-%m-%d) on $(. /etc/os-release && echo "$PRETTY_NAME"), $(uname -m), $(openssl version),"
    echo "rustica $("$rustica" --version 2>/dev/null | awk '{print $2}') ($module), by \`scripts/coverage.sh\`."
    echo
    echo "| program | operation | counted by rustica | counter delta | rustica.so loaded | why not |"
    echo "|---|---|---|---|---|---|"
    printf '%s\n' "${rows[@]}"
} >"$W/table.md"
cat "$W/table.md"
[ -z "$out" ] || cp "$W/table.md" "$out"
if [ "$unmeasured" -gt 0 ]; then
    say "$unmeasured row(s) could not be measured"
    exit 1
fi
if [ "$check" = 1 ]; then
    "$PY" "$repo/scripts/coverage-check.py" --release "$(. /etc/os-release && echo "$VERSION_ID")" \
        --doc "$repo/docs/system-wide.md" "$W/table.md" || exit 1
fi
exit 0
