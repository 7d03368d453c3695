#!/usr/bin/env bash
# One prepared check for a machine with a real GPU and its Vulkan driver:
# the Vulkan devices, then per model ember on the CPU, ember on Vulkan (fp32
# and fp16, --allow-fallback; the fallback column says what ran on the CPU)
# and PyTorch (torch.cuda when available, else the CPU), batch 1, medians.
#     bash bench/vulkan/gpu_check.sh [EMBER_BINARY] [OUT_DIR]
# EMBER_BINARY defaults to bazel-bin/converter/cli/ember_cli (built with bazel
# when missing). Needs /usr/bin/python3 (or $PYTHON) with torch, torchvision
# and onnx to export the models (tests/golden/model_zoo.py). Env: MODELS,
# ITERATIONS (default 50), EMBER_VULKAN_DEVICE (index or name substring).
# Exits non-zero when no Vulkan device is found (the reason is printed).
set -uo pipefail
cd "$(dirname "$0")/../.."
EMBER=${1:-bazel-bin/converter/cli/ember_cli}
OUT=${2:-/tmp/ember_gpu_check}
PY=${PYTHON:-/usr/bin/python3}
MODELS=${MODELS:-mlp,mobilenet_v2,resnet18,transformer}
if [[ ! -x "$EMBER" ]]; then
  bazel build //converter/cli:ember_cli >/dev/null 2>&1 || { echo "cannot build //converter/cli:ember_cli" >&2; exit 1; }
fi
echo "== vulkan devices"
"$EMBER" devices || exit 1
echo "== nvidia-smi"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null || echo "(none)"
echo "== torch"
"$PY" -c "import torch; print(torch.__version__, 'cuda' if torch.cuda.is_available() else 'no cuda')" || true
mkdir -p "$OUT"
"$PY" -W ignore tests/golden/model_zoo.py "$OUT" --only "$MODELS" >/dev/null || { echo "model export failed" >&2; exit 1; }
for m in ${MODELS//,/ }; do
  "$EMBER" convert "$OUT/$m.onnx" -o "$OUT/$m.ember" >/dev/null || exit 1
  echo "== $m: placement"
  "$EMBER" inspect "$OUT/$m.ember" --device vulkan | grep -A1000 "^placement on" | grep -v "^memory plan" | head -20
done
echo "== latency (batch 1, median ms)"
"$PY" bench/vulkan/models.py --dir "$OUT" --ember "$EMBER" --models "$MODELS" --fp16 --torch \
  --iterations "${ITERATIONS:-50}" --warmup 5
