# scripts/coverage.sh's first rows: the openssl command (which must count,
# or the set-up is broken), its s_server, and the TLS clients (curl,
# Python ssl, against a stock s_server started here) and Python's ssl
# server; then pyca/cryptography.
#
# Sourced by scripts/coverage.sh after measure.sh, in the order it names;
# uses what coverage.sh set up ($W, $P, $cnf, $plain, $PY, $cli, have,
# die), the data directory $D that commands.sh makes, and measure.sh's
# functions. Adds rows with add_row (through run_one, judge,
# tls_server_rows, not_measured).

# shellcheck disable=SC2154 # the variables scripts/coverage.sh and measure.sh set

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
    # Measured: which of its bindings imports RSA_generate_key_ex. Where
    # it is called from is the source's: the cffi binding's backend.py
    # (cryptography up to 41), rust-openssl's Rsa::generate_with_e in
    # src/rust/src/backend/rsa.rs (42 and later).
    pyca_keygen_why=""
    for so in $("$PY" -c 'import glob, os, cryptography.hazmat.bindings as b; print(*sorted(glob.glob(os.path.join(os.path.dirname(b.__file__), "*.so"))))'); do
        imports=$(nm -D --undefined-only "$so" 2>/dev/null | awk '{print $2}' | sed 's/@.*//' || true)
        grep -qx RSA_generate_key_ex <<<"$imports" || continue
        case $(basename "$so") in
        _openssl*) src="hazmat/backends/openssl/backend.py" ;;
        *) src="src/rust/src/backend/rsa.rs, through rust-openssl's Rsa::generate_with_e" ;;
        esac
        pyca_keygen_why="low-level RSA API: cryptography $(pkgver python3-cryptography | cut -d- -f1)'s $(basename "$so") imports RSA_generate_key_ex and generates RSA keys with it ($src), which in OpenSSL 3 never reaches a provider"
        break
    done
    run_one "$pyca" "keygen (rsa.generate_private_key 2048)" keygen "$pyca_keygen_why" "$PY" "$W/py/pyca.py" keygen "$P/leaf.key" "$P/leaf.pub" "$D"
    for op in sign verify encrypt decrypt; do
        case $op in sign | verify) pad=PSS ;; *) pad=OAEP ;; esac
        run_one "$pyca" "$op ($pad)" "$op" "" "$PY" "$W/py/pyca.py" "$op" "$P/leaf.key" "$P/leaf.pub" "$D"
    done
else
    for op in keygen sign verify encrypt decrypt; do not_measured "pyca/cryptography" "$op" "Debian's python3-cryptography is not installed"; done
fi
