#!/usr/bin/env bash
# Runs ember's main demo (installs what is missing first): torchvision's
# MobileNetV2 exported from PyTorch to ONNX, converted with `ember convert`,
# run with `ember run`, its top-5 classes printed and compared with PyTorch.
# The tensor API tour: bazel run //examples/tensor_tour
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh
bazel build //:ember //examples/classify
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
bash examples/classify/classify_pipeline.sh bazel-bin/converter/cli/ember_cli \
  bazel-bin/examples/classify/classify examples/classify/export_mobilenet.py "$work"
