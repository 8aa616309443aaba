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
#     test-algorithm 8, which makes a key, signs and verifies), pyca/cryptography through Debian's python3-cryptography
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
# Usage (as root, Debian 12; installs missing packages with apt-get):
#   scripts/coverage.sh [--module PATH] [--rustica PATH] [--out FILE]
#                       [--no-install] [--keep]
#   --module   rustica.so to load  [default: target/release/rustica.so]
#   --rustica  the rustica command [default: target/release/rustica]
#              (when both defaults are missing, scripts/build.sh builds them)
#   --out      also write the table (with its header lines) to FILE
#   --no-install  do not apt-get install missing programs (their rows then
#              say "not measured")
#   --keep     keep the work directory (configs, logs, LD_DEBUG output)
#
# Exit status: 0 when every row was measured, whatever it says (a program
# rustica does not serve is a result, not a failure); 1 when some row could
# not be measured; 2 when nothing could be measured (no root, rustica not
# loading or not counting, bad options).
#
# Python: Debian's /usr/bin/python3 is used on purpose; a python3 earlier in
# PATH (pyenv, a venv) may carry a pip wheel of cryptography that bundles
# its own libcrypto instead of the system's libssl3.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
module=""
rustica=""
out=""
install=1
keep=0
PY=/usr/bin/python3

usage() { sed -n '/^# Usage/,/^#   --keep/p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }
die() { echo "coverage.sh: $*" >&2; exit 2; }

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
    -h | --help) usage; exit 0 ;;
    *) usage >&2; die "unknown option: $1" ;;
    esac
done

[ "$(id -u)" = 0 ] || die "run as root (it starts daemons on loopback and switches users)"

if [ -z "$module" ] && [ -z "$rustica" ] &&
    { [ ! -e "$repo/target/release/rustica.so" ] || [ ! -e "$repo/target/release/rustica" ]; }; then
    echo "coverage.sh: no release build in target/release; running scripts/build.sh" >&2
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
if [ ${#missing[@]} -gt 0 ]; then
    mapfile -t missing < <(printf '%s\n' "${missing[@]}" | sort -u)
    if [ "$install" = 1 ]; then
        echo "coverage.sh: installing ${missing[*]}" >&2
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
        [ "$rc" = 0 ] || echo "coverage.sh: apt-get failed ($rc); measuring what is there" >&2
    else
        echo "coverage.sh: not installed (--no-install): ${missing[*]}" >&2
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
    if [ "$keep" = 1 ]; then echo "coverage.sh: work directory kept: $W" >&2; else rm -rf "$W"; fi
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

# --- counters ---------------------------------------------------------------------
as_user() { # USER CMD...: run CMD as USER (root: as is)
    local u=$1
    shift
    if [ "$u" = root ]; then "$@"; else setpriv --reuid="$u" --regid="$(id -g "$u")" --clear-groups "$@"; fi
}
# Prints "keygen sign verify encrypt decrypt" completed counts, then the
# same five for failed operations.
snap() { # FILE USER
    as_user "$2" "$rustica" stats --json --path "$1" | "$PY" -c '
import json, sys
ops = json.load(sys.stdin)["ops"]
names = ("keygen", "sign", "verify", "encrypt", "decrypt")
done = [ops[n]["libica"] + ops[n]["software"] + ops[n]["fallback"] for n in names]
print(*done, *[ops[n]["failed"] for n in names])'
}
reset() { as_user "$2" "$rustica" stats --reset --path "$1" >/dev/null; }
# Creates FILE as USER by having that user's openssl count a key generation
# through rustica (the file is created at the first count), then zeroes it.
prime() { # FILE USER
    local f=$1 u=$2 s
    as_user "$u" env OPENSSL_CONF="$cnf" RUSTICA_STATS_PATH="$f" \
        openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:1024 -out /dev/null \
        >>"$W/logs/prime.log" 2>&1 || die "openssl as $u failed with the rustica config (see $W/logs/prime.log)"
    s=$(snap "$f" "$u") || die "cannot read $f as $u"
    [ "${s%% *}" -ge 1 ] || die "rustica did not count a key generation by $u in $f: the config does not route RSA to rustica"
    reset "$f" "$u"
}
user_dir() { # USER PATH: a directory owned by USER, for USER's counters file
    mkdir -m 700 "$2"
    chown "$1:$(id -g "$1")" "$2"
}
opnames=(keygen sign verify encrypt decrypt)
opindex() { case $1 in keygen) echo 0 ;; sign) echo 1 ;; verify) echo 2 ;; encrypt) echo 3 ;; decrypt) echo 4 ;; esac; }

cli=$W/stats/cli # one-shot commands and clients, root
prime "$cli" root

