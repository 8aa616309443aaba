#!/usr/bin/env bash
# The part of scripts/test-sshd-adapter.sh that runs inside the Debian 13
# chroot (as root, in a mount namespace of its own with /proc, /dev/pts,
# /dev/shm and an empty /run). Everything is in $D (/root/rustica-sshd):
# rustica.deb, libica_emu.so and rustica-card, copied in by the caller.
#
#   sshd-adapter-chroot.sh LOGINS PORT CARD(1|0)
#
# Installs rustica's package, writes an openssl.cnf with
# `rustica config --backend libica --libica $D/libica_emu.so`, starts the
# card (when CARD is 1) and a private sshd (OpenSSH 10.0) with that
# openssl.cnf, then makes LOGINS publickey logins as the user rustica-ssh
# with an ssh client that does not load rustica. After the logins it
# inspects two processes while they live: the privileged sshd-session of a
# held session (the monitor) and the sandboxed sshd-auth of a connection
# that waits at its password prompt (after the key exchange). It writes
# the results into $D for the caller to check; it checks nothing itself,
# and it fails only when something could not be run.
set -euo pipefail
D=/root/rustica-sshd
logins=${1:?logins}
port=${2:?port}
card=${3:?card}
U=rustica-ssh
say() { echo "sshd-adapter (chroot): $*" >&2; }
# scripts/lib/sshd-config.sh: beside this file in the tree, and copied
# beside it into the chroot by scripts/test-sshd-adapter.sh.
# shellcheck source=scripts/lib/sshd-config.sh
. "$(dirname "${BASH_SOURCE[0]}")/sshd-config.sh"

dpkg -P rustica >/dev/null 2>&1 || true
dpkg -i "$D/rustica.deb" >"$D/dpkg.log" 2>&1 || { cat "$D/dpkg.log" >&2; exit 2; }

id "$U" >/dev/null 2>&1 || useradd --create-home --shell /bin/sh "$U"
# No password, but not a locked account ("!"), which sshd refuses without PAM.
usermod -p '*' "$U"
home=$(getent passwd "$U" | cut -d: -f6)
plain=$D/plain.cnf
printf '# empty: no rustica\n' >"$plain"
OPENSSL_CONF=$plain ssh-keygen -q -t rsa -b 2048 -N '' -C sshd-adapter -f "$D/id_rsa"
OPENSSL_CONF=$plain ssh-keygen -q -t rsa -b 2048 -N '' -C host -f "$D/host_rsa"
install -d -m 700 -o "$U" -g "$U" "$home/.ssh"
install -m 600 -o "$U" -g "$U" "$D/id_rsa.pub" "$home/.ssh/authorized_keys"

rustica config --backend libica --libica "$D/libica_emu.so" --out "$D/openssl.cnf" >"$D/config.log" 2>&1 ||
    { cat "$D/config.log" >&2; exit 2; }

env_card=()
if [ "$card" = 1 ]; then
    "$D/rustica-card" --socket "$D/card.sock" >"$D/card.log" 2>&1 &
    card_pid=$!
    for _ in $(seq 100); do grep -q listening "$D/card.log" && break; sleep 0.1; done
    grep -q listening "$D/card.log" || { cat "$D/card.log" >&2; exit 2; }
    env_card=(LIBICA_EMU_CARD="$D/card.sock")
fi

write_sshd_config "$D/sshd_config" "$port" "$D" \
    "AuthorizedKeysFile .ssh/authorized_keys" "PasswordAuthentication yes" \
    "PerSourcePenalties no" "LogLevel DEBUG2"
mkdir -m 755 /run/sshd 2>/dev/null || true
rm -f "$D/stats" "$D/calls"
env OPENSSL_CONF="$D/openssl.cnf" RUSTICA_STATS_PATH="$D/stats" LIBICA_EMU_COUNTS="$D/calls" "${env_card[@]}" \
    /usr/sbin/sshd -D -e -f "$D/sshd_config" 2>"$D/sshd.log" &
sshd_pid=$!
echo "$sshd_pid" >"$D/listener.pid"
# shellcheck disable=SC2317 # called by the EXIT trap
stop() {
    kill "$sshd_pid" 2>/dev/null || true
    wait "$sshd_pid" 2>/dev/null || true
    if [ "$card" = 1 ]; then
        "$D/rustica-card" --socket "$D/card.sock" --ctl quit >/dev/null 2>&1 || true
        wait "$card_pid" 2>/dev/null || true
    fi
}
trap stop EXIT
for _ in $(seq 100); do grep -q "Server listening" "$D/sshd.log" && break; sleep 0.1; done
grep -q "Server listening" "$D/sshd.log" || { cat "$D/sshd.log" >&2; exit 2; }

