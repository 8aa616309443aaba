#!/usr/bin/env bash
# Installs what a part of rustica's work needs on Debian 12, once: the
# Debian packages of the groups asked for and, for `build`, Rust.
# Safe to run repeatedly: it only installs what is missing, and takes
# about a second when everything is there.
#
# Usage: scripts/setup.sh [GROUP...]    (no GROUP: build tests)
#
#   build      compile rustica: libclang (bindgen), OpenSSL's headers,
#              pkg-config, gcc, make, perl; and Rust, at the version of
#              rust-toolchain.toml (see below)
#   lab        the lab's tools beyond OpenSSL: bind9-utils (dnssec-keygen,
#              dnssec-signzone, dnssec-verify: the DNSSEC step) and
#              binutils (nm reads the RSA functions a signer imports)
#   tests      scripts/test.sh: the lab's tools (the harness tests run it),
#              nginx-light, curl and python3 (peers of the system-wide
#              tests), valgrind (tests/e2e/lifecycle.rs and the callgrind stages)
#   openssl    scripts/openssl-build.sh (other OpenSSL releases): curl,
#              xz-utils, make, perl, gcc
#   packaging  scripts/package.sh and package-rpm.sh: debhelper, dpkg-dev,
#              lintian, rpm, rpmlint
#   chroot     the cached Debian 13 chroot (scripts/lib/trixie-chroot.sh):
#              debootstrap
#   s390x      the big-endian lane and its tools (scripts/s390x-lane.sh,
#              scripts/openssl-build.sh VERSION s390x, the interposer's
#              header, workshop/scripts/s390x-count.sh): the cross
#              compiler, qemu-user-static and Debian's dynamic qemu-user
#   metrics    scripts/test-metrics.sh: prometheus-node-exporter,
#              prometheus (with promtool), python3-prometheus-client, curl
#   all        every group (what .ci/run asks for)
#
# Rust, when `cargo` is not found (on PATH or in ~/.cargo/bin), is
# installed for the current user in this order:
#   1. rustup from https://sh.rustup.rs, or its rustup-init binary from
#      static.rust-lang.org checked against its published SHA-256, with
#      --profile minimal, clippy, rustfmt and the toolchain that
#      rust-toolchain.toml names;
#   2. Debian's rustc and cargo, if Debian's version is at least the
#      workspace's rust-version (Debian 12's 1.63 is not);
#   3. otherwise it stops at once (status 2) and prints the one command to
#      run. A `cargo` older than rust-version also stops it that way.
# Exit status: 0 all there, 2 something could not be installed.
# shellcheck source-path=SCRIPTDIR source-path=.
. "$(dirname "$0")/lib/common.sh"

group_packages() {
  case "$1" in
    build) echo libclang-dev libssl-dev openssl pkg-config gcc make perl ;;
    lab) echo bind9-utils binutils ;;
    tests) echo "$(group_packages lab)" nginx-light curl python3 valgrind ;;
    openssl) echo curl xz-utils make perl gcc ;;
    packaging) echo debhelper dpkg-dev lintian rpm rpmlint ;;
    chroot) echo debootstrap ;;
    s390x) echo gcc-s390x-linux-gnu linux-libc-dev-s390x-cross qemu-user-static qemu-user ;;
    metrics) echo prometheus-node-exporter prometheus python3-prometheus-client curl ;;
    *) return 1 ;;
  esac
}
all_groups="build lab tests openssl packaging chroot metrics s390x"

[ $# -gt 0 ] || set -- build tests
groups=()
for g in "$@"; do
  if [ "$g" = all ]; then read -ra words <<<"$all_groups"; groups+=("${words[@]}"); else groups+=("$g"); fi
done
want_rust=0
pkgs=()
for g in "${groups[@]}"; do
  case "$g" in -h|--help) usage; exit 0 ;; esac
  list=$(group_packages "$g") || die "unknown group '$g' (groups: $all_groups all)"
  read -ra words <<<"$list"
  pkgs+=("${words[@]}")
  [ "$g" != build ] || want_rust=1
done
# Rust is installed with curl over https.
if [ "$want_rust" = 1 ] && ! command -v cargo >/dev/null; then
  pkgs+=(curl ca-certificates)
fi

need=()
for pkg in $(printf '%s\n' "${pkgs[@]}" | sort -u); do
  dpkg -s "$pkg" >/dev/null 2>&1 || need+=("$pkg")
