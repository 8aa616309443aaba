# One writer of the private sshd's configuration that rustica's OpenSSH
# checks start: scripts/lib/coverage/openssh.sh (scripts/coverage.sh's
# OpenSSH rows) and scripts/lib/sshd-adapter-chroot.sh (the sshd of
# scripts/test-sshd-adapter.sh, which copies this file into the chroot
# beside it).
#
#   write_sshd_config FILE PORT DIR [LINE...]
#
# An sshd on 127.0.0.1:PORT with DIR/host_rsa as its only host key and
# DIR/sshd.pid, offering and accepting RSA with SHA-2 only, public-key
# authentication on, keyboard-interactive and PAM off; each LINE
# ("Keyword value") is added after those (the caller's authorized keys,
# password authentication, log level, ...). sshd takes the first value of
# a keyword, so a LINE must not repeat one of the lines above.
write_sshd_config() {
    local file=$1 port=$2 dir=$3
    shift 3
    {
        printf '%s\n' \
            "Port $port" \
            "ListenAddress 127.0.0.1" \
            "HostKey $dir/host_rsa" \
            "PidFile $dir/sshd.pid" \
            "HostKeyAlgorithms rsa-sha2-256,rsa-sha2-512" \
            "PubkeyAcceptedAlgorithms rsa-sha2-256,rsa-sha2-512" \
            "PubkeyAuthentication yes" \
            "KbdInteractiveAuthentication no" \
            "UsePAM no" \
            "PrintMotd no"
        [ $# -eq 0 ] || printf '%s\n' "$@"
    } >"$file"
}