sshc() { # ssh to the test sshd as $U, client without rustica
    env OPENSSL_CONF="$plain" ssh -F /dev/null -o StrictHostKeyChecking=no \
        -o UserKnownHostsFile=/dev/null -o GlobalKnownHostsFile=/dev/null -o LogLevel=ERROR \
        -o HostKeyAlgorithms=rsa-sha2-256 -o IdentityAgent=none -p "$port" "$@"
}
say "$logins publickey logins as $U on 127.0.0.1:$port"
ok=0
failed=0
for i in $(seq "$logins"); do
    if out=$(sshc -o BatchMode=yes -o PreferredAuthentications=publickey -o IdentitiesOnly=yes \
        -i "$D/id_rsa" "$U@127.0.0.1" "echo login-$i" </dev/null 2>>"$D/ssh-errors.log") &&
        [ "$out" = "login-$i" ]; then
        ok=$((ok + 1))
    else
        failed=$((failed + 1))
    fi
done
printf 'ok=%s\nfailed=%s\n' "$ok" "$failed" >"$D/logins"
sleep 0.5 # the last session's monitor has exited once its client has
rustica stats --json --path "$D/stats" >"$D/stats.json"
cp "$D/calls" "$D/calls.logins" 2>/dev/null || : >"$D/calls.logins"
if [ "$card" = 1 ]; then "$D/rustica-card" --socket "$D/card.sock" --ctl stats >"$D/card.json"; fi

# --- the processes while they live --------------------------------------------------
# status: threads, seccomp mode, uid; fds: eventfds; maps: rustica.so, libica_emu.so.
inspect() { # PID NAME
    local p=$1 n=$2
    {
        echo "$n.pid=$p"
        echo "$n.exe=$(readlink "/proc/$p/exe")"
        echo "$n.uid=$(awk '/^Uid:/ {print $2}' "/proc/$p/status")"
        echo "$n.threads=$(awk '/^Threads:/ {print $2}' "/proc/$p/status")"
        echo "$n.seccomp=$(awk '/^Seccomp:/ {print $2}' "/proc/$p/status")"
        echo "$n.eventfds=$(find "/proc/$p/fd" -mindepth 1 -printf '%l\n' 2>/dev/null | grep -c eventfd || true)"
        echo "$n.sockets=$(find "/proc/$p/fd" -mindepth 1 -printf '%l\n' 2>/dev/null | grep -c socket || true)"
        echo "$n.rustica_so=$(grep -c '/rustica\.so$' "/proc/$p/maps" || true)"
        echo "$n.libica_emu_so=$(grep -c '/libica_emu\.so$' "/proc/$p/maps" || true)"
    } >>"$D/probe"
}
children() { # PID: its children's pids
    cat "/proc/$1/task/"*/children 2>/dev/null | tr ' ' '\n' | grep . || true
}
: >"$D/probe"
inspect "$sshd_pid" listener

# A held session: the monitor (root sshd-session, child of the listener)
# once the user's session child exists, i.e. after the host-key signature
# and the authentication.
sshc -o BatchMode=yes -o PreferredAuthentications=publickey -o IdentitiesOnly=yes \
    -i "$D/id_rsa" "$U@127.0.0.1" "touch /tmp/held-$$; sleep 30" </dev/null >/dev/null 2>&1 &
held=$!
for _ in $(seq 100); do [ -e "/tmp/held-$$" ] && break; sleep 0.1; done
monitor=""
for c in $(children "$sshd_pid"); do
    [ "$(awk '/^Uid:/ {print $2}' "/proc/$c/status" 2>/dev/null)" = 0 ] && monitor=$c
done
if [ -n "$monitor" ]; then
    inspect "$monitor" monitor
    for c in $(children "$monitor"); do inspect "$c" session; done
fi
kill "$held" 2>/dev/null || true
wait "$held" 2>/dev/null || true
rm -f "/tmp/held-$$"

# The sandboxed pre-authentication child (sshd-auth) after the key
# exchange: password authentication, whose prompt (SSH_ASKPASS) waits for
# $D/go before it answers a wrong password.
cat >"$D/askpass" <<EOF
#!/bin/sh
touch $D/asked
for i in \$(seq 300); do [ -e $D/go ] && break; sleep 0.1; done
echo wrong-password
EOF
chmod 755 "$D/askpass"
rm -f "$D/asked" "$D/go"
env SSH_ASKPASS="$D/askpass" SSH_ASKPASS_REQUIRE=force DISPLAY=:0 \
    OPENSSL_CONF="$plain" ssh -F /dev/null -o StrictHostKeyChecking=no \
    -o UserKnownHostsFile=/dev/null -o GlobalKnownHostsFile=/dev/null -o LogLevel=ERROR \
    -o HostKeyAlgorithms=rsa-sha2-256 -o IdentityAgent=none -o PubkeyAuthentication=no \
    -o PreferredAuthentications=password -o NumberOfPasswordPrompts=1 \
    -p "$port" "$U@127.0.0.1" true </dev/null >/dev/null 2>&1 &
pw=$!
for _ in $(seq 100); do [ -e "$D/asked" ] && break; sleep 0.1; done
for m in $(children "$sshd_pid"); do
    for c in $(children "$m"); do
        case $(readlink "/proc/$c/exe") in */sshd-auth) inspect "$c" preauth ;; esac
    done
done
touch "$D/go"
wait "$pw" 2>/dev/null || true
sleep 0.3
cp "$D/calls" "$D/calls.all" 2>/dev/null || : >"$D/calls.all"
say "done: $ok logins, $failed failed"
