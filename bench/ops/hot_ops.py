"""The hot ops of issue 11 (Resize, ConvTranspose, LSTM/GRU, the activations),
ember vs ONNX Runtime, one op per model. Not part of CI.

Each case is a one-node ONNX model built here with onnx.helper at a realistic
size, converted with `ember convert`; ember's `bench --json` and ORT's
InferenceSession (intra_op_num_threads = N, sequential execution) then run it
on the same input (.npy), in alternating rounds (ORT, ember, ORT, ember ...).
Printed per case and thread count: the medians over rounds of each side's
median latency and of the per-round ratio ember/ORT (< 1: ember faster), and
the max abs difference of the outputs (ember run vs ORT), so a fast wrong
kernel shows. The timing helpers are bench/models/compare.py's.

From the repository root (needs bench/.venv-ort: onnx >= 1.13 for Mish, and
onnxruntime; see bench/models/run.sh):

    bazel build //converter/cli:ember_cli
    bench/.venv-ort/bin/python bench/ops/hot_ops.py [--out /tmp/ember_hot_ops]
        [--ember bazel-bin/converter/cli/ember_cli] [--threads 1,2] [--rounds 5]
        [--iterations 20] [--warmup 5] [--cases resize_linear,lstm_b1 | --cases resize_]
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "models"))
import compare  # noqa: E402  (bench/models/compare.py: ort_measure, ember_measure, median)

OPSET = 18  # Mish
RNG = np.random.default_rng(0)


def rand(*shape, scale=1.0):
    return (RNG.standard_normal(shape) * scale).astype(np.float32)


def one_node(op, x_shape, inits=(), inputs=None, **attrs):
    """A model of one node `op` on input x (float32, x_shape) and initializers
    [(name, array)]; its inputs: `inputs` (names, "" for absent) or x then the initializers."""
    names = inputs if inputs is not None else ["x"] + [n for n, _ in inits]
    node = helper.make_node(op, names, ["y"], **attrs)
    graph = helper.make_graph([node], op.lower(), [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [numpy_helper.from_array(a, n) for n, a in inits])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    return onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True), x_shape  # y's shape


def resize(mode, **attrs):
    scales = np.array([1, 1, 2, 2], np.float32)
    return one_node("Resize", [1, 64, 56, 56], [("scales", scales)], inputs=["x", "", "scales"], mode=mode, **attrs)


def conv_transpose(c_in, c_out, k, group=1):
    w = rand(c_in, c_out // group, k, k, scale=(1.0 / (c_in * k * k / 4)) ** 0.5)
    pads = [1, 1, 1, 1]
    out_pad = [1, 1] if k == 3 else [0, 0]  # 28 -> 56 either way
    return one_node("ConvTranspose", [1, c_in, 28, 28], [("w", w), ("b", rand(c_out))], strides=[2, 2],
                    pads=pads, output_padding=out_pad, group=group)


def recurrence(op, batch, bidirectional=False, seq=64, inp=64, hidden=128):
    gates = 4 if op == "LSTM" else 3
    dirs = 2 if bidirectional else 1
    s = hidden ** -0.5
    inits = [("W", rand(dirs, gates * hidden, inp, scale=s)), ("R", rand(dirs, gates * hidden, hidden, scale=s)),
             ("B", rand(dirs, 2 * gates * hidden, scale=s))]
    attrs = {"hidden_size": hidden, "direction": "bidirectional" if bidirectional else "forward"}
    if op == "GRU":
        attrs["linear_before_reset"] = 1  # PyTorch's GRU
    return one_node(op, [seq, batch, inp], inits, **attrs)


ACT = [1, 64, 128, 128]  # 1M floats
CASES = {
    "resize_nearest": lambda: resize("nearest", coordinate_transformation_mode="asymmetric", nearest_mode="floor"),
    "resize_linear": lambda: resize("linear", coordinate_transformation_mode="half_pixel"),
    "resize_cubic": lambda: resize("cubic", coordinate_transformation_mode="half_pixel", cubic_coeff_a=-0.75),
    "convt_3x3_s2": lambda: conv_transpose(64, 32, 3),
    "convt_4x4_s2": lambda: conv_transpose(64, 32, 4),
    "convt_dw_4x4_s2": lambda: conv_transpose(64, 64, 4, group=64),
    "lstm_b1": lambda: recurrence("LSTM", 1),
    "lstm_b8": lambda: recurrence("LSTM", 8),
    "lstm_bidir_b1": lambda: recurrence("LSTM", 1, bidirectional=True),
    "gru_b1": lambda: recurrence("GRU", 1),
    "gru_b8": lambda: recurrence("GRU", 8),
    "hardsigmoid": lambda: one_node("HardSigmoid", ACT, alpha=0.2, beta=0.5),
    "hardswish": lambda: one_node("HardSwish", ACT),
    "leakyrelu": lambda: one_node("LeakyRelu", ACT, alpha=0.01),
    "prelu": lambda: one_node("PRelu", ACT, [("slope", rand(64, 1, 1, scale=0.25))]),
    "elu": lambda: one_node("Elu", ACT, alpha=1.0),
    "selu": lambda: one_node("Selu", ACT),
    "softplus": lambda: one_node("Softplus", ACT),
    "mish": lambda: one_node("Mish", ACT),
    "sigmoid": lambda: one_node("Sigmoid", ACT),
    "tanh": lambda: one_node("Tanh", ACT),
}


def prepare(args, name):
    """Writes OUT/<name>.onnx, .ember and the input OUT/<name>.x.npy; returns (onnx, ember, feeds)."""
    model, x_shape = CASES[name]()
    base = os.path.join(args.out, name)
    onnx.save(model, base + ".onnx")
    np.save(base + ".x.npy", rand(*x_shape, scale=3.0))  # activations: their nonlinear range
    subprocess.run([args.ember, "convert", base + ".onnx", "-o", base + ".ember"], check=True,
                   stdout=subprocess.DEVNULL)
    return base + ".onnx", base + ".ember", [f"x={base}.x.npy"]


def max_diff(args, onnx_path, ember_path, feeds):
    """Max abs difference of y, ember run vs ORT (default threads), and max |y|."""
    import onnxruntime as ort

    x = np.load(feeds[0].split("=", 1)[1])
    ref = ort.InferenceSession(onnx_path, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    with tempfile.TemporaryDirectory() as d:
        subprocess.run([args.ember, "run", ember_path, "-d", d, "--input", feeds[0]], check=True,
                       stdout=subprocess.DEVNULL)
        got = np.load(os.path.join(d, "y.npy"))
    if got.shape != ref.shape:
        return float("inf"), float(np.max(np.abs(ref)))
    return float(np.max(np.abs(got.astype(np.float64) - ref))), float(np.max(np.abs(ref)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="/tmp/ember_hot_ops")
    ap.add_argument("--ember", default="bazel-bin/converter/cli/ember_cli")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--iterations", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--cases", help="comma-separated names or prefixes of CASES (default: all)")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    wanted = args.cases.split(",") if args.cases else [""]
    names = [n for n in CASES if any(n.startswith(w) for w in wanted)]
    if not names:
        sys.exit(f"no case matches {args.cases}; cases: {', '.join(CASES)}")

    import onnxruntime
    print(f"onnxruntime {onnxruntime.__version__}; ember {args.ember}; per side the median of {args.iterations} "
          f"runs after {args.warmup} warm-up runs, {args.rounds} alternating rounds; ratio < 1: ember faster\n")
    print(f"{'case':16s} {'threads':>7s} {'ember ms':>9s} {'ORT ms':>9s} {'ember/ORT':>9s} "
          f"{'max|diff|':>10s} {'max|y|':>8s}")
    for name in names:
        onnx_path, ember_path, feeds = prepare(args, name)
        diff, scale = max_diff(args, onnx_path, ember_path, feeds)
        flag = "" if diff <= 1e-4 * max(1.0, scale) else "  MISMATCH"
        for threads in [int(t) for t in args.threads.split(",")]:
            rows = []
            for _ in range(args.rounds):
                o = compare.ort_measure(args, onnx_path, threads, feeds)["median_ms"]
                e = compare.ember_measure(args, ember_path, threads, feeds)["median_ms"]
                rows.append((e, o))
            med = compare.median
            print(f"{name:16s} {threads:7d} {med([r[0] for r in rows]):9.3f} {med([r[1] for r in rows]):9.3f} "
                  f"{med([r[0] / r[1] for r in rows]):9.2f} {diff:10.2e} {scale:8.2f}{flag}", flush=True)


if __name__ == "__main__":
    main()
