#!/usr/bin/env bash
# Per-model latency of ember's executor on Vulkan vs on the CPU, on lavapipe
# (Mesa's CPU Vulkan driver: it measures overheads and correctness of the
# path, not GPU speed). Batch 1, `ember bench --json`, median. Vulkan runs use
# --allow-fallback: the "fallback nodes" column says how many nodes ran on the
# CPU for lack of a Vulkan kernel. Not part of CI. From the repository root:
#     bash bench/vulkan/models.sh [OUT_DIR]     (default /tmp/ember_bench_vulkan)
# Env: MODELS (default mlp,mobilenet_v2,resnet18,transformer), ITERATIONS (20).
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=${1:-/tmp/ember_bench_vulkan}
MODELS=${MODELS:-mlp,mobilenet_v2,resnet18,transformer}
mkdir -p "$OUT"
/usr/bin/python3 -W ignore tests/golden/model_zoo.py "$OUT" --only "$MODELS" >/dev/null
bazel build //converter/cli:ember_cli >/dev/null 2>&1
EMBER=bazel-bin/converter/cli/ember_cli
for m in ${MODELS//,/ }; do
  "$EMBER" convert "$OUT/$m.onnx" -o "$OUT/$m.ember" >/dev/null
done
export VK_ICD_FILENAMES=${VK_ICD_FILENAMES:-/usr/share/vulkan/icd.d/lvp_icd.x86_64.json}
export MESA_SHADER_CACHE_DISABLE=true
"$EMBER" devices
/usr/bin/python3 bench/vulkan/models.py --dir "$OUT" --ember "$EMBER" --models "$MODELS" --fp16 \
  --iterations "${ITERATIONS:-20}"
