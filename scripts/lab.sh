#!/usr/bin/env bash
# The main job: builds rustica in release mode and runs the A/B RSA lab
# (quick settings unless arguments say otherwise, e.g. --full).
# shellcheck source-path=SCRIPTDIR source-path=.
. "$(dirname "$0")/lib/common.sh"
scripts/setup.sh build lab
scripts/build.sh
exec target/release/rustica lab "$@"
