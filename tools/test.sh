#!/usr/bin/env bash
# Runs every ember test (installs what is missing first). Extra arguments go to
# `bazel test`, e.g. `tools/test.sh --config=asan //tests:core`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh
targets=()
for a in "$@"; do [[ "$a" == //* ]] && targets+=("$a"); done
if ((${#targets[@]} == 0)); then set -- "$@" //...; fi
exec bazel test "$@"
