#!/usr/bin/env bash
# Drives the `ember` binary: help and bad flags, convert -> inspect -> run on
# the converter's test models with outputs compared to PyTorch, bench (text and
# JSON), --profile, and every input error (exit 1, the message, no output).
#   cli_test.sh EMBER ONNX_DIR REFERENCE_PY
set -uo pipefail
ember="$PWD/$1"
onnx_dir="$PWD/$2"
ref="$PWD/$3"
ft_dir="$PWD/tests/golden/finetune"
py=/usr/bin/python3
tmp="${TEST_TMPDIR:-$(mktemp -d)}"
cd "$tmp"
failures=0

fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }

# run_ember EXPECTED_CODE ARGS...: runs ember; stdout in $out, stderr in $err.
run_ember() {
  local want=$1
  shift
  out=$("$ember" "$@" 2>"$tmp/stderr")
  code=$?
  err=$(cat "$tmp/stderr")
  if [[ "$want" == nonzero ]]; then
    ((code != 0)) || fail "ember $*: exit 0, expected non-zero"
  elif ((code != want)); then
    fail "ember $*: exit $code, expected $want; stderr: $err"
  fi
}
has() {  # has TEXT SUBSTRING
  [[ "$1" == *"$2"* ]] || fail "expected '$2' in: $1"
}
has_line() {  # has_line TEXT REGEX: some line matches
  grep -Eq -- "$2" <<<"$1" || fail "no line matching '$2' in: $1"
}

# --- help and bad flags ------------------------------------------------------------
run_ember 0 --help
for sub in convert inspect run bench; do has "$out" "$sub"; done
run_ember 0 run --help
has "$out" "--output-dir"
has "$out" "--profile"
run_ember nonzero
has "$err" "A subcommand is required"
run_ember nonzero convert "$onnx_dir/mlp_opset13.onnx" -o x.ember --bogus
has "$err" "The following argument was not expected: --bogus"
[[ ! -e x.ember ]] || fail "a bad flag still wrote x.ember"
run_ember nonzero bench m.ember --iterations 0
has "$err" "--iterations"

# --- convert, inspect ------------------------------------------------------------------
run_ember 0 convert "$onnx_dir/mlp_opset13.onnx" -o mlp.ember
has "$out" "ONNX nodes -> 2 ops"
has_line "$out" "^passes: "
has "$out" "weights: 976 bytes"
has_line "$out" "^source: sha256:[0-9a-f]{64}$"
has "$out" "wrote mlp.ember"
[[ -s mlp.ember ]] || fail "mlp.ember not written"

run_ember 0 inspect mlp.ember
has_line "$out" "^model: mlp.ember \([0-9,]+ bytes, format version 1\)$"
has_line "$out" "^  input +float32 +\[batch, 10\]$"
has_line "$out" "^  output +float32 +\[batch, 4\]$"
has_line "$out" "^ops: 2$"
has_line "$out" "^  linear +2$"
has_line "$out" "^parameters: 244 in 4 tensors \(976 bytes\)$"
has_line "$out" "^  float32 +244 \(976 bytes\)$"
has_line "$out" "^trainable: 244 in 4 tensors$"
has_line "$out" "^quantized tensors: none$"
has_line "$out" "^sparse tensors: none$"
has_line "$out" "^  producer: ember"
has_line "$out" "^  source: sha256:"
# The Linear weights (16x10, 4x16) packed once at load as the GEMM's B panels,
# NR columns wide: 16*10 + 16*16 floats (AVX2, NR 16), 16*10 + 8*16 (portable,
# NR 8), 32*10 + 32*16 (AVX-512, NR 32).
has_line "$out" "^memory plan for batch 1: arena [0-9,]+ bytes, naive [0-9,]+ bytes \([0-9]+ allocations, [0-9.]+% saved\), packed weights (1,664|1,152|3,328) bytes$"

run_ember 1 inspect missing.ember
has "$err" "error: cannot open 'missing.ember'"

