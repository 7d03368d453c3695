#!/usr/bin/env bash
# The main demo's pipeline: export MobileNetV2 with PyTorch, `ember convert`,
# `ember run`, compare with PyTorch. tools/demo.sh and classify_demo_test run it.
#   classify_pipeline.sh EMBER CLASSIFY EXPORT_PY [WORK_DIR]
set -euo pipefail
ember=$(realpath "$1")
classify=$(realpath "$2")
export_py=$(realpath "$3")
work="${4:-${TEST_TMPDIR:-$(mktemp -d)}}"
mkdir -p "$work"
cd "$work"

echo "== 1. PyTorch: export torchvision mobilenet_v2 to ONNX, with its output on a fixed image"
/usr/bin/python3 "$export_py" .
echo
echo "== 2. ember convert mobilenet_v2.onnx -o mobilenet_v2.ember"
"$ember" convert mobilenet_v2.onnx -o mobilenet_v2.ember
echo
echo "== 3. ember run mobilenet_v2.ember --input input=image.npy --output-dir out"
"$ember" run mobilenet_v2.ember --input input=image.npy --output-dir out
echo
echo "== 4. top-5 classes by ember, and the difference from PyTorch"
"$classify" out/logits.npy torch_logits.npy
