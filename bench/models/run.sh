#!/usr/bin/env bash
# ember vs ONNX Runtime on mobilenet_v2, resnet18, a 2-layer transformer
# encoder, MobileNetV3-Large and LR-ASPP segmentation (export_vision.py)
# (latency at 1 and 2 threads, batch 1) and a BERT-style sentence
# encoder (MiniLM-L6 sized, random weights: export_bert.py; batch 1 and 8, seq
# 128), plus load time and peak RSS vs model size (mlp too). Not part of CI. Usage, from the repository root:
#     bash bench/models/run.sh [OUT_DIR]          (default /tmp/ember_bench_models)
#     EMBER_BASELINE=/path/to/old/ember_cli bash bench/models/run.sh   (before/after a change)
#     ROUNDS=3 ITERS=20 ...: alternating rounds (with a baseline or int8) and timed runs per measurement
#     INT8_ONLY=1 bash bench/models/run.sh: only the dynamic int8 rows (below)
# Then dynamic int8: the BERT-style encoder through `ember convert --quantize
# dynamic-int8` (int8 weights per output channel, activations per tensor) vs the
# same ONNX model through ORT's quantize_dynamic(per_channel=True,
# reduce_range=False), and vs ember's fp32 model, in alternating rounds, plus the
# outputs' max abs differences; rows *_rr: weights within [-64, 64] in both
# (--reduce-range, reduce_range=True); and MobileNetV2, ResNet-18 and
# MobileNetV3 with their convolutions quantized too (--quantize-ops Conv,Gemm;
# quantize_dynamic's default op types, ConvInteger in ORT).
# Needs network access once, to install onnxruntime into bench/.venv, and
# onnxruntime, onnx and ml_dtypes into bench/.venv-ort (ORT's quantization tool
# needs a newer onnx than Debian's; bench/quant uses the same venv).
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=${1:-/tmp/ember_bench_models}
VENV=bench/.venv
QVENV=bench/.venv-ort

# A venv that sees Debian's torch/torchvision/onnx (system site packages) plus onnxruntime.
if [ ! -x "$VENV/bin/python" ]; then
  /usr/bin/python3 -m venv --system-site-packages "$VENV"
fi
"$VENV/bin/python" -c "import onnxruntime" 2>/dev/null || "$VENV/bin/pip" install -q onnxruntime

# The same exports the conformance test uses (seeded, random weights).
mkdir -p "$OUT"
/usr/bin/python3 -W ignore tests/golden/model_zoo.py "$OUT" --only mlp,mobilenet_v2,resnet18,transformer >/dev/null
/usr/bin/python3 -W ignore bench/models/export_bert.py "$OUT"
/usr/bin/python3 -W ignore bench/models/export_vision.py "$OUT"

# ember: convert with the CLI (its `bench --json` is run by compare.py).
bazel build //converter/cli:ember_cli >/dev/null 2>&1
EMBER=bazel-bin/converter/cli/ember_cli
for m in mlp mobilenet_v2 resnet18 transformer bert mobilenet_v3 lraspp; do
  "$EMBER" convert "$OUT/$m.onnx" -o "$OUT/$m.ember" >/dev/null
done
# The torchvision models' outputs against torch's (max abs difference).
for m in mobilenet_v3 lraspp; do
  mkdir -p "$OUT/run_$m"
  "$EMBER" run "$OUT/$m.ember" -i "input=$OUT/$m.input.npy" -d "$OUT/run_$m" >/dev/null
  /usr/bin/python3 -c "import numpy as np, sys; a, b = np.load(sys.argv[2]), np.load(sys.argv[3])
print(f'{sys.argv[1]}: ember vs torch max abs diff {np.abs(a - b).max():.3g} (max |y| {np.abs(b).max():.3g})')" \
    "$m" "$OUT/run_$m/output.npy" "$OUT/$m.out.npy"
done

# Dynamic int8: ember's converter and ORT's quantize_dynamic, the same scheme
# (int8 weights per output channel, uint8 activations per tensor, full range).
"$EMBER" convert "$OUT/bert.onnx" -o "$OUT/bert_int8.ember" --quantize dynamic-int8 >/dev/null
"$EMBER" convert "$OUT/bert.onnx" -o "$OUT/bert_int8_rr.ember" --quantize dynamic-int8 --reduce-range >/dev/null
# The CNNs with their convolutions quantized too (quantize_dynamic's defaults include Conv).
for m in mobilenet_v2 resnet18 mobilenet_v3; do
  "$EMBER" convert "$OUT/$m.onnx" -o "$OUT/${m}_int8.ember" --quantize dynamic-int8 --quantize-ops Conv,Gemm >/dev/null
done
if [ ! -x "$QVENV/bin/python" ]; then
  /usr/bin/python3 -m venv "$QVENV"
  "$QVENV/bin/pip" install -q onnxruntime onnx ml_dtypes
fi
"$QVENV/bin/python" -c "
import sys
from onnxruntime.quantization import QuantType, quantize_dynamic
for rr, out in ((False, sys.argv[2]), (True, sys.argv[3])):
    quantize_dynamic(sys.argv[1], out, weight_type=QuantType.QInt8, per_channel=True, reduce_range=rr)
for m in ('mobilenet_v2', 'resnet18', 'mobilenet_v3'):
    quantize_dynamic(f'{sys.argv[4]}/{m}.onnx', f'{sys.argv[4]}/{m}_int8.onnx', weight_type=QuantType.QInt8,
                     per_channel=True)
" "$OUT/bert.onnx" "$OUT/bert_int8.onnx" "$OUT/bert_int8_rr.onnx" "$OUT" 2>/dev/null
if [ -n "${INT8_ONLY:-}" ]; then
  exec "$VENV/bin/python" bench/models/compare.py --dir "$OUT" --ember "$EMBER" --int8 --threads 1,2 \
    --rounds "${ROUNDS:-5}" --iterations "${ITERS:-50}"
fi

# EMBER_BASELINE=OLD_BIN (an ember_cli built from an earlier commit): both builds
# against ORT in alternating rounds, the median of per-round ratios. The
# baseline runs models it converted itself (OUT/baseline), so converter
# changes count in the comparison too.
if [ -n "${EMBER_BASELINE:-}" ]; then
  mkdir -p "$OUT/baseline"
  for m in mobilenet_v2 resnet18 transformer bert mobilenet_v3 lraspp; do
    "$EMBER_BASELINE" convert "$OUT/$m.onnx" -o "$OUT/baseline/$m.ember" >/dev/null
  done
  exec "$VENV/bin/python" bench/models/compare.py --dir "$OUT" --ember "$EMBER" --baseline "$EMBER_BASELINE" \
    --baseline-dir "$OUT/baseline" --threads 1,2 --rounds "${ROUNDS:-5}" --iterations "${ITERS:-50}"
fi
"$VENV/bin/python" bench/models/compare.py --dir "$OUT" --ember "$EMBER" --threads 1,2 --iterations "${ITERS:-50}"
echo
"$VENV/bin/python" bench/models/compare.py --dir "$OUT" --ember "$EMBER" --int8 --threads 1,2 \
  --rounds "${ROUNDS:-5}" --iterations "${ITERS:-50}"