# --- results ---------------------------------------------------------------------------
rows=()
unmeasured=0
add_row() { # PROGRAM OPERATION COUNTED DELTA LOADED WHY
    rows+=("| $1 | $2 | $3 | $4 | $5 | $6 |")
    [ "$3" != "not measured" ] || unmeasured=$((unmeasured + 1))
    echo "coverage.sh: $1: $2: $3 ($4)" >&2
}
not_measured() { add_row "$1" "$2" "not measured" "" "" "$3"; }
# LD_DEBUG=files output under PREFIX.* shows whether rustica.so was loaded.
loaded() { # PREFIX
    if grep -qs "file=.*$modbase .*dynamically loaded" "$1".*; then echo yes; else echo no; fi
}
delta_text() { # BEFORE AFTER
    local -a b a
    read -ra b <<<"$1"
    read -ra a <<<"$2"
    local i d t=""
    for i in 0 1 2 3 4; do
        d=$((a[i] - b[i]))
        [ "$d" = 0 ] || t+="${t:+, }${opnames[i]} +$d"
        d=$((a[i + 5] - b[i + 5]))
        [ "$d" = 0 ] || t+="${t:+, }${opnames[i]} failed +$d"
    done
    echo "${t:-none}"
}
judge() { # PROGRAM OPERATION OP BEFORE AFTER LOADED WHY-IF-NO
    local -a b a
    read -ra b <<<"$4"
    read -ra a <<<"$5"
    local i
    i=$(opindex "$3")
    local d=$((a[i] - b[i])) f=$((a[i + 5] - b[i + 5])) why=$7
    if [ "$d" -gt 0 ]; then
        add_row "$1" "$2" yes "$(delta_text "$4" "$5")" "$6" ""
    elif [ "$f" -gt 0 ]; then
        add_row "$1" "$2" "yes (failed in rustica)" "$(delta_text "$4" "$5")" "$6" "the program succeeded but rustica counted the $3 as failed"
    else
        if [ -z "$why" ]; then
            if [ "$6" = no ]; then why="rustica.so was never loaded by this program"; else why="unexplained: rustica was loaded but not asked for this $3"; fi
        elif [ "${6%% *}" = no ]; then
            why="rustica.so not even loaded (the program never made libcrypto read openssl.cnf); and: $why"
        fi
        add_row "$1" "$2" no "$(delta_text "$4" "$5")" "$6" "$why"
    fi
}
n=0
# One command, run with the rustica config and the root counters file.
run_one() { # PROGRAM OPERATION OP WHY-IF-NO CMD...
    local prog=$1 label=$2 op=$3 why=$4
    shift 4
    n=$((n + 1))
    local log=$W/logs/$n.log ld=$W/ld/$n b a rc=0
    reset "$cli" root
    b=$(snap "$cli" root)
    env OPENSSL_CONF="$cnf" RUSTICA_STATS_PATH="$cli" LD_DEBUG=files LD_DEBUG_OUTPUT="$ld" \
        timeout 120 "$@" >"$log" 2>&1 </dev/null || rc=$?
    a=$(snap "$cli" root)
    if [ "$rc" != 0 ]; then
        not_measured "$prog" "$label" "the command failed (exit $rc): $(tail -1 "$log" | tr '|' '/')"
        return 0
    fi
    judge "$prog" "$label" "$op" "$b" "$a" "$(loaded "$ld")" "$why"
}

