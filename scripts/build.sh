#!/usr/bin/env bash
# Builds the workspace and places the provider module where OpenSSL and the
# `rustica` command look for it: target/<profile>/rustica.so, beside the
# `rustica` binary. Usage: scripts/build.sh [--debug]
# shellcheck source-path=SCRIPTDIR source-path=.
. "$(dirname "$0")/lib/common.sh"
profile=release
args=(--release)
if [ "${1:-}" = "--debug" ]; then profile=debug; args=(); fi
cargo build "${args[@]}" --workspace
# cargo names a cdylib lib<name>.so; OpenSSL loads providers as <name>.so.
# Replaced by a rename, never rewritten in place (scripts/lib/module.sh).
. scripts/lib/module.sh
place_module "target/$profile/librustica.so" "target/$profile/rustica.so"
echo "module: $(pwd)/target/$profile/rustica.so"
