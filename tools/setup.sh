#!/usr/bin/env bash
# Installs every Debian package ember needs. Idempotent and quiet: packages
# already present are skipped, so a second run does nothing.
set -euo pipefail

PACKAGES=(
  # build
  bazel-bootstrap g++ python3
  # model format (issue 4 onward)
  libflatbuffers-dev flatbuffers-compiler
  # converter and the `ember` CLI (sha256 of source models from libcrypto)
  libonnx-dev libprotobuf-dev python3-onnx libcli11-dev libssl-dev
  # tests
  doctest-dev
  # golden data from PyTorch (Debian's /usr/bin/python3)
  python3-torch python3-torchvision python3-numpy
  # the digits data set (sklearn ships it) and gzip reading for the training demo
  python3-sklearn zlib1g-dev
  # cross build: aarch64, tests under qemu
  g++-aarch64-linux-gnu qemu-user
  # fuzzing the model loader (libFuzzer)
  clang libclang-rt-14-dev
  # benchmarks
  libbenchmark-dev libopenblas-dev
  # Vulkan backend: headers, shader compiler and validator, lavapipe (Mesa's
  # CPU driver: Vulkan tests run everywhere), the Khronos validation layer
  libvulkan-dev glslc spirv-tools mesa-vulkan-drivers vulkan-validationlayers vulkan-tools
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  log=$(mktemp)
  if ! { apt-get update -qq && apt-get install -y -qq --no-install-recommends "${missing[@]}"; } >"$log" 2>&1; then
    cat "$log" >&2
    exit 1
  fi
  rm -f "$log"
fi