free_port() { "$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
# Waits until PORT listens on 127.0.0.1; fails when PID exits first or
# after 20 s.
wait_port() { # PORT [PID]
    local i
    for i in $(seq 200); do
        [ -z "$(ss -Hltn "sport = :$1")" ] || return 0
        if [ -n "${2:-}" ] && ! kill -0 "$2" 2>/dev/null; then return 1; fi
        sleep 0.1
    done
    return 1
}
# The three TLS handshakes against a server that counts in FILE as USER;
# the client is a stock openssl s_client without rustica.
tls_server_rows() { # PROGRAM PORT FILE USER LDPREFIX WHY-IF-NO [STARTTLS]
    local prog=$1 port=$2 f=$3 u=$4 ld=$5 why=$6 starttls=${7:-}
    local v label op expect b a log
    local -a args
    for v in tls13 ecdhe rsakx; do
        case $v in
        tls13) label="sign (TLS 1.3 handshake)" op=sign expect="TLS_AES_" args=(-tls1_3) ;;
        ecdhe) label="sign (TLS 1.2 ECDHE-RSA)" op=sign expect=ECDHE-RSA-AES128-GCM-SHA256
            args=(-tls1_2 -cipher ECDHE-RSA-AES128-GCM-SHA256) ;;
        rsakx) label="decrypt (TLS 1.2 RSA key exchange, AES128-SHA256)" op=decrypt expect=AES128-SHA256
            args=(-tls1_2 -cipher AES128-SHA256) ;;
        esac
        [ -z "$starttls" ] || args+=(-starttls "$starttls")
        n=$((n + 1))
        log=$W/logs/$n.log
        reset "$f" "$u"
        b=$(snap "$f" "$u")
        OPENSSL_CONF=$plain timeout 30 openssl s_client -brief -connect "127.0.0.1:$port" \
            -servername localhost -CAfile "$P/ca.pem" -verify_return_error -verify_hostname localhost \
            "${args[@]}" </dev/null >"$log" 2>&1 || true
        sleep 0.3
        a=$(snap "$f" "$u")
        if ! grep -q "^Ciphersuite: $expect" "$log" || ! grep -q "^Verification: OK" "$log"; then
            not_measured "$prog" "$label" "the handshake did not complete as $expect: $(grep -m1 -iE 'error|alert' "$log" | tr '|' '/' || echo 'see log')"
            continue
        fi
        judge "$prog" "$label" "$op" "$b" "$a" "$(loaded "$ld")" "$why"
    done
}
# Starts CMD in the background with the rustica config, counters FILE and
# LD_DEBUG output under LDPREFIX (none when LDPREFIX is "-"); sets
# $started to its pid.
start_bg() { # LOG FILE LDPREFIX CMD...
    local log=$1 f=$2 ld=$3
    shift 3
    local -a dbg=(LD_DEBUG=files LD_DEBUG_OUTPUT="$ld")
    [ "$ld" != - ] || dbg=()
    env OPENSSL_CONF="$cnf" RUSTICA_STATS_PATH="$f" "${dbg[@]}" "$@" >"$log" 2>&1 </dev/null &
    started=$!
    pids+=("$started")
}
# Whether rustica.so is mapped into running process PID.
mapped() { # PID
    if grep -qsF "/$modbase" "/proc/$1/maps"; then echo yes; else echo no; fi
}
# A "why" for a program that loaded rustica and still did not use it: a
# property query of its own that names the provider replaces the
# `?provider=rustica` of default_properties (a query's provider clause wins
# over the default one), so the default provider serves it.
propq_why() { # BINARY
    local q
    q=$(strings "$1" 2>/dev/null | grep -E '^\??provider *(!=|=)' | sort -u | head -3 | tr '\n' ' ' || true)
    [ -n "$q" ] || return 0
    q=${q%% *}
    # What that query selects with this configuration.
    local got
    got=$(OPENSSL_CONF=$cnf "$PY" "$W/py/propq.py" "$q" 2>/dev/null || echo "(probe failed)")
    echo "its own property query: $(basename "$1") contains \`$q\` (and gives it to SSL_CTX_new_ex); a query that names \`provider\` overrides \`?provider=rustica\` from default_properties: with this openssl.cnf, EVP_SIGNATURE_fetch(RSA, \"$q\") gets the $got provider's RSA"
}
server_unmeasured() { # PROGRAM WHY
    local l
    for l in "sign (TLS 1.3 handshake)" "sign (TLS 1.2 ECDHE-RSA)" "decrypt (TLS 1.2 RSA key exchange, AES128-SHA256)"; do
        not_measured "$1" "$l" "$2"
    done
}
pkgver() { dpkg-query -W -f='${Version}' "$1" 2>/dev/null | sed 's/^[0-9]*://' || true; }

# --- the openssl command -----------------------------------------------------------
ossl="openssl $(openssl version | awk '{print $2}')"
D=$W/data
mkdir -p "$D"
head -c 3145728 /dev/urandom >"$D/doc.bin"
run_one "$ossl" "keygen (genpkey RSA 2048)" keygen "" openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$D/k.pem"
run_one "$ossl" "sign (req -x509 -key)" sign "" openssl req -x509 -new -key "$P/leaf.key" -subj /CN=x -days 1 -out "$D/self.pem"
run_one "$ossl" "sign (dgst -sha256 -sign)" sign "" openssl dgst -sha256 -sign "$P/leaf.key" -out "$D/doc.sig" "$D/doc.bin"
run_one "$ossl" "verify (dgst -sha256 -verify)" verify "" openssl dgst -sha256 -verify "$P/leaf.pub" -signature "$D/doc.sig" "$D/doc.bin"
printf 'secret\n' >"$D/secret"
run_one "$ossl" "encrypt (pkeyutl -encrypt, OAEP)" encrypt "" openssl pkeyutl -encrypt -pubin -inkey "$P/leaf.pub" -pkeyopt rsa_padding_mode:oaep -in "$D/secret" -out "$D/secret.enc"
run_one "$ossl" "decrypt (pkeyutl -decrypt, OAEP)" decrypt "" openssl pkeyutl -decrypt -inkey "$P/leaf.key" -pkeyopt rsa_padding_mode:oaep -in "$D/secret.enc" -out "$D/secret.dec"
if [ "$unmeasured" = 0 ] && ! printf '%s\n' "${rows[@]}" | grep -q '| yes |'; then
    die "the openssl command counted nothing through rustica: the measurement set-up is broken"
fi

# Server for the TLS client rows: stock openssl s_server without rustica,
# serving the CA-issued certificate (so a client verifies the certificate's
# signature and the handshake signature).
peer_port=$(free_port)
OPENSSL_CONF=$plain openssl s_server -accept "127.0.0.1:$peer_port" -cert "$P/leaf.pem" -key "$P/leaf.key" \
    -www -quiet >"$W/logs/peer-s_server.log" 2>&1 </dev/null &
