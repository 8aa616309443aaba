#!/usr/bin/env bash
# Builds the workspace and places the provider module where OpenSSL and the
# `rustica` command look for it: target/<profile>/rustica.so, beside the
# `rustica` binary. Usage: scripts/build.sh [--debug]
set -euo pipefail
cd "$(dirname "$0")/.."
profile=release
args=(--release)
if [ "${1:-}" = "--debug" ]; then profile=debug; args=(); fi
cargo build "${args[@]}" --workspace
# cargo names a cdylib lib<name>.so; OpenSSL loads providers as <name>.so.
# Replaced by a rename, never rewritten in place: a process that has the
# module mapped (a benchmark or lab running beside this build) keeps the
# file it loaded instead of reading a truncated or half-written one.
module=target/$profile/rustica.so
if ! cmp -s "target/$profile/librustica.so" "$module"; then
  cp -f "target/$profile/librustica.so" "$module.new"
  mv -f "$module.new" "$module"
fi
echo "module: $(pwd)/target/$profile/rustica.so"
