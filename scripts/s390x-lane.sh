#!/usr/bin/env bash
# The big-endian lane: rustica cross-built for s390x, loaded into Debian's
# s390x openssl under qemu-user, with the REAL libica (Debian's libica3,
# whose software fallback does the arithmetic under qemu) as its backend.
# Three parts: bookworm (Debian 12: OpenSSL 3.0, libica 3.9), stable
# (Debian 13: OpenSSL 3.5, libica 3.9), and openssl-4.0 (Debian 13's
# userland and libica with OpenSSL 4.0 cross-built from its source by
# scripts/openssl-build.sh, as no Debian release ships 4.0 for s390x yet;
# libica keeps its libcrypto.so.3 beside 4.0's libcrypto.so.4).
#
#   scripts/s390x-lane.sh                  # every part: install, build, run, check
#   scripts/s390x-lane.sh --release R      # one part; R is bookworm, stable,
#                                          # openssl-4.0 or all
#   scripts/s390x-lane.sh --sysroot-only   # steps 1-2 only; prints the sysroot
#                                          # (bookworm unless --release says)
#   scripts/s390x-lane.sh --from-deb DEB   # run from rustica's s390x package
#                                          # (dpkg -x into the bookworm sysroot), no build
#
# Steps: install the cross tools (gcc-s390x-linux-gnu, qemu-user-static,
# the rustup target); extract Debian's s390x packages into a sysroot with a
# private apt configuration (the host's dpkg architectures are not
# touched); cross-build rustica against that sysroot's OpenSSL; then under
# qemu-s390x-static, with backend = libica and libica = libica.so.3:
# generate a 2048-bit key, sign and verify at 2048 and 4096 bits, verify
# each signature on the host with the default provider, compare with the
# host's signature; encrypt and decrypt (OAEP and PKCS#1 v1.5) across
# s390x and the host in both directions; and check rustica's s390x counters
# show libica for every operation; then `openssl speed -async_jobs 8` and
# TLS handshakes against `s_server -async` on s390x, every private
# operation counted on libica and those inside a job counted as async.
# On Debian 12 and 13, the workshop's own setup joins as a third side
# (scripts/s390x-three-sides.sh): stock OpenSSL, rustica and Debian's ibmca
# ENGINE on the same libica, then on the project's emulated adapter
# cross-built for s390x; then all four sides (stock with and without its
# own offload, rustica, the engine) on one shared card model that answers
# their /dev/z90crypt (scripts/s390x-card.sh; S390X_SPEED=1 adds the three
# sides' speed rows on Debian 12, S390X_CARD_SPEED=1 the card's
# throughput rows, S390X_CARD_MAINT=1 one server per side across a card
# outage, checked against docs/comparison/<release>-card-maint.tsv). Their facts must match docs/comparison/ (what
# docs/comparison.md is rendered from; S390X_LANE_RECORD=1 records them).
# Prints each part's OpenSSL and libica versions and counters. Exits
# non-zero, saying what failed.
#
# Work directory: $S390X_LANE_DIR (default target/s390x-lane), reused on the
# next run (sysroots and cross builds are cached there). bookworm keeps the
# lane's original paths (sysroot, apt, run, target: scripts/package.sh
# builds in the same target directory); stable lives under stable/, and
# openssl-4.0 under openssl-4.0/ (with stable's sysroot).
# shellcheck source-path=SCRIPTDIR source-path=.
. "$(dirname "$0")/lib/common.sh"
REPO=$(pwd)
LANE=${S390X_LANE_DIR:-$REPO/target/s390x-lane}
TARGET=s390x-unknown-linux-gnu
MODE=build
RELEASE=""
usage() {
  echo "usage: $0 [--release bookworm|stable|openssl-4.0|all] [--sysroot-only | --from-deb rustica_VER_s390x.deb]" >&2
  exit 2
}
while [ $# -gt 0 ]; do
  case "$1" in
    --release) RELEASE=${2:-}; [ $# -ge 2 ] || usage; shift 2 ;;
    --sysroot-only) MODE=sysroot; shift ;;
    --from-deb) MODE=deb; DEB=$(realpath "${2:?--from-deb needs a .deb}"); shift 2 ;;
    *) usage ;;
  esac
done
# The package modes serve the Debian 12 package, so they default to bookworm.
if [ -z "$RELEASE" ]; then
  if [ "$MODE" = build ]; then RELEASE=all; else RELEASE=bookworm; fi
fi
case "$RELEASE" in
  bookworm)
    PART=$LANE
    PKGS=(libc6 libgcc-s1 libssl3 libssl-dev openssl libica3 libica-dev libc6-dev
          linux-libc-dev libcrypt1 libcrypt-dev zlib1g libzstd1) ;;
  stable)
    PART=$LANE/stable
    # Debian 13 renamed the library package (64-bit time_t transition).
    PKGS=(libc6 libgcc-s1 libssl3t64 libssl-dev openssl libica3 libica-dev libc6-dev
          linux-libc-dev libcrypt1 libcrypt-dev zlib1g libzstd1) ;;
  openssl-4.0)
    [ "$MODE" = build ] || die "--sysroot-only and --from-deb serve Debian's own OpenSSL"
    PART=$LANE/openssl-4.0
    # Debian 13's sysroot, made (or reused) by the stable part's steps 1-2.
    STABLE_SYSROOT=$("$0" --release stable --sysroot-only) || exit ;;
  all)
    [ "$MODE" = build ] || die "--sysroot-only and --from-deb take one release"
    times=""
    for part in bookworm stable openssl-4.0; do
      part_start=$SECONDS
      "$0" --release "$part" || exit
      times="$times $part=$((SECONDS - part_start))s"
    done
    echo "s390x-lane: OK, every part (bookworm, stable, openssl-4.0); time per part:$times" >&2
    exit 0 ;;
  *) usage ;;
