#!/usr/bin/env bash
# Runs a demo binary as a test: in a scratch directory (demos may write
# files), failing when the demo exits non-zero.
set -euo pipefail
binary="$PWD/$1"
cd "${TEST_TMPDIR:-$(mktemp -d)}"
"$binary"
