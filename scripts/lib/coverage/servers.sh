# scripts/coverage.sh's TLS daemons: nginx, apache2, haproxy, stunnel4
# and postfix's smtpd (not chrooted and chrooted), each handshaken three
# times by tls_server_rows.
#
# Sourced by scripts/coverage.sh after measure.sh, in the order it names;
# uses what coverage.sh set up ($W, $P, $cnf, $plain, $PY, $cli, have,
# die), the data directory $D that commands.sh makes, and measure.sh's
# functions. Adds rows with add_row (through run_one, judge,
# tls_server_rows, not_measured).

# shellcheck disable=SC2154 # the variables scripts/coverage.sh and commands.sh set

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