# --- --weights fp16, --report, --min-snr --------------------------------------------------
run_ember 0 convert "$onnx_dir/mlp_opset13.onnx" -o mlp16.ember --weights fp16 --report
has "$out" "weights: 488 bytes"
has_line "$out" "^accuracy report \(inputs: random normal \(seed 0\), symbolic dims 1; "
has_line "$out" "^  layer +op +stored +bytes fp32 +bytes +zeros +SNR dB$"
has_line "$out" "^  model weights: 976 -> 488 bytes \(0\.500x\)$"
run_ember 0 inspect mlp16.ember
has_line "$out" "^  float16 +244 \(488 bytes\)$"
has_line "$out" "weights=fp16"
run_ember 0 convert "$onnx_dir/mlp_opset13.onnx" -o mlp_snr.ember --quantize dynamic-int8 --min-snr 1000
has_line "$out" "kept fp32 \(int8 below 1000\.00 dB\)$"
run_ember 0 inspect mlp_snr.ember
has_line "$out" "^quantized tensors: none$"
# --activations: per tensor by default, per row when asked; shown by convert and inspect.
run_ember 0 convert "$onnx_dir/mlp_opset13.onnx" -o mlp_q.ember --quantize dynamic-int8
has_line "$out" "^quantized \(dynamic-int8, per channel, activations per tensor\): 2 weights, "
run_ember 0 inspect mlp_q.ember
has_line "$out" "^quantized layers: 2 \(activations: 2 per tensor, 0 per row\)$"
run_ember 0 convert "$onnx_dir/mlp_opset13.onnx" -o mlp_rows.ember --quantize dynamic-int8 --per-tensor \
  --activations per-row
has_line "$out" "^quantized \(dynamic-int8, per tensor, activations per row\): 2 weights, "
run_ember 0 inspect mlp_rows.ember
has_line "$out" "^quantized layers: 2 \(activations: 0 per tensor, 2 per row\)$"
has_line "$out" "^  [^ ]+ +linear +weight int8 per tensor +activations uint8 per row$"
has_line "$out" " quantize_scheme=per_tensor activations=per_row "
$py "$ref" make mlp "$onnx_dir/mlp_opset13.onnx" "$tmp" || fail "reference.py make mlp"
run_ember 0 run mlp_rows.ember --input input=x.npy --output-dir out_rows
has "$out" "wrote out_rows/output.npy (output: float32 [3, 4])"
run_ember nonzero convert "$onnx_dir/mlp_opset13.onnx" -o bad_act.ember --quantize dynamic-int8 --activations per-col
has "$err" "--activations: 'per-col' is not an activation quantization (per-tensor or per-row)"
[[ ! -e bad_act.ember ]] || fail "--activations per-col still wrote bad_act.ember"
run_ember nonzero convert "$onnx_dir/mlp_opset13.onnx" -o bad_act.ember --activations per-row
has "$err" "--activations requires --quantize"
[[ ! -e bad_act.ember ]] || fail "--activations without --quantize still wrote bad_act.ember"
# Linears of one input (q, k, v) merge into one wider Linear and a Split, unless
# --keep-projections keeps them apart (LoRA on one of them); the outputs agree.
run_ember 0 convert "$onnx_dir/projections_opset13.onnx" -o proj.ember
has "$out" ", merged 3 Gemms of a shared input"
run_ember 0 inspect proj.ember
has_line "$out" "^  linear +1$"
has_line "$out" "^  split +1$"
run_ember 0 convert "$onnx_dir/projections_opset13.onnx" -o proj_kept.ember --keep-projections
[[ "$out" != *"merged"* ]] || fail "--keep-projections still merged: $out"
run_ember 0 inspect proj_kept.ember
has_line "$out" "^  linear +3$"
$py -c "import numpy as np; np.save('proj_x.npy', np.random.RandomState(0).randn(2, 5, 16).astype(np.float32))"
run_ember 0 run proj.ember --input input=proj_x.npy --output-dir out_proj
run_ember 0 run proj_kept.ember --input input=proj_x.npy --output-dir out_proj_kept
$py -c "import numpy as np, sys; a, b = np.load('out_proj/output.npy'), np.load('out_proj_kept/output.npy')
sys.exit(0 if a.shape == (2, 5, 28) and np.allclose(a, b, rtol=1e-5, atol=1e-5) else 1)" ||
  fail "merged and kept projections differ"