peer=$!
pids+=("$peer")
peer_ok=1
wait_port "$peer_port" "$peer" || peer_ok=0
client_row() { # PROGRAM WHY CMD...
    local prog=$1 why=$2
    shift 2
    if [ "$peer_ok" = 1 ]; then
        run_one "$prog" "verify (TLS 1.3 client: server certificate + handshake signature)" verify "$why" "$@"
    else
        not_measured "$prog" "verify (TLS 1.3 client)" "the test server (openssl s_server) did not start"
    fi
}
client_row "$ossl" "" openssl s_client -brief -connect "127.0.0.1:$peer_port" -servername localhost \
    -CAfile "$P/ca.pem" -verify_return_error -verify_hostname localhost

f=$W/stats/s_server
prime "$f" root
port=$(free_port)
start_bg "$W/logs/s_server.log" "$f" "$W/ld/s_server" openssl s_server -accept "127.0.0.1:$port" \
    -cert "$P/leaf.pem" -key "$P/leaf.key" -cipher ECDHE-RSA-AES128-GCM-SHA256:AES128-SHA256 -www -quiet
if wait_port "$port" "$started"; then
    tls_server_rows "$ossl (s_server)" "$port" "$f" root "$W/ld/s_server" ""
else
    server_unmeasured "$ossl (s_server)" "s_server did not start: $(tail -1 "$W/logs/s_server.log")"
fi

# --- curl, Python ssl ---------------------------------------------------------------
if have curl; then
    client_row "curl $(pkgver curl)" "" curl -sS --tlsv1.3 --cacert "$P/ca.pem" \
        --resolve "localhost:$peer_port:127.0.0.1" -o /dev/null "https://localhost:$peer_port/"
else
    not_measured "curl" "verify (TLS 1.3 client)" "curl is not installed"
fi

pyv="Python $("$PY" -c 'import platform; print(platform.python_version())') ssl"
cat >"$W/py/client.py" <<'EOF'
import socket, ssl, sys
ca, port = sys.argv[1], int(sys.argv[2])
ctx = ssl.create_default_context(cafile=ca)
with socket.create_connection(("127.0.0.1", port)) as s:
    with ctx.wrap_socket(s, server_hostname="localhost") as t:
        print(t.version(), t.cipher()[0])
EOF
cat >"$W/py/server.py" <<'EOF'
import socket, ssl, sys
cert, key, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.minimum_version = ssl.TLSVersion.TLSv1_2
ctx.set_ciphers("ECDHE-RSA-AES128-GCM-SHA256:AES128-SHA256")
ctx.load_cert_chain(cert, key)
srv = socket.socket()
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("127.0.0.1", port))
srv.listen(8)
while True:
    c, _ = srv.accept()
    try:
        with ctx.wrap_socket(c, server_side=True) as t:
            t.sendall(b"ok\n")
    except (ssl.SSLError, OSError):
        pass
    finally:
        c.close()
EOF
client_row "$pyv (client)" "" "$PY" "$W/py/client.py" "$P/ca.pem" "$peer_port"
f=$W/stats/python-server
prime "$f" root
port=$(free_port)
start_bg "$W/logs/python-server.log" "$f" "$W/ld/python-server" "$PY" "$W/py/server.py" "$P/leaf.pem" "$P/leaf.key" "$port"
if wait_port "$port" "$started"; then
    tls_server_rows "$pyv (server)" "$port" "$f" root "$W/ld/python-server" ""
else
    server_unmeasured "$pyv (server)" "the Python server did not start: $(tail -1 "$W/logs/python-server.log")"
fi

# --- pyca/cryptography (Debian's, on the system libssl3) ------------------------------
pyca="pyca/cryptography $(pkgver python3-cryptography)"
cat >"$W/py/pyca.py" <<'EOF'
import sys
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa
from cryptography.hazmat.backends.openssl.backend import backend
op, key, pub, d = sys.argv[1:5]
print("cryptography's libcrypto:", backend.openssl_version_text())
pss = padding.PSS(mgf=padding.MGF1(hashes.SHA256()), salt_length=padding.PSS.MAX_LENGTH)
oaep = padding.OAEP(mgf=padding.MGF1(hashes.SHA256()), algorithm=hashes.SHA256(), label=None)
priv = lambda: serialization.load_pem_private_key(open(key, "rb").read(), None)
public = lambda: serialization.load_pem_public_key(open(pub, "rb").read())
if op == "keygen":
    rsa.generate_private_key(public_exponent=65537, key_size=2048)
elif op == "sign":
    open(d + "/pyca.sig", "wb").write(priv().sign(b"message", pss, hashes.SHA256()))
elif op == "verify":
    public().verify(open(d + "/pyca.sig", "rb").read(), b"message", pss, hashes.SHA256())
elif op == "encrypt":
    open(d + "/pyca.enc", "wb").write(public().encrypt(b"secret", oaep))
elif op == "decrypt":
    assert priv().decrypt(open(d + "/pyca.enc", "rb").read(), oaep) == b"secret"
