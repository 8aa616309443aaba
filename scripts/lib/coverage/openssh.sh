# scripts/coverage.sh's OpenSSH rows: ssh-keygen (keygen, -Y sign,
# -Y verify), then a private sshd and the ssh client against it.
#
# Sourced by scripts/coverage.sh after measure.sh, in the order it names;
# uses what coverage.sh set up ($W, $P, $cnf, $plain, $PY, $cli, have,
# die), the data directory $D that commands.sh makes, and measure.sh's
# functions. Adds rows with add_row (through run_one, judge,
# tls_server_rows, not_measured).

# shellcheck disable=SC2154,SC2034 # variables of scripts/coverage.sh, read and set (made_run_sshd: read by its cleanup)

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
    write_sshd_config "$S/sshd_config" "$port" "$S" \
        "AuthorizedKeysFile $S/authorized_keys" "PermitRootLogin prohibit-password" \
        "PasswordAuthentication no" "StrictModes no" "LogLevel ERROR"
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
        # LD_DEBUG's output goes to ssh's standard error, which ssh keeps:
        # it closes every other descriptor at its start (LD_DEBUG_OUTPUT's file
        # too: its output stopped there), before it loads rustica.
        env OPENSSL_CONF="$cnf" RUSTICA_STATS_PATH="$cli" LD_DEBUG=files \
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
            judge "$sshv (ssh client)" "verify (server host key)" verify "$cb" "$ca" "$(loaded "$log")" "$why"
            judge "$sshv (ssh client)" "sign (publickey auth)" sign "$cb" "$ca" "$(loaded "$log")" "$why"
        else
            sshd_rows_unmeasured "ssh to the test sshd failed (exit $rc): $(grep -v '^ *[0-9]*:' "$log" | tail -1 | tr '|' '/')"
        fi
    else
        sshd_rows_unmeasured "sshd did not start: $(tail -1 "$W/logs/sshd.log" | tr '|' '/')"
    fi
else
    sshd_rows_unmeasured "sshd, ssh or the ssh-keygen key is missing"
fi
