# Sourced by scripts/coverage.sh: how a row is measured. The counters
# (snap, reset, prime: a counters file as a given user), the rows and their
# verdicts (add_row, judge, run_one), and what the servers' rows need
# (free_port, wait_port, tls_server_rows, start_bg, mapped, propq_why,
# server_unmeasured, pkgver). Uses what coverage.sh set up ($W, $cnf,
# $plain, $P, $PY, $rustica, $modbase, die); defines no row itself.

# shellcheck disable=SC2154 # the variables scripts/coverage.sh sets

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

# --- results ---------------------------------------------------------------------------
rows=()
unmeasured=0
add_row() { # PROGRAM OPERATION COUNTED DELTA LOADED WHY
    rows+=("| $1 | $2 | $3 | $4 | $5 | $6 |")
    [ "$3" != "not measured" ] || unmeasured=$((unmeasured + 1))
    echo "coverage.sh: $1: $2: $3 ($4)" >&2
}
not_measured() { add_row "$1" "$2" "not measured" "" "" "$3"; }
# LD_DEBUG=files output under PREFIX.* (LD_DEBUG_OUTPUT), or in the file
# PREFIX itself (a program's standard error), shows whether rustica.so was
# loaded.
loaded() { # PREFIX
    if grep -qs "file=.*$modbase .*dynamically loaded" "$1" "$1".*; then echo yes; else echo no; fi
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