esac
SYSROOT=$PART/sysroot
APTDIR=$PART/apt
if [ "$RELEASE" = openssl-4.0 ]; then
  SYSROOT=$STABLE_SYSROOT
  APTDIR=$(dirname "$SYSROOT")/apt
fi
RUN=$PART/run
BUILD_DIR=$PART/target

say_as="s390x-lane[$RELEASE]"
step() { say "[$((SECONDS - START))s] $*"; }

# --- 1. tools ---------------------------------------------------------------
step "tools"
scripts/setup.sh build s390x >&2 || die "could not install the lane's tools (scripts/setup.sh build s390x)"
command -v qemu-s390x-static >/dev/null || die "qemu-s390x-static is missing after install"
command -v s390x-linux-gnu-gcc >/dev/null || die "s390x-linux-gnu-gcc is missing after install"
if ! rustup target list --installed 2>/dev/null | grep -qx "$TARGET"; then
  rustup target add "$TARGET" >/dev/null || die "rustup target add $TARGET failed"
fi

# --- 2. sysroot from Debian's s390x packages ----------------------------------
APT=(apt-get -q -o APT::Architecture=s390x -o APT::Architectures=s390x
     -o Dir::State="$APTDIR" -o Dir::State::Lists="$APTDIR/lists"
     -o Dir::State::status="$APTDIR/status" -o Dir::Cache="$APTDIR/cache"
     -o Dir::Etc::SourceList="$APTDIR/sources.list"
     -o Dir::Etc::SourceParts="$APTDIR/sources.list.d"
     -o APT::Sandbox::User=root)