run_ember nonzero convert "$onnx_dir/projections_opset13.onnx" -o bad_proj.ember --keep-projections=maybe
has "$err" "--keep-projections"
[[ ! -e bad_proj.ember ]] || fail "--keep-projections=maybe still wrote bad_proj.ember"
# --reduce-range: int8 weights within [-64, 64]; needs --quantize.
run_ember 0 convert "$onnx_dir/mlp_opset13.onnx" -o mlp_rr.ember --quantize dynamic-int8 --reduce-range
has_line "$out" "^quantized \(dynamic-int8, per channel, weights within \+-64, activations per tensor\): 2 weights, "
run_ember 0 inspect mlp_rr.ember
has_line "$out" " weight_range=reduced"
run_ember 0 run mlp_rr.ember --input input=x.npy --output-dir out_rr
has "$out" "wrote out_rr/output.npy (output: float32 [3, 4])"
run_ember nonzero convert "$onnx_dir/mlp_opset13.onnx" -o bad_rr.ember --reduce-range
has "$err" "--reduce-range requires --quantize"
[[ ! -e bad_rr.ember ]] || fail "--reduce-range without --quantize still wrote bad_rr.ember"
run_ember 1 convert "$onnx_dir/mlp_opset13.onnx" -o bad.ember --weights int4
has "$err" "unknown weights 'int4' (supported: fp32, fp16)"
[[ ! -e bad.ember ]] || fail "--weights int4 still wrote bad.ember"

# --- run, compared with PyTorch ---------------------------------------------------------
$py "$ref" make mlp "$onnx_dir/mlp_opset13.onnx" "$tmp" || fail "reference.py make mlp"
run_ember 0 run mlp.ember --input input=x.npy --output-dir out_mlp
has "$out" "wrote out_mlp/output.npy (output: float32 [3, 4])"
$py "$ref" compare out_mlp/output.npy expected.npy || fail "mlp output differs from torch"

run_ember 0 run mlp.ember --input input=x.npy --output-dir out_prof --profile --threads 2
has_line "$out" "^Name +Device +Calls +Total ms +Mean ms +% run +Input shapes \(most common\)$"
has_line "$out" "^linear +cpu +2 +[0-9.]+ +[0-9.]+ +[0-9.]+% +\[\[3, 10\], \[16, 10\], \[16\]\]$"
[[ "$out" != *"flush per op"* ]] || fail "a CPU profile speaks of flushes"
has_line "$out" "^ops total: [0-9.]+ ms of a [0-9.]+ ms run \(2 ops; profiled after the planning run and 3 warm-up runs\)$"
$py "$ref" compare out_prof/output.npy expected.npy || fail "profiled mlp output differs from torch"
run_ember 0 run mlp.ember --input input=x.npy --output-dir out_prof --profile-ops
has_line "$out" "^linear +cpu +2 +[0-9.]+ +[0-9.]+ +[0-9.]+% +\[\[3, 10\], \[16, 10\], \[16\]\]$"
has_line "$out" "^op 0 linear [^ ]+ [0-9]+\.[0-9]{4}$"
has_line "$out" "^op 1 linear [^ ]+ [0-9]+\.[0-9]{4}$"
run_ember nonzero run mlp.ember --input input=x.npy --output-dir out_prof --profile-ops=abc
has "$err" "Could not convert: --profile-ops = abc"