EOF
if pyca_ok; then
    pyca_keygen_why="low-level RSA API: cryptography $(pkgver python3-cryptography | cut -d- -f1) generates RSA keys with RSA_generate_key_ex (hazmat/backends/openssl/backend.py), which in OpenSSL 3 never reaches a provider"
    run_one "$pyca" "keygen (rsa.generate_private_key 2048)" keygen "$pyca_keygen_why" "$PY" "$W/py/pyca.py" keygen "$P/leaf.key" "$P/leaf.pub" "$D"
    for op in sign verify encrypt decrypt; do
        case $op in sign | verify) pad=PSS ;; *) pad=OAEP ;; esac
        run_one "$pyca" "$op ($pad)" "$op" "" "$PY" "$W/py/pyca.py" "$op" "$P/leaf.key" "$P/leaf.pub" "$D"
    done
else
    for op in keygen sign verify encrypt decrypt; do not_measured "pyca/cryptography" "$op" "Debian's python3-cryptography is not installed"; done
fi

# --- OpenSSH ------------------------------------------------------------------------------
# Which RSA entry points a binary imports from libcrypto: the low-level API
# (never a provider in OpenSSL 3) against the EVP_PKEY one.
rsa_api() { # BINARY
    local low evp
    low=$(nm -D --undefined-only "$1" 2>/dev/null | awk '{print $2}' | sed 's/@.*//' |
        grep -E '^RSA_(generate_key_ex|sign|verify|public_decrypt|private_encrypt|private_decrypt|public_encrypt)$' | sort -u | tr '\n' ' ' || true)
    evp=$(nm -D --undefined-only "$1" 2>/dev/null | awk '{print $2}' | sed 's/@.*//' |
        grep -cE '^(EVP_PKEY_(sign|verify|keygen|decrypt|encrypt)|EVP_Digest(Sign|Verify)(Init_ex)?)$' || true)
    if [ -n "$low" ]; then
        low=${low% }
        [ "$evp" = 0 ] && evp="no" || evp="also $evp"
        echo "low-level RSA API: $(basename "$1") imports ${low// /, } and $evp EVP signing, verifying or key-generation function; in OpenSSL 3 that API runs libcrypto's own RSA code and never reaches a provider"
    else
        echo "unexplained: $(basename "$1") imports no low-level RSA function"
    fi
}
sshv="OpenSSH $(pkgver openssh-client)"
S=$W/ssh
mkdir -m 700 "$S"
if have ssh-keygen; then
    why=$(rsa_api "$(command -v ssh-keygen)")
    run_one "$sshv (ssh-keygen)" "keygen (-t rsa -b 2048)" keygen "$why" ssh-keygen -q -t rsa -b 2048 -N '' -C coverage -f "$S/id_rsa"
    if [ -f "$S/id_rsa" ]; then
        printf 'message\n' >"$D/ssh.msg"
        run_one "$sshv (ssh-keygen)" "sign (-Y sign)" sign "$why" ssh-keygen -Y sign -f "$S/id_rsa" -n file "$D/ssh.msg"
        printf 'coverage %s\n' "$(cat "$S/id_rsa.pub")" >"$S/allowed_signers"
        if [ -f "$D/ssh.msg.sig" ]; then
            # shellcheck disable=SC2016 # expanded by that sh
            run_one "$sshv (ssh-keygen)" "verify (-Y verify)" verify "$why" sh -c \
                'exec ssh-keygen -Y verify -f "$1" -I coverage -n file -s "$2.sig" <"$2"' sh "$S/allowed_signers" "$D/ssh.msg"
        else
            not_measured "$sshv (ssh-keygen)" "verify (-Y verify)" "no signature to verify (-Y sign failed)"
        fi
    else
        not_measured "$sshv (ssh-keygen)" "sign (-Y sign)" "no key (keygen failed)"
        not_measured "$sshv (ssh-keygen)" "verify (-Y verify)" "no key (keygen failed)"
    fi
else
    for l in keygen sign verify; do not_measured "OpenSSH (ssh-keygen)" "$l" "ssh-keygen is not installed"; done
fi

sshd_rows_unmeasured() {
    not_measured "$sshv (sshd)" "sign (host key, key exchange)" "$1"
    not_measured "$sshv (sshd)" "verify (user key, publickey auth)" "$1"
    not_measured "$sshv (ssh client)" "verify (server host key)" "$1"
    not_measured "$sshv (ssh client)" "sign (publickey auth)" "$1"
}
if [ -x /usr/sbin/sshd ] && have ssh && [ -f "$S/id_rsa" ]; then
    OPENSSL_CONF=$plain ssh-keygen -q -t rsa -b 2048 -N '' -f "$S/host_rsa"
    cp "$S/id_rsa.pub" "$S/authorized_keys"
    port=$(free_port)
    cat >"$S/sshd_config" <<EOF