APT_CACHE=(apt-cache "${APT[@]:1}")
# One package into $APTDIR/debs: the version apt picks; else, newest first,
# every other version the (signed) indices list; else the pinned copy in
# scripts/s390x-pins.txt, checked by its SHA-256. The mirror can list a
# version whose s390x file it does not serve (404), so the first alone is
# not enough.
fetch_deb() {
  local pkg=$1 version line archive path sum base
  (cd "$APTDIR/debs" && "${APT[@]}" download "$pkg" >/dev/null 2>&1) && return 0
  for version in $("${APT_CACHE[@]}" madison "$pkg" 2>/dev/null | awk -F' *[|] *' '{print $2}' | sort -ruV); do
    if (cd "$APTDIR/debs" && "${APT[@]}" download "$pkg=$version" >/dev/null 2>&1); then
      say "$pkg: the mirror does not serve the version apt picked; took $version (listed in its indices)"
      return 0
    fi
  done
  line=$(awk -v r="$RELEASE" -v p="$pkg" '$1 == r && $2 == p {print $3, $4; exit}' "$REPO/scripts/s390x-pins.txt")
  [ -n "$line" ] || return 1
  read -r path sum <<<"$line"
  archive=${path%%/*}
  # The archive's address as this host's apt sources give it (URIs ending in /debian or /debian-security).
  base=$(awk -v a="$archive" '/^URIs:/{for (i = 2; i <= NF; i++) {u = $i; sub(/\/+$/, "", u); n = split(u, parts, "/"); if (parts[n] == a) {print u; exit}}}' \
    "$APTDIR/sources.list.d/debian.sources")
  [ -n "$base" ] || return 1
  curl -fsS -o "$APTDIR/debs/${path##*/}" "$base/${path#*/}" || return 1
  if ! echo "$sum  $APTDIR/debs/${path##*/}" | sha256sum -c --quiet - >/dev/null 2>&1; then
    rm -f "$APTDIR/debs/${path##*/}"
    say "$pkg: the pinned copy ${path##*/} does not match its SHA-256"
    return 1
  fi
  say "$pkg: no version the indices list is served; took the pinned ${path##*/} (scripts/s390x-pins.txt)"
}
if [ ! -f "$SYSROOT/.complete" ]; then
  step "sysroot (private apt configuration, s390x, Debian $RELEASE)"
  rm -rf "$SYSROOT" "$APTDIR"
  mkdir -p "$APTDIR/lists/partial" "$APTDIR/cache/archives/partial" \
           "$APTDIR/sources.list.d" "$APTDIR/debs" "$SYSROOT"
  src=/etc/apt/sources.list.d/debian.sources
  [ -f "$src" ] || die "$src not found: this lane expects Debian 12's deb822 sources"
  # Every stanza gets "Architectures: s390x". For Debian 13 the suites are
  # named "stable" (the name "trixie" fails for s390x on this mirror with
  # "File has unexpected size").
  suite_rename=""
  [ "$RELEASE" = stable ] && suite_rename='/^Suites:/{gsub(/bookworm|trixie/, "stable")}'
  awk "$suite_rename"' /^Types:/{print; print "Architectures: s390x"; next} {print}' \
    "$src" >"$APTDIR/sources.list.d/debian.sources"
  : >"$APTDIR/sources.list"
  : >"$APTDIR/status"
  "${APT[@]}" update >/dev/null || die "private apt update for s390x failed"
  for pkg in "${PKGS[@]}"; do fetch_deb "$pkg" || die "could not download the s390x package $pkg"; done
  for deb in "$APTDIR"/debs/*.deb; do dpkg -x "$deb" "$SYSROOT"; done
  # Debian 13's packages install only under /usr (merged /usr); the /lib
  # symlink comes from base-files there. The loader (/lib/ld64.so.1) and
  # libc.so's linker script need it.
  for dir in bin sbin lib; do
    [ -e "$SYSROOT/$dir" ] || ln -s "usr/$dir" "$SYSROOT/$dir"
  done
  # libica seeds from /dev/prandom; without it, from the slow host RNG.
  mkdir -p "$SYSROOT/dev"
  ln -sf /dev/urandom "$SYSROOT/dev/prandom"
  touch "$SYSROOT/.complete"
fi
# Debian's development symlinks are absolute (libm.so -> /lib/s390x-linux-gnu/
# libm.so.6): outside a chroot they point into the build machine's root,
# so the linker would take libm.a instead, whose errno@GLIBC_PRIVATE ties
# the binaries to this exact glibc. Made relative (the loader's /dev/prandom
# link stays absolute on purpose); cheap, so done on every run.
find "$SYSROOT" -path "$SYSROOT/dev" -prune -o -type l -lname '/*' -print | while read -r link; do
  ln -sfn "$(realpath -ms --relative-to="$(dirname "$link")" "$SYSROOT$(readlink "$link")")" "$link"
done
LIBDIR=$SYSROOT/usr/lib/s390x-linux-gnu
[ -e "$LIBDIR/libica.so.3" ] || die "libica.so.3 missing from the sysroot"
[ -x "$SYSROOT/usr/bin/openssl" ] || die "the s390x openssl is missing from the sysroot"
if [ "$MODE" = sysroot ]; then echo "$SYSROOT"; exit 0; fi
# The OpenSSL rustica is built against and runs in: the sysroot's own, or
# for openssl-4.0 the cross-built release (its openssl finds its libcrypto
# through its rpath, which qemu resolves on the host when the sysroot lacks it).
OPENSSL_BIN=$SYSROOT/usr/bin/openssl
OSSL_LIBDIR=$LIBDIR
OSSL_INCDIR=$SYSROOT/usr/include
if [ "$RELEASE" = openssl-4.0 ]; then
  step "OpenSSL 4.0 for s390x (scripts/openssl-build.sh 4.0 s390x; cached)"
  prefix=$(scripts/openssl-build.sh 4.0 s390x | tail -n1) || die "the OpenSSL 4.0 cross build failed"
  OPENSSL_BIN=$prefix/bin/openssl
  OSSL_LIBDIR=$prefix/lib
  OSSL_INCDIR=$prefix/include
fi

# --- 3. rustica: cross-built, or installed from its s390x package ----------------
if [ "$MODE" = deb ]; then
  step "installing $(basename "$DEB") into the sysroot (dpkg -x)"
  dpkg-deb --field "$DEB" Architecture | grep -qx s390x || die "$DEB is not an s390x package"
  dpkg -x "$DEB" "$SYSROOT" || die "dpkg -x $DEB failed"
  MODULE=$LIBDIR/ossl-modules/rustica.so
  [ -f "$MODULE" ] || fail "the package did not install $MODULE"
  qemu-s390x-static -L "$SYSROOT" "$SYSROOT/usr/bin/rustica" --version | grep -q "^rustica " \
    || fail "the packaged s390x rustica command does not run under qemu"
else
step "cross-building rustica for $TARGET"
export CARGO_TARGET_S390X_UNKNOWN_LINUX_GNU_LINKER=s390x-linux-gnu-gcc
export CARGO_TARGET_S390X_UNKNOWN_LINUX_GNU_RUSTFLAGS="-C link-arg=--sysroot=$SYSROOT"
export CC_s390x_unknown_linux_gnu=s390x-linux-gnu-gcc
export CFLAGS_s390x_unknown_linux_gnu="--sysroot=$SYSROOT"
export OPENSSL_LIB_DIR=$OSSL_LIBDIR
export OPENSSL_INCLUDE_DIR=$OSSL_INCDIR
export RUSTICA_SYSROOT=$SYSROOT
# The emulated libica too: scripts/s390x-three-sides.sh gives it to rustica
# and to the ibmca engine in place of libica.so.3.
# Release: the card rows and the card lab measure each side's host CPU
# per operation, and an unoptimised module would put its own slowness
# into B's figures (about 0.08 ms of qemu CPU per 2048-bit signature).
cargo build -q --release --target "$TARGET" --target-dir "$BUILD_DIR" -p rustica -p libica-emu --lib \
  || die "cross build failed"
MODULE=$BUILD_DIR/$TARGET/release/librustica.so
[ -f "$MODULE" ] || die "no $MODULE after the build"
file "$MODULE" 2>/dev/null | grep -q "IBM S/390" || say "note: could not confirm $MODULE is s390x"
unset OPENSSL_LIB_DIR OPENSSL_INCLUDE_DIR
fi

# --- 4. run under qemu ----------------------------------------------------------
step "running the s390x openssl under qemu with rustica and libica.so.3"
rm -rf "$RUN"
mkdir -p "$RUN/modules"
# The packaged module is loaded where the package put it.
if [ "$MODE" = deb ]; then LOADED_MODULE=$MODULE
else LOADED_MODULE=$RUN/modules/rustica.so; cp "$MODULE" "$LOADED_MODULE"; fi
. scripts/lib/openssl-cnf.sh
rustica_conf "$RUN/s390x.cnf" "$LOADED_MODULE" "backend = libica" "libica = libica.so.3" \
  "debug = yes" "debug-path = $RUN"
uid=$(id -u)
icastats=/dev/shm/icastats_$uid
had_icastats=0
[ -e "$icastats" ] && had_icastats=1
cleanup() { [ "$had_icastats" = 1 ] || rm -f "$icastats"; }
trap cleanup EXIT

STATS=$RUN/stats
s390x_openssl() {
  env -u RUSTICA_BACKEND -u RUSTICA_LIBICA -u RUSTICA_DEBUG \
    OPENSSL_CONF="$RUN/s390x.cnf" RUSTICA_STATS_PATH="$STATS" LIBICA_STATS_MODE=0 \
    qemu-s390x-static -L "$SYSROOT" "$OPENSSL_BIN" "$@"
}
# The same, replacing the calling (sub)shell: for background servers.
exec_s390x_openssl() {
  exec env -u RUSTICA_BACKEND -u RUSTICA_LIBICA -u RUSTICA_DEBUG \
    OPENSSL_CONF="$RUN/s390x.cnf" RUSTICA_STATS_PATH="$STATS" LIBICA_STATS_MODE=0 \
    qemu-s390x-static -L "$SYSROOT" "$OPENSSL_BIN" "$@"
}
host_openssl() { OPENSSL_CONF=/dev/null openssl "$@"; }

# rustica's counters, read by the host's `rustica stats`, which takes the
# s390x writer's (big-endian) file as it is and refuses a layout it does
# not know. Ops and backends by index, as the checks below name them.
cargo build -q -p rustica-harness --bin rustica || die "building the host's rustica command failed"
host_rustica=$REPO/target/debug/rustica
ops=(keygen sign verify encrypt decrypt keygen_modexp)
backends=(libica software fallback failed)
# FIELD... of op OP from the counters file $STATS, space-separated.
stat_fields() { # op-name field...
  env -u RUSTICA_MODULE "$host_rustica" stats --path "$STATS" --json \
    | python3 -c 'import json, sys; op = json.load(sys.stdin)["ops"][sys.argv[1]]; print(*(op[f] for f in sys.argv[2:]))' "$@"
}
counter() { stat_fields "${ops[$1]}" "${backends[$2]}"; } # op-index backend-index
s390x_openssl version | grep -q "^OpenSSL [34]\." || die "the s390x openssl does not run under qemu"
head -c 100000 /dev/urandom >"$RUN/doc.bin"

step "2048-bit key generated on s390x by rustica (its Miller-Rabin exponentiations on libica)"
s390x_openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$RUN/key-2048.pem" \
  || fail "genpkey 2048 on s390x failed"
host_openssl pkey -in "$RUN/key-2048.pem" -check -noout >/dev/null \
  || fail "the key generated on s390x does not pass the host's check"
host_openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:4096 -out "$RUN/key-4096.pem" 2>/dev/null

for bits in 2048 4096; do
  step "sign and verify, $bits bits"
  key=$RUN/key-$bits.pem
  host_openssl pkey -in "$key" -pubout -out "$RUN/pub-$bits.pem"
  s390x_openssl dgst -sha256 -sign "$key" -out "$RUN/sig-$bits.bin" "$RUN/doc.bin" \
    || fail "signing at $bits bits on s390x failed"
  s390x_openssl dgst -sha256 -verify "$RUN/pub-$bits.pem" -signature "$RUN/sig-$bits.bin" \
    "$RUN/doc.bin" | grep -q "Verified OK" || fail "s390x rustica does not verify its $bits-bit signature"
  host_openssl dgst -sha256 -verify "$RUN/pub-$bits.pem" -signature "$RUN/sig-$bits.bin" \
    "$RUN/doc.bin" | grep -q "Verified OK" || fail "the host does not verify the s390x $bits-bit signature"
  host_openssl dgst -sha256 -sign "$key" -out "$RUN/host-sig-$bits.bin" "$RUN/doc.bin"
  cmp -s "$RUN/sig-$bits.bin" "$RUN/host-sig-$bits.bin" \
    || fail "the s390x PKCS#1 v1.5 signature differs from the host's at $bits bits"
done

# What rustica offers and defaults to follows the running OpenSSL (read
# from the core at load): composite signature algorithms from 3.4, and the
# "auto-digestmax" default PSS salt from 3.1 (32 bytes for SHA-256, else
# the largest, 222 bytes, for a 2048-bit key).
core=$(s390x_openssl version | awk '{print $2}')
core_mm=$(echo "$core" | awk -F. '{printf "%d%03d", $1, $2}')
step "what rustica offers OpenSSL $core on s390x"
offered=$(s390x_openssl list -signature-algorithms | grep -c '@ rustica' || true)
want_offered=1
[ "$core_mm" -ge 3004 ] && want_offered=14
[ "$offered" = "$want_offered" ] \
  || fail "rustica offers $offered signature algorithms to OpenSSL $core; expected $want_offered"
want_salt=222
[ "$core_mm" -ge 3001 ] && want_salt=32
s390x_openssl dgst -sha256 -sign "$RUN/key-2048.pem" -sigopt rsa_padding_mode:pss \
  -out "$RUN/pss-2048.bin" "$RUN/doc.bin" || fail "PSS signing on s390x failed"
host_openssl dgst -sha256 -verify "$RUN/pub-2048.pem" -signature "$RUN/pss-2048.bin" \
  -sigopt rsa_padding_mode:pss -sigopt "rsa_pss_saltlen:$want_salt" "$RUN/doc.bin" \
  | grep -q "Verified OK" \
  || fail "the s390x PSS signature does not have the $want_salt-byte salt OpenSSL $core's default provider uses"
say "OpenSSL $core: $offered signature algorithms from rustica, default PSS salt $want_salt bytes"

for padding in pkcs1 oaep; do
  step "encrypt and decrypt, $padding, 2048 bits, s390x <-> host"
  pad_opts=(-pkeyopt "rsa_padding_mode:$padding")
  [ "$padding" = oaep ] && pad_opts+=(-pkeyopt rsa_oaep_md:sha256 -pkeyopt rsa_mgf1_md:sha256)
  secret=$RUN/secret-$padding.bin
  head -c 32 /dev/urandom >"$secret"
  # Encrypted on s390x, decrypted on the host.
  s390x_openssl pkeyutl -encrypt -pubin -inkey "$RUN/pub-2048.pem" "${pad_opts[@]}" \
    -in "$secret" -out "$RUN/ct-s390x-$padding.bin" || fail "$padding encryption on s390x failed"
  host_openssl pkeyutl -decrypt -inkey "$RUN/key-2048.pem" "${pad_opts[@]}" \
    -in "$RUN/ct-s390x-$padding.bin" -out "$RUN/pt-host-$padding.bin" \
    || fail "the host cannot decrypt the s390x $padding ciphertext"
  cmp -s "$secret" "$RUN/pt-host-$padding.bin" \
    || fail "the host's decryption of the s390x $padding ciphertext is not the plaintext"
  # Encrypted on the host, decrypted on s390x.
  host_openssl pkeyutl -encrypt -pubin -inkey "$RUN/pub-2048.pem" "${pad_opts[@]}" \
    -in "$secret" -out "$RUN/ct-host-$padding.bin"
  s390x_openssl pkeyutl -decrypt -inkey "$RUN/key-2048.pem" "${pad_opts[@]}" \
    -in "$RUN/ct-host-$padding.bin" -out "$RUN/pt-s390x-$padding.bin" \
    || fail "s390x cannot decrypt the host's $padding ciphertext"
  cmp -s "$secret" "$RUN/pt-s390x-$padding.bin" \
    || fail "s390x's decryption of the host's $padding ciphertext is not the plaintext"
done

step "rustica's counters on the s390x side"
[ -f "$STATS" ] || fail "no rustica counters file: rustica did not run on s390x"
env -u RUSTICA_MODULE "$host_rustica" stats --path "$STATS" >/dev/null \
  || fail "the host's rustica stats cannot read the s390x counters file"
# What this run did on s390x: one key generation, three signatures (2048
# and 4096 PKCS#1 v1.5, 2048 PSS) and two verifications (2048, 4096), and
# per padding one encryption and one decryption. The private operations
# must be counted on libica; the public ones (verification, encryption) run
# in software on every backend (docs/libica.md, "Public operations"); the
# key is rustica's, its prime candidates' Miller-Rabin exponentiations
# made by the real libica's ica_rsa_mod_expo (counted as keygen_modexp,
# below), so it is counted as libica; nothing may fall back or fail.
expected_libica=(1 3 0 0 2)
expected_software=(0 0 2 2 0)
bad=""
for op in 0 1 2 3 4; do
  libica=$(counter "$op" 0); software=$(counter "$op" 1)
  fallback=$(counter "$op" 2); failed=$(counter "$op" 3)
  say "counters: ${ops[$op]} libica=$libica software=$software fallback=$fallback failed=$failed"
  [ "$libica" = "${expected_libica[$op]}" ] && [ "$software" = "${expected_software[$op]}" ] \
    && [ $((fallback + failed)) = 0 ] \
    || bad="$bad ${ops[$op]}(expected libica=${expected_libica[$op]} software=${expected_software[$op]}, others 0)"
done
[ -z "$bad" ] || fail "operations not counted where expected:$bad"
grep -q "backend = libica: libica.so.3" "$RUN/rustica-debug.log" \
  || fail "rustica's debug log does not show libica.so.3 as the backend"
# The key's exponentiations: on libica, none recomputed; software only
# confirmed p and q (FIPS 186-5 Table B.1: 5 rounds each at 2048 bits,
# more when the method turned a prime down).
modexp_libica=$(counter 5 0); modexp_software=$(counter 5 1)
modexp_fallback=$(counter 5 2); modexp_failed=$(counter 5 3)
say "counters: keygen_modexp libica=$modexp_libica software=$modexp_software fallback=$modexp_fallback failed=$modexp_failed"
[ "$modexp_libica" -ge 20 ] && [ "$modexp_software" -ge 10 ] \
  && [ $((modexp_fallback + modexp_failed)) = 0 ] \
  || fail "the key's Miller-Rabin exponentiations were not made on libica"
grep -q "keygen rsa-2048: Miller-Rabin exponentiations: $modexp_libica on libica, 0 recomputed" \
  "$RUN/rustica-debug.log" \
  || fail "rustica's debug log does not give the key's exponentiations on libica"

# Asynchronous offload with the real libica: OpenSSL ASYNC jobs on s390x
# (`speed -async_jobs`, `s_server -async`), each libica call made on one of
# rustica's offload threads while its job pauses. Every private operation
# must be counted on libica, and those speed's timed loop and the TLS
# handshakes ran inside a job as async.
# "libica software fallback failed async" of op-index.
counts() { stat_fields "${ops[$1]}" libica software fallback failed async; }
# Checks the deltas of the private operations (keygen, sign, decrypt)
# since $1 $2 $3 (each "libica software fallback failed async"): signatures
# and decryptions all on libica, key generations (OpenSSL 3.5's speed times
# them too) all on libica (their exponentiations); none failed or fell
# back; at least $4 signatures and $5 decryptions async.
check_async() { # what before-keygen before-sign before-decrypt min-sign-async min-decrypt-async
  local what=$1 op i before now d
  local -a b n
  for i in 0 1 2; do
    op=$((i == 0 ? 0 : (i == 1 ? 1 : 4)))
    before=${2}; [ "$i" = 1 ] && before=$3; [ "$i" = 2 ] && before=$4
    read -r -a b <<<"$before"; read -r -a n <<<"$(counts "$op")"
    say "$what: ${ops[$op]} +$((n[0] - b[0])) libica, +$((n[1] - b[1])) software, +$((n[2] - b[2])) fallback, +$((n[3] - b[3])) failed, +$((n[4] - b[4])) async"
    if [ "$op" = 0 ]; then
      [ $((n[1] - b[1] + n[2] - b[2] + n[3] - b[3])) = 0 ] \
        || fail "$what: key generation counted as software, fallback or failed"
    else
      [ $((n[1] - b[1] + n[2] - b[2] + n[3] - b[3])) = 0 ] \
        || fail "$what: ${ops[$op]} not all on libica"
    fi
    d=$((n[4] - b[4]))
    if [ "$op" = 1 ] && [ "$d" -lt "$5" ]; then fail "$what: only $d signatures async, expected at least $5"; fi
    if [ "$op" = 4 ] && [ "$d" -lt "$6" ]; then fail "$what: only $d decryptions async, expected at least $6"; fi
  done
}

step "openssl speed -async_jobs 8 rsa2048 on s390x (real libica, offload threads)"
bk=$(counts 0) bs=$(counts 1) bd=$(counts 4)
s390x_openssl speed -elapsed -seconds 1 -async_jobs 8 -mr rsa2048 >"$RUN/speed-async.out" 2>&1 \
  || { cat "$RUN/speed-async.out" >&2; fail "openssl speed -async_jobs 8 on s390x failed"; }
# +R1:count:bits:seconds: the timed signatures, all made inside jobs.
loop_signs=$(awk -F: '/^\+R1:/ { print $2; exit }' "$RUN/speed-async.out")
[ -n "$loop_signs" ] && [ "$loop_signs" -gt 0 ] || fail "no +R1 line in speed -mr's output"
say "speed -async_jobs 8: $loop_signs signatures in its timed loop"
check_async "speed -async_jobs 8" "$bk" "$bs" "$bd" "$loop_signs" 0

step "TLS 1.3 and 1.2 handshakes with s390x s_server -async (real libica)"
host_openssl req -x509 -new -key "$RUN/key-2048.pem" -subj /CN=s390x-lane -days 2 \
  -out "$RUN/cert-2048.pem" 2>/dev/null
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
bk=$(counts 0) bs=$(counts 1) bd=$(counts 4)
# `exec` in the background subshell, so that $! is qemu's own pid: killing
# the subshell of a plain `s390x_openssl ... &` left the emulated server
# running after the lane (one per part, listening, for good).
(exec_s390x_openssl s_server -async -accept "$port" -cert "$RUN/cert-2048.pem" -key "$RUN/key-2048.pem" \
  -www -quiet </dev/null >"$RUN/s_server.out" 2>&1) &
server=$!
for _ in $(seq 100); do
  python3 -c "import socket; socket.create_connection(('127.0.0.1',$port),0.2)" 2>/dev/null && break
  sleep 0.2
done
# TLS 1.3: an RSA-PSS signature; TLS 1.2 with RSA key exchange: a PKCS#1
# v1.5 decryption of the premaster secret.
tls_ok=1
for proto in "-tls1_3" "-tls1_2 -cipher AES128-GCM-SHA256"; do
  # shellcheck disable=SC2086
  echo "GET / HTTP/1.0" | host_openssl s_client -connect "127.0.0.1:$port" $proto -brief \
    -ign_eof >"$RUN/s_client.out" 2>&1 || true
  grep -q "CONNECTION ESTABLISHED" "$RUN/s_client.out" || { tls_ok=0; cat "$RUN/s_client.out" >&2; }
done
kill "$server" 2>/dev/null || true
wait "$server" 2>/dev/null || true
[ "$tls_ok" = 1 ] || fail "a TLS handshake with the s390x s_server -async failed"
check_async "s_server -async" "$bk" "$bs" "$bd" 1 1
# The way off the ibmca ENGINE, on Debian's own engine configuration: the
# sample openssl-ibmca installs (what its README.Debian tells sites to put
# in openssl.cnf), migrated by `rustica config --from-engine` (the host's
# rustica command, writing for the s390x module), must load rustica on
# s390x with no engine left and sign on libica.
step "rustica config --from-engine on Debian's openssl-ibmca sample (s390x)"
if ! ls "$APTDIR"/debs/openssl-ibmca_*.deb >/dev/null 2>&1; then
  fetch_deb openssl-ibmca || die "could not download Debian's s390x openssl-ibmca"
fi
ibmca_deb=$(ls "$APTDIR"/debs/openssl-ibmca_*.deb | head -n1)
rm -rf "$RUN/ibmca" && dpkg -x "$ibmca_deb" "$RUN/ibmca"
sample=$RUN/ibmca/usr/share/doc/openssl-ibmca/examples/openssl.cnf.sample
[ -f "$sample" ] || die "openssl-ibmca has no openssl.cnf.sample"
grep -q "^engines *= *" "$sample" || die "Debian's sample loads no engine"
env -u RUSTICA_MODULE "$host_rustica" config --from-engine "$sample" --module "$LOADED_MODULE" \
  --backend libica --libica libica.so.3 --no-check --out "$RUN/from-engine.cnf" 2>"$RUN/from-engine.log" \
  || { cat "$RUN/from-engine.log" >&2; fail "rustica config --from-engine refused Debian's sample"; }
sed 's/^/s390x-lane:   /' "$RUN/from-engine.log" >&2
grep -q "^engines *=" "$RUN/from-engine.cnf" && fail "the migrated file still loads an engine"
from_engine() {
  env -u RUSTICA_BACKEND -u RUSTICA_LIBICA -u RUSTICA_DEBUG \
    OPENSSL_CONF="$RUN/from-engine.cnf" RUSTICA_STATS_PATH="$RUN/stats-from-engine" LIBICA_STATS_MODE=0 \
    qemu-s390x-static -L "$SYSROOT" "$OPENSSL_BIN" "$@"
}
from_engine list -providers | grep -q rustica || fail "the migrated file does not load rustica on s390x"
from_engine dgst -sha256 -sign "$RUN/key-2048.pem" -out "$RUN/sig-from-engine.bin" "$RUN/doc.bin" \
  || fail "signing under the migrated file failed on s390x"
cmp -s "$RUN/sig-from-engine.bin" "$RUN/sig-2048.bin" || fail "the signature under the migrated file differs"
saved_stats=$STATS; STATS=$RUN/stats-from-engine
signed=$(counter 1 0); STATS=$saved_stats
[ "$signed" = 1 ] || fail "the signature under the migrated file was not counted on libica ($signed)"
say "from-engine: Debian's sample migrated; rustica loaded on s390x, 1 signature on libica, identical to the earlier one"
libica_deb=$(ls "$APTDIR"/debs/libica3_*.deb 2>/dev/null | head -n1)
libica_pkg=unknown
[ -n "$libica_deb" ] && libica_pkg=$(dpkg-deb -f "$libica_deb" Version)

# The workshop's setup as a third side: stock OpenSSL, rustica and Debian's
# ibmca engine on the same libica, then on the emulated adapter; facts
# checked against docs/comparison/ (S390X_LANE_RECORD=1 records them
# instead; workshop/scripts/comparison.py renders docs/comparison.md). Debian's
# engine needs ENGINE support, so not on OpenSSL 4.0.
if [ "$MODE" = build ] && [ "$RELEASE" != openssl-4.0 ]; then
  step "three sides: stock, rustica, the ibmca engine (scripts/s390x-three-sides.sh)"
  # Over the emulated adapter's 4096 bits; made once (seconds to a minute).
  key8192=$LANE/key-8192.pem
  if [ ! -s "$key8192" ]; then
    host_openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:8192 -out "$key8192.new" 2>/dev/null \
      && mv "$key8192.new" "$key8192" || die "could not generate the 8192-bit key"
  fi
  cp "$key8192" "$RUN/key-8192.pem"
  speed=""; [ -n "${S390X_SPEED:-}${S390X_LANE_RECORD:-}" ] && speed=1
  THREE_SIDES_SPEED=$speed RUSTICA_HOST_COMMAND=$host_rustica scripts/s390x-three-sides.sh --release "$RELEASE" --sysroot "$SYSROOT" \
    --module "$LOADED_MODULE" --engine-deb "$ibmca_deb" --emulator "$BUILD_DIR/$TARGET/release/libica_emu.so" \
    --keys "$RUN" --out "$PART/three-sides" --libica-version "$libica_pkg" \
    || fail "the three-sides comparison failed (log: $PART/three-sides/run.log)"
  if [ -n "${S390X_LANE_RECORD:-}" ]; then
    mkdir -p docs/comparison
    cp "$PART/three-sides/facts.tsv" "docs/comparison/$RELEASE.tsv"
    say "recorded docs/comparison/$RELEASE.tsv"
  fi
  workshop/scripts/comparison.py --check-facts "$RELEASE" "$PART/three-sides/facts.tsv" \
    || fail "the three sides no longer behave as docs/comparison.md says"

  # One card for every side: the shared card model answers /dev/z90crypt
  # for stock OpenSSL's own offload, libica's hardware path (B and C) and
  # the engine, through the z90crypt-card interposer (docs/card-model.md).
  step "one card for every side: stock's own offload, rustica, the engine (scripts/s390x-card.sh)"
  cargo build -q -p rustica-card --bin rustica-card || die "building rustica-card failed"
  interposer=$PART/libz90crypt-card.so
  s390x-linux-gnu-gcc -shared -fPIC -O2 -Wall -Wextra -Werror -o "$interposer.new" \
    testbed/card/interposer/z90crypt-card.c testbed/card/interposer/z90crypt-exchange.c \
    testbed/card/interposer/z90crypt-requests.c -ldl && mv "$interposer.new" "$interposer" \
    || die "cross-building the z90crypt-card interposer failed"
  scripts/s390x-card.sh --release "$RELEASE" --sysroot "$SYSROOT" --module "$LOADED_MODULE" \
    --engine-deb "$ibmca_deb" --keys "$RUN" --out "$PART/card" --card "$REPO/target/debug/rustica-card" \
    --interposer "$interposer" --rustica "$host_rustica" \
    || fail "the sides on one card failed (log: $PART/card/run.log)"
  if [ -n "${S390X_LANE_RECORD:-}" ]; then
    cp "$PART/card/facts.tsv" "docs/comparison/$RELEASE-card.tsv"
    say "recorded docs/comparison/$RELEASE-card.tsv"
  fi
  workshop/scripts/comparison.py --check-facts "$RELEASE-card" "$PART/card/facts.tsv" \
    || fail "the sides on one card no longer behave as docs/comparison.md says"
  # With S390X_CARD_MAINT=1: one server per side across a card outage.
  if [ -s "$PART/card/maint-facts.tsv" ]; then
    if [ -n "${S390X_LANE_RECORD:-}" ]; then
      cp "$PART/card/maint-facts.tsv" "docs/comparison/$RELEASE-card-maint.tsv"
      say "recorded docs/comparison/$RELEASE-card-maint.tsv"
    fi
    workshop/scripts/comparison.py --check-facts "$RELEASE-card-maint" "$PART/card/maint-facts.tsv" \
      || fail "the sides across a card outage no longer behave as docs/comparison.md says"
  fi
  # The lab itself on that card, where its users run it (Debian 13: stock
  # 3.5 offloads by itself): every side's card requests per operation
  # from the kernel's counters in the root's /sys, wall and CPU per
  # operation (scripts/s390x-card-lab.sh).
  if [ "$RELEASE" = stable ]; then
    step "rustica lab on the card: A stock 3.5's own offload, B rustica, C the engine (scripts/s390x-card-lab.sh)"
    scripts/s390x-card-lab.sh --sysroot "$SYSROOT" --module "$LOADED_MODULE" --engine-deb "$ibmca_deb" \
      --out "$PART/card-lab" --card "$REPO/target/debug/rustica-card" --interposer "$interposer" \
      --rustica "$host_rustica" || fail "the lab on the card failed (report: $PART/card-lab/lab/report.md)"
    if [ -n "${S390X_LANE_RECORD:-}" ]; then
      cp "$PART/card-lab/facts.tsv" "docs/comparison/$RELEASE-card-lab.tsv"
      say "recorded docs/comparison/$RELEASE-card-lab.tsv"
    fi
    workshop/scripts/comparison.py --check-facts "$RELEASE-card-lab" "$PART/card-lab/facts.tsv" \
      || fail "the lab on the card no longer counts what docs/comparison/$RELEASE-card-lab.tsv says"
  fi
fi

say "versions: $(s390x_openssl version); libica3 package $libica_pkg;" \
    "rustica: $(grep -m1 -o 'backend = libica: [^;]*' "$RUN/rustica-debug.log")"
step "OK: rustica on s390x (big-endian, $(s390x_openssl version | awk '{print "OpenSSL", $2}'), Debian ${RELEASE/openssl-4.0/stable} userland) with the real libica 3 signs, verifies, encrypts and decrypts"