run_ember 0 convert "$onnx_dir/cnn_opset13.onnx" -o cnn.ember
$py "$ref" make cnn "$onnx_dir/cnn_opset13.onnx" "$tmp" || fail "reference.py make cnn"
run_ember 0 run cnn.ember --input input=x.npy --output-dir out_cnn
has "$out" "wrote out_cnn/output.npy (output: float32 [3, 5])"
$py "$ref" compare out_cnn/output.npy expected.npy || fail "cnn output differs from torch"
run_ember 0 inspect cnn.ember
has_line "$out" "^  input +float32 +\[batch, 3, 8, 8\]$"
has_line "$out" "^  conv2d +2$"
# The convolutions' weights are packed once at load (the GEMM's panels): the memory line counts them.
has_line "$out" "^memory plan for batch 1: arena [0-9,]+ bytes, naive [0-9,]+ bytes \([^)]*\), packed weights [0-9,]+ bytes$"

# --- input errors: exit 1, the message, no output -------------------------------------------
$py "$ref" make mlp "$onnx_dir/mlp_opset13.onnx" "$tmp" || fail "reference.py make mlp"
expect_input_error() {  # MESSAGE ARGS...
  local msg=$1
  shift
  rm -rf out_err
  run_ember 1 run mlp.ember --output-dir out_err "$@"
  has "$err" "error: $msg"
  [[ ! -e out_err/output.npy ]] || fail "ember run $*: wrote an output despite the error"
}
expect_input_error "missing input 'input' (float32 [batch, 10]): give it with --input input=FILE.npy"
expect_input_error "unknown input 'images'; the model's inputs: input (float32 [batch, 10])" --input images=x.npy
expect_input_error "input 'input' ('x_f64.npy'): dtype float64, the model expects float32" --input input=x_f64.npy
expect_input_error "input 'input' ('x_shape.npy'): shape [3, 11], the model expects [batch, 10]" \
  --input input=x_shape.npy
expect_input_error "input 'input' is given twice" --input input=x.npy --input input=x.npy
expect_input_error "--input 'x.npy': expected NAME=FILE.npy" --input x.npy
echo "not numpy" >bad.npy
expect_input_error "input 'input': 'bad.npy' is not a .npy file (bad magic)" --input input=bad.npy
head -c 148 x.npy >trunc.npy  # the 128-byte header and 20 bytes of data
expect_input_error "input 'input': 'trunc.npy': truncated data: data is 20 bytes, shape (3, 10) x float32 needs 120" \
  --input input=trunc.npy
expect_input_error "input 'input': cannot open 'nope.npy': No such file or directory" --input input=nope.npy
expect_input_error "device 'cuda:0' is not available in this build" --input input=x.npy --device cuda:0
expect_input_error "--precision: unknown precision 'fp8' (supported: fp32, fp16, bf16)" --input input=x.npy --precision fp8
expect_input_error "--precision fp16 needs --device vulkan" --input input=x.npy --precision fp16
expect_input_error "--conv-layout: unknown layout 'nhwc' (supported: auto, nchw, channels_last)" --input input=x.npy \
  --conv-layout nhwc
expect_input_error "--allow-fallback needs a device other than cpu" --input input=x.npy --allow-fallback
run_ember 1 run mlp.ember --input input=x.npy --output-dir out_err --device tpu
has "$err" "error: "
has "$err" "tpu"

# --- unsupported ops: exit 1, nothing written --------------------------------------------------
run_ember 1 convert "$onnx_dir/unsupported_ops.onnx" -o unsupported.ember
has "$err" "error: "
has "$err" "Bernoulli"
has "$err" "TfIdfVectorizer"
[[ ! -e unsupported.ember ]] || fail "convert of an unsupported model wrote unsupported.ember"
ls unsupported.ember.tmp.* >/dev/null 2>&1 && fail "convert left a temporary file"
# --- control flow: an If on an input, run at run time or inlined with --fix-input ---------------
run_ember 0 convert "$onnx_dir/control_if.onnx" -o cif.ember
run_ember 0 convert "$onnx_dir/control_if.onnx" -o cif.ember --fix-input sr=16000 --input-shape x=3
has "$out" "inlined 2 Ifs of constant condition"
run_ember 1 convert "$onnx_dir/control_if.onnx" -o cif.ember --fix-input sr
has "$err" "error: --fix-input 'sr': expected NAME=VALUE[,VALUE...]"
run_ember 1 convert "$onnx_dir/control_if.onnx" -o cif.ember --fix-input sr=16k
has "$err" "error: --fix-input sr: '16k' is not a number"
run_ember 1 convert "$onnx_dir/control_if.onnx" -o cif.ember --input-shape x=4
has "$err" "error: --input-shape x: dim 0 of the input is 3, not 4"
run_ember 0 convert "$onnx_dir/control_loop.onnx" -o loop.ember
run_ember 1 convert "$onnx_dir/missing.onnx" -o missing.ember
has "$err" "error: "
[[ ! -e missing.ember ]] || fail "convert of a missing file wrote missing.ember"
run_ember 1 convert "$onnx_dir/mlp_opset13.onnx" -o q.ember --quantize int8
has "$err" "error: "
[[ ! -e q.ember ]] || fail "a refused --quantize wrote q.ember"

