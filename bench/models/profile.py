"""ember's per-op profile beside ONNX Runtime's per-node profile of the same
model, one thread by default: where a whole model's time goes in each runtime
(a layer alone, bench/ops/layers.py, runs from warm caches and misses what the
model around it costs). Not part of CI.

ember: `ember run --profile-ops` (a run after 3 warm-up runs), --runs times,
the median per op. ORT: an InferenceSession with enable_profiling, --runs runs
after 10 warm-up runs, the median per node of the fastest half. The two graphs
differ (ORT fuses activations, adds and reorders for its NCHWc layout under
other node names), so the heavy ops are matched by position: the k-th
convolution / Gemm / MatMul of each (both keep them in graph order; ember's
conv2d_pair, a 1x1 and a depthwise convolution run as one op, against the sum
of ORT's two). Then the totals by op type on each side.

    bench/.venv-ort/bin/python bench/models/profile.py MODEL.onnx MODEL.ember \\
        --input NAME=FILE.npy [--input ...] [--threads 1] [--runs 15] [--top 40]
        [--ember bazel-bin/converter/cli/ember_cli]
"""
import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnxruntime as ort

HEAVY_EMBER = {"conv2d", "linear", "matmul", "conv_transpose2d", "conv2d_pair"}
HEAVY_ORT = {"Conv", "FusedConv", "NchwcConv", "Gemm", "MatMul", "FusedMatMul", "ConvTranspose"}


def median(v):
    v = sorted(v)
    return v[len(v) // 2]


def ember_ops(args, feeds, out_dir):
    """[(index, type, node, median ms)] in op order."""
    times = collections.defaultdict(list)
    meta = {}
    for _ in range(args.runs):
        cmd = [args.ember, "run", args.ember_model, "--profile-ops", "--threads", str(args.threads), "-d", out_dir]
        for name, path in feeds:
            cmd += ["--input", f"{name}={path}"]
        out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
        for line in out.splitlines():
            f = line.split()
            if len(f) >= 5 and f[0] == "op" and f[1].isdigit():
                k = int(f[1])
                meta[k] = (f[2], " ".join(f[3:-1]))
                times[k].append(float(f[-1]))
    return [(k, meta[k][0], meta[k][1], median(times[k])) for k in sorted(times)]


def ort_nodes(args, feeds):
    """[(node, op type, median ms)] in execution order."""
    so = ort.SessionOptions()
    so.intra_op_num_threads = args.threads
    so.enable_profiling = True
    so.profile_file_prefix = os.path.join(tempfile.mkdtemp(), "ort")
    s = ort.InferenceSession(args.onnx, so, providers=["CPUExecutionProvider"])
    inputs = {name: np.load(path) for name, path in feeds}
    for _ in range(10 + args.runs):
        s.run(None, inputs)
    events = json.load(open(s.end_profiling()))
    runs = collections.defaultdict(list)
    order, kind = [], {}
    for e in events:
        if e.get("cat") == "Node" and e["name"].endswith("_kernel_time"):
            node = e["name"][: -len("_kernel_time")]
            if node not in kind:
                order.append(node)
                kind[node] = e["args"].get("op_name", "?")
            runs[node].append(e["dur"] / 1000.0)
    nodes = []
    for node in order:
        v = sorted(runs[node][10:] or runs[node])  # past the warm-up runs
        nodes.append((node, kind[node], median(v[: max(1, len(v) // 2)])))
    return nodes


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("onnx")
    ap.add_argument("ember_model")
    ap.add_argument("--input", dest="inputs", action="append", default=[], help="NAME=FILE.npy")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--top", type=int, default=40)
    ap.add_argument("--ember", default="bazel-bin/converter/cli/ember_cli")
    args = ap.parse_args()
    feeds = [tuple(a.split("=", 1)) for a in args.inputs]
    with tempfile.TemporaryDirectory() as out_dir:
        em = ember_ops(args, feeds, out_dir)
    on = ort_nodes(args, feeds)

    heavy_e = [r for r in em if r[1] in HEAVY_EMBER]
    heavy_o = [r for r in on if r[1] in HEAVY_ORT]
    print(f"{args.onnx}: {args.threads} thread(s), onnxruntime {ort.__version__}; ember {len(em)} ops "
          f"({len(heavy_e)} conv/gemm/matmul), ORT {len(on)} nodes ({len(heavy_o)}); ms, median of {args.runs} runs")
    # A conv2d_pair (a 1x1 Conv2d and the depthwise one after it, run as one op) stands for two ORT convolutions.
    width = [2 if e[1] == "conv2d_pair" else 1 for e in heavy_e]
    if sum(width) == len(heavy_o):
        matched, i = [], 0
        for w in width:
            matched.append((heavy_o[i][0], heavy_o[i][1], sum(o[2] for o in heavy_o[i:i + w])))
            i += w
        rows = [(e[3] - o[2], e, o) for e, o in zip(heavy_e, matched)]
        print(f"\nthe k-th conv/gemm/matmul of each, largest (ember - ORT) first (top {args.top}):")
        print(f"{'#':>4} {'ember op':<48} {'ember':>7} {'ORT':>7} {'ratio':>6}")
        for diff, e, o in sorted(rows, key=lambda r: -r[0])[: args.top]:
            print(f"{e[0]:>4} {e[2][-48:]:<48} {e[3]:7.3f} {o[2]:7.3f} {e[3] / max(o[2], 1e-9):6.2f}")
        print(f"sum of these: ember {sum(e[3] for e in heavy_e):.3f}, ORT {sum(o[2] for o in heavy_o):.3f}"
              " (a conv2d_pair against the sum of ORT's two)")
    else:
        print("\n(the conv/gemm/matmul counts differ: no matching by position)")
    for side, rows, t, ms in (("ember", em, 1, 3), ("ORT", on, 1, 2)):
        by = collections.defaultdict(float)
        for r in rows:
            by[r[t]] += r[ms]
        total = sum(by.values())
        print(f"\n{side} by op type (total {total:.3f} ms):")
        for k, v in sorted(by.items(), key=lambda kv: -kv[1]):
            print(f"  {k:<24} {v:8.3f}  {100 * v / max(total, 1e-9):5.1f} %")


if __name__ == "__main__":
    sys.exit(main())