Port $port
ListenAddress 127.0.0.1
HostKey $S/host_rsa
PidFile $S/sshd.pid
HostKeyAlgorithms rsa-sha2-256,rsa-sha2-512
PubkeyAcceptedAlgorithms rsa-sha2-256,rsa-sha2-512
AuthorizedKeysFile $S/authorized_keys
PermitRootLogin prohibit-password
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
PrintMotd no
LogLevel ERROR
EOF
    [ -d /run/sshd ] || { mkdir -m 755 /run/sshd && made_run_sshd=1; }
    f=$W/stats/sshd
    prime "$f" root
    # No LD_DEBUG here: sshd's pre-authentication child runs with
    # RLIMIT_FSIZE 0, and ld.so's debug output kills it (SIGXFSZ).
    start_bg "$W/logs/sshd.log" "$f" - /usr/sbin/sshd -D -e -f "$S/sshd_config"
    sshd_pid=$started
    if wait_port "$port" "$started"; then
        n=$((n + 1))
        log=$W/logs/$n.log
        reset "$f" root
        reset "$cli" root
        sb=$(snap "$f" root)
        cb=$(snap "$cli" root)
        rc=0
        env OPENSSL_CONF="$cnf" RUSTICA_STATS_PATH="$cli" LD_DEBUG=files LD_DEBUG_OUTPUT="$W/ld/ssh" \
            timeout 60 ssh -F /dev/null -o BatchMode=yes -o StrictHostKeyChecking=no \
            -o UserKnownHostsFile=/dev/null -o GlobalKnownHostsFile=/dev/null \
            -o HostKeyAlgorithms=rsa-sha2-256 -o PubkeyAcceptedAlgorithms=rsa-sha2-256 \
            -o PreferredAuthentications=publickey -o IdentitiesOnly=yes -o IdentityAgent=none \
            -i "$S/id_rsa" -p "$port" root@127.0.0.1 true >"$log" 2>&1 </dev/null || rc=$?
        sleep 0.3
        sa=$(snap "$f" root)
        ca=$(snap "$cli" root)
        if [ "$rc" = 0 ]; then
            why=$(rsa_api /usr/sbin/sshd)
            judge "$sshv (sshd)" "sign (host key, key exchange)" sign "$sb" "$sa" "$(mapped "$sshd_pid") (listener)" "$why"
            judge "$sshv (sshd)" "verify (user key, publickey auth)" verify "$sb" "$sa" "$(mapped "$sshd_pid") (listener)" "$why"
            why=$(rsa_api "$(command -v ssh)")
            judge "$sshv (ssh client)" "verify (server host key)" verify "$cb" "$ca" "$(loaded "$W/ld/ssh")" "$why"
            judge "$sshv (ssh client)" "sign (publickey auth)" sign "$cb" "$ca" "$(loaded "$W/ld/ssh")" "$why"
        else
            sshd_rows_unmeasured "ssh to the test sshd failed (exit $rc): $(tail -1 "$log" | tr '|' '/')"
        fi
    else
        sshd_rows_unmeasured "sshd did not start: $(tail -1 "$W/logs/sshd.log" | tr '|' '/')"
    fi
else
    sshd_rows_unmeasured "sshd, ssh or the ssh-keygen key is missing"
fi

# --- DNSSEC zone signing (RSASHA256) ------------------------------------------------------
# The figure DNSSEC operators quote is signatures per second per core
# (rustica lab's speed -multi columns); here: whether the signers reach
# rustica at all.
Z=$W/dnssec
mkdir -p "$Z"
bindv="BIND $(pkgver bind9-utils)"
if have dnssec-keygen && have dnssec-signzone; then
    run_one "$bindv (dnssec-keygen)" "keygen (-a RSASHA256 -b 2048 -f KSK)" keygen "" \
        dnssec-keygen -q -K "$Z" -a RSASHA256 -b 2048 -f KSK example.test
    OPENSSL_CONF=$plain dnssec-keygen -q -K "$Z" -a RSASHA256 -b 2048 example.test >/dev/null 2>&1 || true
    {
        printf '$TTL 300\n@ IN SOA ns.example.test. admin.example.test. 1 3600 600 86400 300\n'
        printf '@ IN NS ns\nns IN A 127.0.0.1\nwww IN A 127.0.0.2\n'
        for k in "$Z"/Kexample.test.*.key; do [ -e "$k" ] && echo "\$INCLUDE $k"; done
    } >"$Z/db.example.test"
    if ls "$Z"/Kexample.test.*.private >/dev/null 2>&1; then
        run_one "$bindv (dnssec-signzone)" "sign (zone, RSASHA256)" sign "" \
            dnssec-signzone -K "$Z" -d "$Z" -o example.test -f "$Z/db.example.test.signed" "$Z/db.example.test"
        if [ -s "$Z/db.example.test.signed" ]; then
            run_one "$bindv (dnssec-verify)" "verify (signed zone)" verify "" \
                dnssec-verify -o example.test "$Z/db.example.test.signed"
        else
            not_measured "$bindv (dnssec-verify)" "verify (signed zone)" "no signed zone (dnssec-signzone failed)"
        fi
    else
        not_measured "$bindv (dnssec-signzone)" "sign (zone, RSASHA256)" "no key (dnssec-keygen failed)"
        not_measured "$bindv (dnssec-verify)" "verify (signed zone)" "no key (dnssec-keygen failed)"
    fi
else
    for l in keygen sign verify; do not_measured "BIND (dnssec-keygen, dnssec-signzone)" "$l" "bind9-utils is not installed"; done
