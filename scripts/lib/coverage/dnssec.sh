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
