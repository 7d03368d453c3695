#!/usr/bin/env bash
# ember vs ONNX Runtime on mobilenet_v2, resnet18, a 2-layer transformer
# encoder (latency at 1 and 2 threads, batch 1) and a BERT-style sentence
# encoder (MiniLM-L6 sized, random weights: export_bert.py; batch 1 and 8, seq
# 128), plus load time and peak RSS vs model size (mlp too). Not part of CI. Usage, from the repository root:
#     bash bench/models/run.sh [OUT_DIR]          (default /tmp/ember_bench_models)
#     EMBER_BASELINE=/path/to/old/ember_cli bash bench/models/run.sh   (before/after a change)
#     ROUNDS=3 ITERS=20 ...: alternating rounds (with a baseline) and timed runs per measurement
# Needs network access once, to install onnxruntime into bench/.venv.
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=${1:-/tmp/ember_bench_models}
VENV=bench/.venv

# A venv that sees Debian's torch/torchvision/onnx (system site packages) plus onnxruntime.
if [ ! -x "$VENV/bin/python" ]; then
  /usr/bin/python3 -m venv --system-site-packages "$VENV"
fi
"$VENV/bin/python" -c "import onnxruntime" 2>/dev/null || "$VENV/bin/pip" install -q onnxruntime

# The same exports the conformance test uses (seeded, random weights).
mkdir -p "$OUT"
/usr/bin/python3 -W ignore tests/golden/model_zoo.py "$OUT" --only mlp,mobilenet_v2,resnet18,transformer >/dev/null
/usr/bin/python3 -W ignore bench/models/export_bert.py "$OUT"

# ember: convert with the CLI (its `bench --json` is run by compare.py).
bazel build //converter/cli:ember_cli >/dev/null 2>&1
EMBER=bazel-bin/converter/cli/ember_cli
for m in mlp mobilenet_v2 resnet18 transformer bert; do
  "$EMBER" convert "$OUT/$m.onnx" -o "$OUT/$m.ember" >/dev/null
done

# EMBER_BASELINE=OLD_BIN (an ember_cli built from an earlier commit): both builds
# against ORT in alternating rounds, the median of per-round ratios. The
# baseline runs models it converted itself (OUT/baseline), so converter
# changes count in the comparison too.
if [ -n "${EMBER_BASELINE:-}" ]; then
  mkdir -p "$OUT/baseline"
  for m in mobilenet_v2 resnet18 transformer bert; do
    "$EMBER_BASELINE" convert "$OUT/$m.onnx" -o "$OUT/baseline/$m.ember" >/dev/null
  done
  exec "$VENV/bin/python" bench/models/compare.py --dir "$OUT" --ember "$EMBER" --baseline "$EMBER_BASELINE" \
    --baseline-dir "$OUT/baseline" --threads 1,2 --rounds "${ROUNDS:-5}" --iterations "${ITERS:-50}"
fi
"$VENV/bin/python" bench/models/compare.py --dir "$OUT" --ember "$EMBER" --threads 1,2 --iterations "${ITERS:-50}"
