#!/usr/bin/env bash
# The GPU check, run on the GPU machine from the repository root after
# tools/cuda_device_prepare.sh filled .device/ here (see the device tool's
# README): `bash tools/cuda_device_check.sh [quick]`. At most 8 minutes; each
# step has its own cap and is logged as it goes (to $OUT/cuda_check.log when
# the device tool gives an $OUT, else .device/check.log), so a step that hangs
# or a session that ends early still leaves what ran.
#   1 environment: GPU, driver, cuBLAS found, ember's view of the devices
#   2 the CUDA kernel suite (every kernels/cuda entry against the reference on
#     fresh random inputs), the backend, executor and training tests, and an
#     AMP loop against PyTorch's torch.amp (bench/cuda/torch_amp.py records it)
#   --- `quick` stops here ---
#   3 every converted zoo model on cuda vs PyTorch's outputs: fp32 within the
#     manifest's tolerances (1e-4), fp16 and bf16 within 1e-2
#   4 compute-sanitizer memcheck over the backend tests (small shapes)
#   5 latency vs PyTorch CUDA eager on the same architectures, batch 1 and 32
set -uo pipefail
cd "$(dirname "$0")/.."
[[ -d .device/bin ]] || { echo "no .device/: run tools/cuda_device_prepare.sh on the build machine first" >&2; exit 2; }
for packed in .device/bin/*.xz; do  # tools/cuda_device_prepare.sh compresses the binaries
  [[ -e "$packed" ]] || continue
  python3 -c 'import lzma, sys; open(sys.argv[1][:-3], "wb").write(lzma.decompress(open(sys.argv[1], "rb").read()))' "$packed" &&
    chmod +x "${packed%.xz}" && rm -f "$packed"
done
LOG=${OUT:-.device}/cuda_check.log
mkdir -p "$(dirname "$LOG")"
: >"$LOG"
say() { echo "$*" | tee -a "$LOG"; }
step() {  # step NAME SECONDS CMD...: runs CMD capped, its output logged as it goes
  local name=$1 cap=$2
  shift 2
  say "=== $name (cap ${cap}s) ==="
  local t0=$SECONDS
  timeout -k 5 "$cap" "$@" 2>&1 | tee -a "$LOG"
  local rc=${PIPESTATUS[0]}
  say "=== $name: exit $rc in $((SECONDS - t0)) s ==="
  return "$rc"
}
failed=0

# --- 1. environment -------------------------------------------------------------
cublas_dir=$(ldconfig -p 2>/dev/null | sed -n 's/.*libcublas\.so\.13 .*=> \(.*\)\/libcublas\.so\.13$/\1/p' | head -1)
if [[ -z "$cublas_dir" ]]; then
  cublas_dir=$(python3 -c 'import nvidia.cublas, os; print(os.path.join(os.path.dirname(nvidia.cublas.__file__), "lib"))' 2>/dev/null || true)
fi
[[ -z "$cublas_dir" ]] && cublas_dir=$(dirname "$(find / -name 'libcublas.so.13' -print -quit 2>/dev/null)" 2>/dev/null)
export LD_LIBRARY_PATH="${cublas_dir}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
say "cuBLAS from: ${cublas_dir:-not found}"
step environment 30 bash -c 'nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; .device/bin/ember_run devices' || failed=1

# --- 2. kernel suite and backend tests ----------------------------------------------
step torch-amp 60 python3 .device/torch_amp.py .device/torch_amp || failed=1
export EMBER_TORCH_AMP_DIR=.device/torch_amp  # tests/cuda/torch_amp_test.cc follows that loop
step kernel-suite 200 .device/bin/cuda_device_tests || failed=1
if [[ "${1:-}" == quick ]]; then
  say "quick: steps 1-2 only; failed=$failed"
  exit "$failed"
fi

# --- 3. the zoo on cuda vs PyTorch --------------------------------------------------
step zoo 200 python3 .device/zoo_check.py --ember .device/bin/ember_run --zoo .device/zoo --out .device/out || failed=1

# --- 4. memcheck --------------------------------------------------------------------
if command -v compute-sanitizer >/dev/null; then
  step memcheck 60 compute-sanitizer --tool memcheck --error-exitcode 1 .device/bin/cuda_device_tests \
    --test-case='*allocator*,*ops on CUDA*,*to(cuda)*' || failed=1
else
  say "memcheck: compute-sanitizer not found"
fi

# --- 5. latency vs PyTorch CUDA eager -----------------------------------------------
step bench 120 python3 .device/torch_bench.py --ember .device/bin/ember_run --zoo .device/zoo || failed=1
say "cuda_device_check: failed=$failed"
exit "$failed"