# --- bench ---------------------------------------------------------------------------------
run_ember 0 bench mlp.ember --warmup 1 --iterations 5 --threads 1
has_line "$out" "^model: mlp.ember \(device cpu, 1 threads, 1 warmup \+ 5 timed runs\)$"
has_line "$out" "^inputs: input float32 \[1, 10\]$"
has_line "$out" "^latency ms: min [0-9.]+  median [0-9.]+  p90 [0-9.]+  mean [0-9.]+$"
has_line "$out" "^throughput: [0-9.]+ runs/s$"
has_line "$out" "^load: [0-9.]+ ms \(map, verify, build the executor\)$"
has_line "$out" "^peak RSS: [0-9.]+ MiB$"
has_line "$out" "^arena: [0-9,]+ bytes$"
run_ember 0 bench mlp.ember --warmup 0 --iterations 4 --json --input input=x.npy
$py - "$out" <<'PY' || fail "bench --json: $out"
import json, sys
j = json.loads(sys.argv[1])
assert j["model"] == "mlp.ember" and j["device"] == "cpu" and j["iterations"] == 4 and j["warmup"] == 0, j
l = j["latency_ms"]
assert 0 <= l["min"] <= l["median"] <= l["p90"] and l["min"] <= l["mean"], l
assert j["load_ms"] > 0 and j["throughput_per_s"] > 0 and j["peak_rss_bytes"] > 1 << 20 and j["arena_bytes"] > 0, j
PY
run_ember 1 bench mlp.ember --device cuda
has "$err" "error: device 'cuda' is not available in this build"

# --- vulkan (lavapipe, Mesa's CPU driver) -------------------------------------------------
lvp=/usr/share/vulkan/icd.d/lvp_icd.x86_64.json
vk() { VK_ICD_FILENAMES=$lvp MESA_SHADER_CACHE_DISABLE=true run_ember "$@"; }
# No loader, no device: exit 1 with the Vulkan context's message, nothing written.
for cmd in run bench; do
  rm -rf out_err
  args=(--device vulkan --input input=x.npy)
  [[ $cmd == run ]] && args+=(--output-dir out_err)
  EMBER_VULKAN_LOADER=/nonexistent/libvulkan.so.1 run_ember 1 $cmd mlp.ember "${args[@]}"
  has "$err" "error: 'mlp.ember': Vulkan loader not found (/nonexistent/libvulkan.so.1)"
  VK_ICD_FILENAMES=/nonexistent/icd.json run_ember 1 $cmd mlp.ember "${args[@]}"
  has "$err" "error: 'mlp.ember': no Vulkan device found"
  [[ ! -e out_err/output.npy ]] || fail "ember $cmd without a Vulkan device wrote an output"
