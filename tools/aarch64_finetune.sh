#!/usr/bin/env bash
# `ember finetune` on aarch64: the fine-tuning demo (examples/finetune_digits)
# with the runtime-only ember_run cross-built for aarch64 (--config=aarch64)
# doing the fine-tuning under qemu; the host's ember_cli converts. Fails when
# the aarch64 run's accuracy differs from PyTorch's by more than 0.5 points.
#   tools/aarch64_finetune.sh [WORK_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh
bazel build //converter/cli:ember_cli
bazel build --config=aarch64 //converter/cli:ember_run
host=$(bazel info bazel-bin)/converter/cli/ember_cli
arm=$(bazel info --config=aarch64 bazel-bin)/converter/cli/ember_run
file -L "$arm" | grep -q 'ARM aarch64' || { echo "aarch64_finetune: $arm is not an aarch64 binary" >&2; exit 1; }
work="${1:-$(mktemp -d)}"
EMBER_FINETUNE="/usr/bin/qemu-aarch64 -L /usr/aarch64-linux-gnu $arm" \
  bash examples/finetune_digits/finetune_pipeline.sh "$host" examples/finetune_digits/prepare.py "$work"