fi
pdnsv="PowerDNS $(pkgver pdns-server)"
if have pdnsutil; then
    # No backend is needed to test an algorithm: an empty launch= suffices.
    printf 'launch=\n' >"$Z/pdns.conf"
    why=$(rsa_api "$(command -v pdnsutil)")
    for op in keygen sign verify; do
        run_one "$pdnsv (pdnsutil)" "$op (test-algorithm 8: RSASHA256)" "$op" "$why" \
            pdnsutil --config-dir="$Z" test-algorithm 8
    done
else
    for l in keygen sign verify; do not_measured "PowerDNS (pdnsutil)" "$l" "pdns-server is not installed"; done
fi

# --- nginx (workers as root) --------------------------------------------------------------
if have nginx; then
    X=$W/nginx
    mkdir -p "$X"
    port=$(free_port)
    cat >"$X/nginx.conf" <<EOF
user root;
worker_processes 1;
daemon off;
pid $X/nginx.pid;
error_log $W/logs/nginx-error.log warn;
env OPENSSL_CONF;
env RUSTICA_STATS_PATH;
events { worker_connections 64; }
http {
    access_log off;
    server {
        listen 127.0.0.1:$port ssl;
        server_name localhost;
        ssl_certificate $P/leaf.pem;
        ssl_certificate_key $P/leaf.key;
        ssl_protocols TLSv1.2 TLSv1.3;
        ssl_ciphers ECDHE-RSA-AES128-GCM-SHA256:AES128-SHA256;
        location / { return 200 "ok\n"; }
    }
}
EOF
    f=$W/stats/nginx
    prime "$f" root
    start_bg "$W/logs/nginx.log" "$f" "$W/ld/nginx" nginx -e "$W/logs/nginx-error.log" -p "$X" -c "$X/nginx.conf"
    if wait_port "$port" "$started"; then
        tls_server_rows "nginx $(pkgver nginx-common)" "$port" "$f" root "$W/ld/nginx" ""
    else
        server_unmeasured "nginx" "nginx did not start: $(tail -1 "$W/logs/nginx-error.log" "$W/logs/nginx.log" 2>/dev/null | tail -1)"
    fi
else
    server_unmeasured "nginx" "nginx is not installed"
fi

# --- apache2 (workers as www-data, counting in www-data's file) ------------------------------
if have apache2; then
    A=$W/apache2
    mkdir -p "$A/run" "$A/htdocs"
    echo ok >"$A/htdocs/index.html"
    chmod -R a+rX "$A"
    port=$(free_port)
    m=/usr/lib/apache2/modules
    cat >"$A/apache2.conf" <<EOF
ServerRoot $A
DefaultRuntimeDir $A/run
PidFile $A/run/apache2.pid
Mutex posixsem
LoadModule mpm_event_module $m/mod_mpm_event.so
LoadModule authz_core_module $m/mod_authz_core.so
LoadModule ssl_module $m/mod_ssl.so
User www-data
Group www-data
ServerName localhost
Listen 127.0.0.1:$port
ErrorLog $W/logs/apache2-error.log
LogLevel warn
DocumentRoot $A/htdocs
<Directory $A/htdocs>
    Require all granted
</Directory>
SSLEngine on
SSLCertificateFile $P/leaf.pem
SSLCertificateKeyFile $P/leaf.key
SSLProtocol -all +TLSv1.2 +TLSv1.3
SSLCipherSuite ECDHE-RSA-AES128-GCM-SHA256:AES128-SHA256
EOF
    user_dir www-data "$W/stats-www-data"
    f=$W/stats-www-data/counters
    prime "$f" www-data
    start_bg "$W/logs/apache2.log" "$f" "$W/ld/apache2" apache2 -f "$A/apache2.conf" -DFOREGROUND
    if wait_port "$port" "$started"; then
        sleep 0.5 # the workers
        tls_server_rows "Apache $(pkgver apache2) mod_ssl" "$port" "$f" www-data "$W/ld/apache2" ""
    else
        server_unmeasured "apache2" "apache2 did not start: $(tail -1 "$W/logs/apache2-error.log" "$W/logs/apache2.log" 2>/dev/null | tail -1)"
    fi
else
    server_unmeasured "apache2" "apache2 is not installed"
fi

# --- haproxy (no user switch: root) ----------------------------------------------------------
if have haproxy; then
    H=$W/haproxy
    mkdir -p "$H"
    port=$(free_port)
    cat >"$H/haproxy.cfg" <<EOF
global
    maxconn 64
defaults
    mode http
    timeout connect 5s
    timeout client 10s
    timeout server 10s
frontend tls
    bind 127.0.0.1:$port ssl crt $P/leaf-combined.pem ssl-min-ver TLSv1.2 ciphers ECDHE-RSA-AES128-GCM-SHA256:AES128-SHA256
    http-request return status 200 content-type text/plain string ok
EOF
    f=$W/stats/haproxy
    prime "$f" root
    start_bg "$W/logs/haproxy.log" "$f" "$W/ld/haproxy" haproxy -db -f "$H/haproxy.cfg"
    if wait_port "$port" "$started"; then
        tls_server_rows "HAProxy $(pkgver haproxy)" "$port" "$f" root "$W/ld/haproxy" ""
    else
        server_unmeasured "haproxy" "haproxy did not start: $(tail -1 "$W/logs/haproxy.log")"
    fi
