# scripts/coverage.sh's DNSSEC rows: BIND's dnssec-keygen,
# dnssec-signzone and dnssec-verify, and PowerDNS's pdnsutil.
#
# Sourced by scripts/coverage.sh after measure.sh, in the order it names;
# uses what coverage.sh set up ($W, $P, $cnf, $plain, $PY, $cli, have,
# die), the data directory $D that commands.sh makes, and measure.sh's
# functions. Adds rows with add_row (through run_one, judge,
# tls_server_rows, not_measured).

# shellcheck disable=SC2154 # the variables scripts/coverage.sh and commands.sh set

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

# A zone as PowerDNS keeps it: SQLite backend, a KSK made by pdnsutil
# add-zone-key (the keygen row), a ZSK, rectify-zone; then pdns_server
# answers a query with the DO bit and signs the answer's RRset with the ZSK
# (the sign row: the server signs on the fly, as it does in production).
pdns_sign_label="sign (answer with DO: RRSIG over www A)"
pdns_zone_unmeasured() {
    not_measured "$pdnsv (pdnsutil, SQLite zone)" "keygen (add-zone-key ksk 2048 rsasha256)" "$1"
    not_measured "$pdnsv (pdns_server, SQLite zone)" "$pdns_sign_label" "$1"
}
pdns_server_row() { # the zone is ready in $Q
    local f b a rc log
    cat >"$W/py/dnsq.py" <<'PY'
import socket, struct, sys
port, name = int(sys.argv[1]), sys.argv[2]
q = struct.pack(">HHHHHH", 0x5253, 0x0100, 1, 0, 0, 1)
for label in name.split("."):
    q += bytes([len(label)]) + label.encode()
q += b"\0" + struct.pack(">HH", 1, 1)                 # A, IN
q += b"\0" + struct.pack(">HHIH", 41, 4096, 0x8000, 0)  # OPT with the DO bit
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(10)
s.sendto(q, ("127.0.0.1", port))
r = s.recv(65535)
flags, _, an = struct.unpack(">HHH", r[2:8])
print("rcode", flags & 15, "answers", an)
sys.exit(0 if flags & 15 == 0 and an >= 2 else 1)  # the A record and its RRSIG
PY
    f=$W/stats/pdns_server
    prime "$f" root
    start_bg "$W/logs/pdns_server.log" "$f" "$W/ld/pdns_server" /usr/sbin/pdns_server --config-dir="$Q"
    if ! wait_port "$pdns_port" "$started"; then
        not_measured "$pdnsv (pdns_server, SQLite zone)" "$pdns_sign_label" \
            "pdns_server did not start: $(tail -1 "$W/logs/pdns_server.log" | tr '|' '/')"
        return 0
    fi
    n=$((n + 1))
    log=$W/logs/$n.log
    reset "$f" root
    b=$(snap "$f" root)
    rc=0
    OPENSSL_CONF=$plain timeout 30 "$PY" "$W/py/dnsq.py" "$pdns_port" www.example.test >"$log" 2>&1 || rc=$?
    sleep 0.3
    a=$(snap "$f" root)
    if [ "$rc" = 0 ]; then
        judge "$pdnsv (pdns_server, SQLite zone)" "$pdns_sign_label" sign "$b" "$a" \
            "$(loaded "$W/ld/pdns_server")" "$(rsa_api /usr/sbin/pdns_server)"
    else
        not_measured "$pdnsv (pdns_server, SQLite zone)" "$pdns_sign_label" "no signed answer: $(tail -1 "$log" | tr '|' '/')"
    fi
}
schema=$(dpkg -L pdns-backend-sqlite3 2>/dev/null | grep -m1 '/schema\.sqlite3\.sql$' || true)
if have pdnsutil && [ -x /usr/sbin/pdns_server ] && [ -n "$schema" ]; then
    Q=$Z/pdns-sqlite
    mkdir -p "$Q"
    "$PY" -c 'import sqlite3, sys; sqlite3.connect(sys.argv[1]).executescript(open(sys.argv[2]).read())' \
        "$Q/zone.sqlite3" "$schema"
    pdns_port=$(free_port)
    printf '%s\n' launch=gsqlite3 "gsqlite3-database=$Q/zone.sqlite3" gsqlite3-dnssec=yes \
        local-address=127.0.0.1 "local-port=$pdns_port" "socket-dir=$Q" daemon=no guardian=no \
        write-pid=no >"$Q/pdns.conf"
    pu() { OPENSSL_CONF=$plain pdnsutil --config-dir="$Q" "$@" >>"$W/logs/pdnsutil-zone.log" 2>&1; }
    if pu create-zone example.test ns.example.test && pu add-record example.test www A 300 127.0.0.2; then
        run_one "$pdnsv (pdnsutil, SQLite zone)" "keygen (add-zone-key ksk 2048 rsasha256)" keygen \
            "$(rsa_api "$(command -v pdnsutil)")" \
            pdnsutil --config-dir="$Q" add-zone-key example.test ksk 2048 active rsasha256
        if pu add-zone-key example.test zsk 2048 active rsasha256 && pu rectify-zone example.test; then
            pdns_server_row
        else
            not_measured "$pdnsv (pdns_server, SQLite zone)" "$pdns_sign_label" \
                "no ZSK, or rectify-zone failed: $(tail -1 "$W/logs/pdnsutil-zone.log" | tr '|' '/')"
        fi
    else
        pdns_zone_unmeasured "the zone could not be created: $(tail -1 "$W/logs/pdnsutil-zone.log" | tr '|' '/')"
    fi
else
    pdns_zone_unmeasured "pdns-server or pdns-backend-sqlite3 is not installed"
fi
