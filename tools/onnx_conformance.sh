#!/usr/bin/env bash
# ONNX node conformance: every node test case of the pinned `onnx` wheel,
# converted and run with the `ember` CLI, outputs compared with numpy.
#   tools/onnx_conformance.sh                  full run: report, bench/onnx/README.md
#   tools/onnx_conformance.sh --update         ... and rewrite tools/onnx_conformance_passing.txt
#   tools/onnx_conformance.sh --check [--listed]
#                                              CI: exit 1 when a listed case no longer passes
#                                              (--listed: run only the listed cases)
#   tools/onnx_conformance.sh --only REGEX     a subset (no files written)
# Cases are written once to $EMBER_ONNX_CASES (default /tmp/ember_onnx_cases);
# the venv (tools/.venv-onnx, gitignored) needs PyPI once. $EMBER: a prebuilt CLI.
set -euo pipefail
cd "$(dirname "$0")/.."
ONNX_VERSION=1.23.2
VENV=tools/.venv-onnx

# A venv of its own (no system site packages: the wheel needs a newer numpy than Debian's).
if ! "$VENV/bin/python" -c "import onnx, sys; sys.exit(onnx.__version__ != '$ONNX_VERSION')" 2>/dev/null; then
  echo "onnx_conformance: making $VENV (onnx==$ONNX_VERSION)" >&2
  rm -rf "$VENV"
  /usr/bin/python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q --disable-pip-version-check "onnx==$ONNX_VERSION" numpy
fi

if [[ -z "${EMBER:-}" ]]; then
  bazel build ${BAZEL_FLAGS:-} //:ember >/dev/null 2>&1 || bazel build ${BAZEL_FLAGS:-} //:ember
  EMBER=bazel-bin/converter/cli/ember_cli
fi
exec "$VENV/bin/python" -W ignore tools/onnx_conformance.py --ember "$EMBER" \
  --command "tools/onnx_conformance.sh $*" "$@"