else
    server_unmeasured "haproxy" "haproxy is not installed"
fi

# --- stunnel4 (no setuid: root) -------------------------------------------------------------
if have stunnel4; then
    T=$W/stunnel
    mkdir -p "$T"
    port=$(free_port)
    dead=$(free_port) # nothing listens there: the handshake is all that is measured
    cat >"$T/stunnel.conf" <<EOF
foreground = yes
pid =
output = $W/logs/stunnel-output.log
debug = notice
[tls]
accept = 127.0.0.1:$port
connect = 127.0.0.1:$dead
cert = $P/leaf.pem
key = $P/leaf.key
sslVersionMin = TLSv1.2
ciphers = ECDHE-RSA-AES128-GCM-SHA256:AES128-SHA256
EOF
    f=$W/stats/stunnel
    prime "$f" root
    start_bg "$W/logs/stunnel.log" "$f" "$W/ld/stunnel" stunnel4 "$T/stunnel.conf"
    if wait_port "$port" "$started"; then
        tls_server_rows "stunnel $(pkgver stunnel4)" "$port" "$f" root "$W/ld/stunnel" "$(propq_why "$(command -v stunnel4)")"
    else
        server_unmeasured "stunnel4" "stunnel did not start: $(tail -1 "$W/logs/stunnel.log")"
    fi
else
    server_unmeasured "stunnel4" "stunnel4 is not installed"
fi

# --- postfix smtpd STARTTLS (as the postfix user) ------------------------------------------------
# A private instance (its own config, queue and data directories), smtpd
# only. CHROOT y is what Debian's master.cf does for smtpd; then the
# counters file lives inside the jail and RUSTICA_STATS_PATH names it as
# smtpd sees it after chroot(2).
postfix_rows() { # NAME CHROOT(y|n)
    local name=$1 chroot=$2 B=$W/$1 port f envpath label
    label="Postfix $(pkgver postfix) smtpd STARTTLS$([ "$chroot" = y ] && echo ' (chrooted, as in Debian'"'"'s master.cf)' || echo ' (not chrooted)')"
    mkdir -p "$B/etc" "$B/spool" "$B/data"
    chown postfix "$B/data"
    port=$(free_port)
    if [ "$chroot" = y ]; then
        user_dir postfix "$B/spool/rustica-stats"
        f=$B/spool/rustica-stats/counters
        envpath=/rustica-stats/counters
    else
        user_dir postfix "$B/stats"
        f=$B/stats/counters
        envpath=$f
    fi
    cat >"$B/etc/main.cf" <<EOF
compatibility_level = 3.6
queue_directory = $B/spool
data_directory = $B/data
mail_owner = postfix
setgid_group = postdrop
inet_protocols = ipv4
inet_interfaces = 127.0.0.1
myhostname = localhost.localdomain
mydestination =
local_recipient_maps =
relay_domains =
maillog_file_prefixes = $B
maillog_file = $B/maillog
smtpd_tls_cert_file = $P/leaf.pem
smtpd_tls_key_file = $P/leaf.key
smtpd_tls_security_level = may
smtpd_tls_loglevel = 1
# postfix(1) and master(8) pass on only these variables
import_environment = MAIL_CONFIG MAIL_DEBUG MAIL_LOGTAG TZ LANG=C POSTLOG_SERVICE POSTLOG_HOSTNAME OPENSSL_CONF RUSTICA_STATS_PATH LD_DEBUG LD_DEBUG_OUTPUT
EOF
    cat >"$B/etc/master.cf" <<EOF
127.0.0.1:$port inet n - $chroot - - smtpd
postlog unix-dgram n - n - 1 postlogd
proxymap unix - - n - - proxymap
anvil unix - - n - 1 anvil
tlsmgr unix - - n 1000? 1 tlsmgr
EOF
    prime "$f" postfix
    if ! env OPENSSL_CONF="$cnf" RUSTICA_STATS_PATH="$envpath" LD_DEBUG=files LD_DEBUG_OUTPUT="$W/ld/$name" \
        postfix -c "$B/etc" start >"$W/logs/$name.log" 2>&1; then
        server_unmeasured "$label" "postfix did not start: $(tail -1 "$W/logs/$name.log" "$B/maillog" 2>/dev/null | tail -1)"
        return 0
    fi
    postfixes+=("$B/etc")
    if wait_port "$port"; then
        tls_server_rows "$label" "$port" "$f" postfix "$W/ld/$name" "" smtp
    else
        server_unmeasured "$label" "smtpd does not listen: $(tail -1 "$B/maillog" 2>/dev/null)"
    fi
    postfix -c "$B/etc" stop >/dev/null 2>&1 || true
}
if have postfix; then
    postfix_rows postfix n
    postfix_rows postfix-chroot y
else
    server_unmeasured "postfix" "postfix is not installed"
fi

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
    echo "coverage.sh: $unmeasured row(s) could not be measured" >&2
    exit 1
fi
exit 0