done
VK_ICD_FILENAMES=/nonexistent/icd.json run_ember 1 devices
has "$err" "error: no Vulkan device found"
vk 0 devices
has_line "$out" "^  0: llvmpipe .*\[cpu\]$"
# The fallback decision: which nodes lack Vulkan kernels depends on the kernels
# merged; the expectations follow what `inspect --device vulkan` reports.
vk 0 inspect mlp.ember --device vulkan
has_line "$out" "^placement on vulkan: (all 2 nodes run on vulkan|[12] of 2 nodes would fall back to the CPU \(--allow-fallback\):)$"
has_line "$out" "^memory plan for batch 1: "
falls_back=0
if [[ "$out" == *"would fall back"* ]]; then
  falls_back=1
  has_line "$out" "^  node '[^']+' \(linear, float32\): not implemented for vulkan \(no float32 kernel for "
  vk 1 run mlp.ember --input input=x.npy --output-dir out_err --device vulkan
  has "$err" "(linear, float32): not implemented for vulkan (no float32 kernel for "
  has "$err" "(allow_fallback, ember's --allow-fallback, runs such nodes on the CPU)"
  [[ ! -e out_err/output.npy ]] || fail "a refused vulkan run wrote an output"
fi
vk 0 run mlp.ember --input input=x.npy --output-dir out_vk --device vulkan --allow-fallback --profile
has "$out" "wrote out_vk/output.npy (output: float32 [3, 4])"
has_line "$out" "^profile on vulkan: each op is submitted and waited for before its time is taken \(a flush per op\)"
has_line "$out" "^linear +(vulkan|cpu \(fallback\)|vulkan\+cpu \(fallback\)|cpu \(fallback\)\+vulkan) +2 +[0-9.]+ "
$py "$ref" compare out_vk/output.npy expected.npy || fail "vulkan mlp output differs from torch"
if ((falls_back)); then
  has_line "$err" "^ember: node '[^']+' \(linear, float32\) runs on the CPU: not implemented for vulkan"
else
  [[ "$err" != *"runs on the CPU"* ]] || fail "no node should fall back: $err"
fi
vk 0 run mlp.ember --input input=x.npy --output-dir out_vk16 --device vulkan --allow-fallback --precision fp16
$py - out_vk16/output.npy expected.npy <<'PY' || fail "vulkan fp16 mlp output is not within 1e-2 of torch"
import sys, numpy as np
a, e = np.load(sys.argv[1]), np.load(sys.argv[2])
assert a.dtype == np.float32, a.dtype
assert np.allclose(a, e, rtol=1e-2, atol=1e-2 * np.abs(e).max()), np.abs(a - e).max()
PY
vk 0 bench mlp.ember --device vulkan --allow-fallback --warmup 0 --iterations 3 --json
$py - "$out" <<'PY' || fail "vulkan bench --json: $out"
import json, sys
j = json.loads(sys.argv[1])
assert j["device"] == "vulkan" and j["precision"] == "fp32" and j["nodes"] == 2, j
assert 0 <= j["fallback_nodes"] <= 2 and j["latency_ms"]["min"] > 0, j
PY
vk 0 bench mlp.ember --device vulkan --allow-fallback --warmup 0 --iterations 2
has_line "$out" "^model: mlp.ember \(device vulkan, [0-9]+ threads, 0 warmup \+ 2 timed runs\)$"
has_line "$out" "^precision: fp32; [0-2] of 2 nodes fall back to the CPU$"

# --- finetune: the trained file runs, the log has every step, errors name the problem ---
run_ember 0 convert "$ft_dir/mlp.onnx" -o ft.ember
run_ember 0 inspect ft.ember --trainable
has_line "$out" "^  fc1.weight +float32 +\[16, 8\] +trainable$"
run_ember 0 finetune ft.ember --data "$ft_dir/data.npz" --eval-data "$ft_dir/data.npz" --input x=x --target y \
  --optimizer adam --lr 0.01 --epochs 30 --batch-size 4 --train '*' -o tuned.ember --log loss.csv
has_line "$out" "^fine-tuning ft.ember: 4 tensors, 212 trainable elements \(fc1.weight, fc1.bias, fc2.weight, fc2.bias\)$"
has_line "$out" "^before: eval loss 1\.47[0-9]+, accuracy 40\.00 %$"
has_line "$out" "^after: eval loss 0\.[0-2][0-9]+, accuracy 100\.00 %$"
has_line "$out" "^steps: 90 in "
[[ -s tuned.ember ]] || fail "finetune did not write tuned.ember"
# The same run on vulkan (lavapipe): the forward and backward on the device, the same losses and weights.
vk 0 finetune ft.ember --data "$ft_dir/data.npz" --eval-data "$ft_dir/data.npz" --input x=x --target y \
  --optimizer adam --lr 0.01 --epochs 30 --batch-size 4 --train '*' -o tuned_vk.ember --log loss_vk.csv --device vulkan
