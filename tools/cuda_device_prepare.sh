#!/usr/bin/env bash
# Builds here what the GPU machine runs (tools/cuda_device_check.sh) into the
# gitignored .device/ (at most 60 MiB; the device tool carries it):
#   .device/bin/cuda_device_tests.xz  the CUDA kernel suite, backend, executor and training
#                                     tests (--config=cuda)
#   .device/bin/ember_run.xz          the runtime-only `ember` CLI (run, bench, devices, inspect)
#   .device/zoo/NAME.ember         every model zoo case (tests/golden/model_zoo.py) converted here,
#                                  with NAME.in*.npy inputs and NAME.out*.npy PyTorch outputs and
#                                  the manifest (resnet18 left out: 47 MB)
#   .device/torch_bench.py         PyTorch CUDA eager timing of the same architectures
#   .device/torch_amp.py           PyTorch's torch.amp loop that tests/cuda/torch_amp_test.cc follows
# Binaries are cc_binary targets (no Bazel runfiles) with static cudart; cuBLAS
# is opened at run time from the machine's own install. They are stripped and
# xz-compressed (each carries the kernels' fatbin: 38 MB, 3.5 MB compressed);
# tools/cuda_device_check.sh unpacks them with Python's lzma.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh >/dev/null

rm -rf .device
mkdir -p .device/bin .device/zoo
bazel build --config=cuda --config=ci //tests:cuda_device_tests //converter/cli:ember_run
for bin in tests/cuda_device_tests converter/cli/ember_run; do
  strip -o ".device/bin/${bin##*/}" "bazel-bin/$bin"
  python3 -c 'import lzma, sys; open(sys.argv[1] + ".xz", "wb").write(lzma.compress(open(sys.argv[1], "rb").read(), preset=6))' \
    ".device/bin/${bin##*/}"
  rm -f ".device/bin/${bin##*/}"
done
bazel build --config=ci //tests/golden:model_zoo //:ember
zoo_dir=bazel-bin/tests/golden/model_zoo
while read -r name rest; do
  [[ "$name" == resnet18* ]] && continue
  onnx=$(sed -n 's/.*file=\([^ ]*\).*/\1/p' <<<"$rest")
  if ! bazel-bin/converter/cli/ember_cli convert "$zoo_dir/$onnx" -o ".device/zoo/$name.ember" >/dev/null 2>&1; then
    echo "cuda_device_prepare: $name does not convert; left out" >&2
    continue
  fi
  cp -f "$zoo_dir/$name".in*.npy "$zoo_dir/$name".out*.npy .device/zoo/ 2>/dev/null || true
  echo "$name $rest" >>.device/zoo/manifest.txt
done <"$zoo_dir/manifest.txt"
chmod -R u+w .device
cp -f bench/cuda/torch_bench.py bench/cuda/torch_amp.py bench/cuda/zoo_check.py tests/golden/model_zoo.py tests/golden/model_zoo_attn.py tests/golden/model_zoo_spatial.py .device/
cp -f tools/cuda_device_check.sh .device/
size=$(du -sm .device | cut -f1)
echo "cuda_device_prepare: .device is ${size} MiB"
(( size <= 60 )) || { echo "cuda_device_prepare: .device is over 60 MiB" >&2; exit 1; }
