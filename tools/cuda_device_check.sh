#!/usr/bin/env bash
# The GPU check, run on the GPU machine from the repository root after
# tools/cuda_device_prepare.sh filled .device/ here (see the device tool's
# README): `bash tools/cuda_device_check.sh [quick]`. At most 8 minutes; each
# step has its own cap and is logged as it goes (to $OUT/cuda_check.log when
# the device tool gives an $OUT, else .device/check.log), so a step that hangs
# or a session that ends early still leaves what ran.
#   1 environment: GPU, driver, cuBLAS found, ember's view of the devices
#   2 the CUDA kernel suite (every kernels/cuda entry against the reference on
#     fresh random inputs) and the backend tests
#   --- `quick` stops here ---
#   3 every converted zoo model on cuda vs PyTorch's outputs: fp32 within the
#     manifest's tolerances (1e-4), fp16 and bf16 within 1e-2
#   4 compute-sanitizer memcheck over the backend tests (small shapes)
#   5 latency vs PyTorch CUDA eager on the same architectures, batch 1 and 32
set -uo pipefail
cd "$(dirname "$0")/.."
[[ -d .device/bin ]] || { echo "no .device/: run tools/cuda_device_prepare.sh on the build machine first" >&2; exit 2; }
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
step kernel-suite 240 .device/bin/cuda_device_tests || failed=1
if [[ "${1:-}" == quick ]]; then
  say "quick: steps 1-2 only; failed=$failed"
  exit "$failed"
fi

# --- 3. the zoo on cuda vs PyTorch --------------------------------------------------
zoo_check() {
  local bad=0 n=0
  while read -r name rest; do
    local ins=() k=0
    local in_names
    in_names=$(sed -n 's/.*inputs=\([^ ]*\).*/\1/p' <<<"$rest" | tr ',' ' ')
    for input in $in_names; do ins+=(--input "$input=.device/zoo/$name.in$k.npy"); k=$((k + 1)); done
    for precision in fp32 fp16 bf16; do
      rm -rf ".device/out/$name.$precision"
      if ! .device/bin/ember_run run ".device/zoo/$name.ember" "${ins[@]}" --device cuda --precision "$precision" \
          -d ".device/out/$name.$precision" >/dev/null 2>".device/out.err"; then
        say "  $name $precision: FAILED: $(tail -1 .device/out.err)"; bad=$((bad + 1)); continue
      fi
      python3 - "$name" "$precision" "$rest" <<'PY' | tee -a "$LOG" || bad=$((bad + 1))
import sys, glob, numpy as np
name, precision, rest = sys.argv[1:4]
kv = dict(f.split("=", 1) for f in rest.split() if "=" in f)
rtol, atol = (float(kv.get("rtol", 1e-4)), float(kv.get("atol", 1e-4))) if precision == "fp32" else (1e-2, 1e-2)
worst, ok = 0.0, True
for k, out in enumerate(kv["outputs"].split(",")):
    want = np.load(f".device/zoo/{name}.out{k}.npy")
    got = np.load(f".device/out/{name}.{precision}/{out}.npy")
    if want.dtype.kind == "f":
        scale = 1.0 if precision == "fp32" else max(1.0, float(np.abs(want).max(initial=0)))
        err = float(np.abs(got.astype(np.float64) - want).max(initial=0))
        worst = max(worst, err)
        ok &= bool(np.allclose(got, want, rtol=rtol, atol=atol * scale))
    else:
        ok &= bool(np.array_equal(got, want))
print(f"  {name} {precision}: {'ok' if ok else 'MISMATCH'} (max abs diff {worst:.3g})")
sys.exit(0 if ok else 1)
PY
    done
    n=$((n + 1))
  done <.device/zoo/manifest.txt
  say "zoo: $n models x 3 precisions, $bad failed"
  return $((bad > 0))
}
mkdir -p .device/out
step zoo 150 bash -c "$(declare -f say zoo_check); LOG='$LOG'; zoo_check" || failed=1

# --- 4. memcheck --------------------------------------------------------------------
if command -v compute-sanitizer >/dev/null; then
  step memcheck 90 compute-sanitizer --tool memcheck --error-exitcode 1 .device/bin/cuda_device_tests \
    --test-case='*allocator*,*ops on CUDA*,*to(cuda)*' || failed=1
else
  say "memcheck: compute-sanitizer not found"
fi

# --- 5. latency vs PyTorch CUDA eager -----------------------------------------------
step bench 120 python3 .device/torch_bench.py --ember .device/bin/ember_run --zoo .device/zoo || failed=1
say "cuda_device_check: failed=$failed"
exit "$failed"