has_line "$out" "^after: eval loss 0\.[0-2][0-9]+, accuracy 100\.00 %$"
$py - loss.csv loss_vk.csv <<'PY' || fail "finetune --device vulkan: the losses differ from the cpu run's"
import csv, sys
cpu, vk = ([float(r["loss"]) for r in csv.DictReader(open(f))] for f in sys.argv[1:])
assert len(cpu) == len(vk) == 90, (len(cpu), len(vk))
assert all(abs(a - b) <= 1e-4 * abs(a) for a, b in zip(cpu, vk)), max(abs(a - b) / abs(a) for a, b in zip(cpu, vk))
PY
run_ember 1 finetune ft.ember --data "$ft_dir/data.npz" --target y --device cuda
has "$err" "device 'cuda' is not available in this build"
run_ember 0 finetune ft.ember --data "$ft_dir/data.npz" --target y --no-shuffle --epochs 3 -o head.ember \
  --save-delta head.safetensors
has_line "$out" "^wrote head.safetensors \(the trained tensors; ember run --weights\)$"
$py -c "import numpy as np; np.save('ftx.npy', np.load('$ft_dir/data.npz')['x'])"
run_ember 0 run head.ember --input x=ftx.npy -d out_full
run_ember 0 run tuned.ember --input x=ftx.npy -d out_tuned
run_ember 0 run tuned_vk.ember --input x=ftx.npy -d out_tuned_vk
$py "$ref" compare out_tuned_vk/y.npy out_tuned/y.npy || fail "the model fine-tuned on vulkan differs from the cpu one"
run_ember 0 run ft.ember --weights head.safetensors --input x=ftx.npy -d out_delta
cmp -s out_full/y.npy out_delta/y.npy || fail "run --weights differs from the fine-tuned file"
run_ember 1 run tuned.ember --weights head.safetensors --input x=ftx.npy -d out_bad
has "$err" "delta 'head.safetensors' was trained from another model"
[[ $(wc -l < loss.csv) -eq 91 ]] || fail "loss.csv: expected a header and 90 steps, got $(wc -l < loss.csv) lines"
run_ember 0 finetune ft.ember --data "$ft_dir/data.npz" --target y --epochs 1 --json
$py - "$out" <<'PY' || fail "finetune --json: $out"
import json, sys
j = json.loads(sys.argv[1])
assert j["steps"] == 1 and j["trainable_elements"] == 68 and j["first_loss"] > 0, j
PY
run_ember 1 finetune ft.ember --data "$ft_dir/data.npz" --target y --train 'conv*'
has "$err" "--train 'conv*' matches no weight; trainable weights: fc1.weight, fc1.bias, fc2.weight, fc2.bias"
run_ember 1 finetune ft.ember --data "$ft_dir/data.npz" --target labels
has "$err" "has no array 'labels' (it has x, y, t, img, cls, seq)"
run_ember 1 finetune ft.ember --data "$ft_dir/data.npz" --target y --loss hinge
has "$err" "--loss 'hinge': expected cross-entropy, mse, bce-logits or l1"
run_ember 0 convert "$ft_dir/mlp.onnx" -o ft_int8.ember --quantize dynamic-int8 --min-weight-elements 100
run_ember 0 finetune ft_int8.ember --data "$ft_dir/data.npz" --target y --lora 2:4 --lora-targets 'fc1.*' \
  --optimizer adam --lr 0.01 --epochs 2 --save-delta lora.safetensors