done
if [ ${#need[@]} -gt 0 ]; then
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null \
      || die "not root and no sudo; as root run: apt-get install ${need[*]}"
    sudo="sudo"
  fi
  say "installing ${need[*]}"
  $sudo apt-get update -qq || die "apt-get update failed"
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need[@]}" >/dev/null \
    || die "apt-get install ${need[*]} failed"
fi
[ "$want_rust" = 1 ] || exit 0

# --- Rust -----------------------------------------------------------------
toolchain=$(sed -n 's/^channel *= *"\(.*\)"/\1/p' rust-toolchain.toml)
rust_version=$(sed -n 's/^rust-version *= *"\(.*\)"/\1/p' Cargo.toml | head -n 1)
[ -n "$toolchain" ] && [ -n "$rust_version" ] \
  || die "cannot read the channel of rust-toolchain.toml or rust-version of Cargo.toml"
rustup_command="curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs | sh -s -- -y --profile minimal --default-toolchain $toolchain -c clippy -c rustfmt && . \"\$HOME/.cargo/env\""
cargo_env=${CARGO_HOME:-$HOME/.cargo}/env

# True when version $1 is at least version $2 (dotted numbers).
at_least() { [ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -n 1)" = "$2" ]; }

install_rustup() {
  local tmp arch sum rc=0
  tmp=$(mktemp -d) || return 1
  # rustup-init.sh picks the right binary for the machine and checks it.
  if curl --proto '=https' --tlsv1.2 -sSf --connect-timeout 10 --max-time 120 \
       -o "$tmp/rustup-init.sh" https://sh.rustup.rs 2>"$tmp/err"; then
    say "installing Rust $toolchain with rustup (sh.rustup.rs)"
    sh "$tmp/rustup-init.sh" -y --profile minimal --default-toolchain "$toolchain" \
      -c clippy -c rustfmt >&2 || rc=$?
  else
    say "sh.rustup.rs not reachable ($(head -c 200 "$tmp/err")); trying static.rust-lang.org"
    arch=$(uname -m)-unknown-linux-gnu
    local url=https://static.rust-lang.org/rustup/dist/$arch/rustup-init
    if curl --proto '=https' --tlsv1.2 -sSf --connect-timeout 10 --max-time 300 -o "$tmp/rustup-init" "$url" 2>"$tmp/err" \
       && sum=$(curl --proto '=https' --tlsv1.2 -sSf --connect-timeout 10 --max-time 60 "$url.sha256" 2>"$tmp/err"); then
      if [ "$(sha256sum "$tmp/rustup-init" | cut -d' ' -f1)" != "${sum%% *}" ]; then
        say "rustup-init does not match its published SHA-256"
        rc=1
      else
        say "installing Rust $toolchain with rustup (rustup-init from static.rust-lang.org)"
        chmod 0700 "$tmp/rustup-init"
        "$tmp/rustup-init" -y --profile minimal --default-toolchain "$toolchain" \
          -c clippy -c rustfmt >&2 || rc=$?
      fi
    else
      say "static.rust-lang.org not reachable either ($(head -c 200 "$tmp/err"))"
      rc=1
    fi
  fi
  rm -rf "$tmp"
  [ "$rc" = 0 ] && [ -f "$cargo_env" ]
}

if ! command -v cargo >/dev/null; then
  if install_rustup; then
    # shellcheck source=/dev/null
    . "$cargo_env"
  else
    debian=$(apt-cache policy rustc 2>/dev/null | sed -n 's/^ *Candidate: *\([0-9.]*\).*/\1/p')
    if [ -n "$debian" ] && at_least "$debian" "$rust_version"; then
      say "rustup not reachable; installing Debian's rustc $debian and cargo"
      sudo=""
      [ "$(id -u)" -eq 0 ] || sudo="sudo"
      DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq rustc cargo >/dev/null \
        || die "apt-get install rustc cargo failed"
    else
      die "Rust $rust_version or newer is needed; rustup was not reachable and Debian's rustc is ${debian:-not available}${debian:+, too old}. Run this where sh.rustup.rs is reachable, then the command you ran again:
  $rustup_command"
    fi
  fi
fi
command -v cargo >/dev/null || die "cargo is still not on PATH; run: $rustup_command"
have=$(cargo --version 2>/dev/null | awk '{ print $2 }')
[ -n "$have" ] || die "cargo --version failed (with rustup: is toolchain $toolchain installable?); run: $rustup_command"
at_least "${have%%-*}" "$rust_version" \
  || die "cargo $have is older than rust-version $rust_version ($(command -v cargo)); run: $rustup_command"
