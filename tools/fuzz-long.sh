#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The long fuzz run: every libFuzzer target for SECONDS each (default 600), going on from the
# corpus earlier runs kept in build-fuzz/corpus/. Usage: tools/fuzz-long.sh [SECONDS] [fuzz-NAME...]
# tools/test.sh runs the same targets for 20 s each.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-600}
shift || true
exec tools/fuzz.sh "$seconds" "$@"