has_line "$out" "^fine-tuning ft_int8.ember: 2 tensors, 48 trainable elements \(fc1.weight.lora_A, fc1.weight.lora_B\)$"
run_ember 1 finetune ft_int8.ember --data "$ft_dir/data.npz" --target y --lora 2 --lora-targets 'fc1.*' -o never.ember
has "$err" "LoRA adapters on the int8 weight 'fc1.weight' cannot be merged into it: save them as a delta (--save-delta), or merge them into a float32 weight (--merge-lora)"
[[ ! -e never.ember ]] || fail "a refused LoRA save wrote never.ember"
vk 1 finetune ft_int8.ember --data "$ft_dir/data.npz" --target y --lora 2 --lora-targets 'fc1.*' --device vulkan
has "$err" "--lora with --device vulkan: LoRA adapters train on the cpu only"
# The delta's adapters run unmerged on the int8 kernel (ember run --weights).
run_ember 0 run ft_int8.ember --weights lora.safetensors --input x=ftx.npy -d out_lora
run_ember 0 run ft_int8.ember --input x=ftx.npy -d out_int8
! cmp -s out_lora/y.npy out_int8/y.npy || fail "run --weights with int8 LoRA adapters gave the base's outputs"
# --merge-lora: the same training (same flags and seed) written as a float32 fc1.
run_ember 0 finetune ft_int8.ember --data "$ft_dir/data.npz" --target y --lora 2:4 --lora-targets 'fc1.*' \
  --optimizer adam --lr 0.01 --epochs 2 --save-delta lora2.safetensors -o merged.ember --merge-lora
has_line "$out" "^wrote merged.ember$"
cmp -s lora.safetensors lora2.safetensors || fail "the same LoRA run wrote another delta"
run_ember 0 inspect merged.ember --trainable
has_line "$out" "^  fc1.weight +float32 +\[16, 8\] +trainable$"
run_ember 0 run merged.ember --input x=ftx.npy -d out_merged
$py - out_merged/y.npy out_lora/y.npy <<'PY' || fail "merged LoRA model vs the int8 model with its adapters"
import sys, numpy as np
m, d = np.load(sys.argv[1]), np.load(sys.argv[2])
diff = np.abs(m - d).max()
# float32 dequant(W) + 2 B A vs the int8 kernel (activations quantized at run time) + the adapter
assert 0 < diff < 2e-2, diff
PY
run_ember 1 finetune ft_int8.ember --data "$ft_dir/data.npz" --target y -o never.ember --merge-lora
has "$err" "--merge-lora needs --lora RANK and -o OUT.ember"
run_ember 0 finetune --help
has "$out" "--merge-lora"
run_ember 1 finetune ft.ember --data "$ft_dir/data.npz" --target y --lora x2 --lora-targets 'fc1.*'
has "$err" "--lora 'x2': expected RANK or RANK:ALPHA (e.g. 8 or 8:16)"
# 6 steps + resume + 6 = 12 straight (the CSV logs agree to the last digit).
common=(--data "$ft_dir/data.npz" --target y --optimizer adam --lr 0.01 --batch-size 3 --shuffle-seed 4)
run_ember 0 finetune ft.ember "${common[@]}" --epochs 3 --log straight.csv -o straight.ember
run_ember 0 finetune ft.ember "${common[@]}" --epochs 2 --checkpoint c.safetensors --checkpoint-every 6
run_ember 0 finetune ft.ember "${common[@]}" --epochs 3 --resume c.safetensors --log resumed.csv -o resumed.ember
[[ "$(tail -n 6 straight.csv)" == "$(tail -n 6 resumed.csv)" ]] || fail "resumed steps differ from the straight run"
cmp -s straight.ember resumed.ember || fail "the resumed run's model differs from the straight run's"
run_ember 1 finetune ft.ember "${common[@]}" --checkpoint c2.safetensors
has "$err" "--checkpoint needs --checkpoint-every N (steps)"
run_ember 1 finetune ft.ember --data nope.npz --target y -o never.ember
has "$err" "--data: cannot open 'nope.npz'"
[[ ! -e never.ember ]] || fail "a failed finetune wrote never.ember"

if ((failures > 0)); then
  echo "$failures check(s) failed" >&2
  exit 1
fi
echo "all checks passed"
