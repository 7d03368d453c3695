#!/usr/bin/env bash
# Runs ember's main demo (installs what is missing first).
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh
exec bazel run //examples/tensor_tour
