"""Per-layer table of a model, ember vs ONNX Runtime: every distinct Conv,
ConvTranspose, Gemm, MatMul and LayerNormalization of an ONNX model (distinct by
op, input shapes and attributes) is cut out as a one-node model with its own
weights, converted with `ember convert` and timed in both runtimes in
alternating rounds (bench/models/compare.py's helpers, as bench/ops/hot_ops.py
does). Not part of CI.

Printed per layer and thread count: how many times the model runs it, each
side's median latency, the median of per-round ratios ember/ORT (< 1: ember
faster), and the layer's share of ember's and ORT's summed time (count x ms),
sorted by ember's total; so the layers that hold a model back show first.

From the repository root (bench/.venv-ort: onnx and onnxruntime, see
bench/models/run.sh; models from `bash bench/models/run.sh DIR`):

    bazel build //converter/cli:ember_cli
    bench/.venv-ort/bin/python bench/ops/layers.py DIR/mobilenet_v2.onnx [--threads 1,2]
        [--rounds 3] [--iterations 20] [--warmup 3] [--top 12] [--out /tmp/ember_layers]
        [--ember bazel-bin/converter/cli/ember_cli] [--dim batch=8 --dim seq=128]
"""
import argparse
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import helper, numpy_helper, shape_inference

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "models"))
import compare  # noqa: E402  (bench/models/compare.py: ort_measure, ember_measure, median)

OPS = ("Conv", "ConvTranspose", "Gemm", "MatMul", "LayerNormalization")


def fix_dims(model, dims):
    """Gives the graph inputs' symbolic dims the values `dims` names ({"batch": 8}), else 1."""
    for v in model.graph.input:
        for d in v.type.tensor_type.shape.dim:
            if not d.HasField("dim_value"):
                d.dim_value = dims.get(d.dim_param, 1)


def value_shapes(model):
    """Static shapes of every value of the model (inferred), by name."""
    inferred = shape_inference.infer_shapes(model, data_prop=True)
    shapes = {}
    g = inferred.graph
    for v in list(g.input) + list(g.value_info) + list(g.output):
        dims = v.type.tensor_type.shape.dim
        if all(d.HasField("dim_value") for d in dims):
            shapes[v.name] = [d.dim_value for d in dims]
    for t in g.initializer:
        shapes[t.name] = list(t.dims)
    return shapes


def layers(model):
    """[(key, node, count)]: the distinct layers of the model and how many times each occurs."""
    shapes = value_shapes(model)
    inits = {t.name for t in model.graph.initializer}
    found = {}
    for node in model.graph.node:
        if node.op_type not in OPS or any(i and i not in shapes for i in node.input):
            continue
        attrs = tuple(sorted((a.name, str(helper.get_attribute_value(a))) for a in node.attribute))
        key = (node.op_type, tuple(tuple(shapes[i]) if i else () for i in node.input),
               tuple(i in inits for i in node.input), attrs)
        if key in found:
            found[key][1] += 1
        else:
            found[key] = [node, 1]
    return [(k, n, c) for k, (n, c) in found.items()]


def one_node_model(model, node, index):
    """The node alone: its non-constant inputs become graph inputs x0, x1, ...; constants stay."""
    inits = {t.name: t for t in model.graph.initializer}
    shapes = value_shapes(model)
    inputs, graph_inputs, kept = [], [], []
    for i in node.input:
        if not i:
            inputs.append("")
        elif i in inits:
            inputs.append(i)
            kept.append(inits[i])
        else:
            name = f"x{len(graph_inputs)}"
            inputs.append(name)
            graph_inputs.append(helper.make_tensor_value_info(name, onnx.TensorProto.FLOAT, shapes[i]))
    n = helper.make_node(node.op_type, inputs, ["y"], name=f"layer{index}")
    n.attribute.extend(node.attribute)
    graph = helper.make_graph([n], f"layer{index}", graph_inputs,
                              [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)], kept)
    return helper.make_model(graph, opset_imports=list(model.opset_import)), graph_inputs


def describe(key):
    op, shapes, const, attrs = key
    a = dict(attrs)
    extra = []
    for name in ("kernel_shape", "strides", "group"):
        if name in a and a[name] not in ("1", "[1, 1]"):
            extra.append(f"{name[0]}{a[name]}".replace(" ", ""))
    ins = " ".join("x".join(map(str, s)) for s, c in zip(shapes, const) if s and not (c and len(s) == 1))
    return f"{op} {ins} {' '.join(extra)}".strip()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("--out", default="/tmp/ember_layers")
    ap.add_argument("--ember", default="bazel-bin/converter/cli/ember_cli")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--iterations", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--dim", action="append", default=[], help="NAME=VALUE for a symbolic input dim (others: 1)")
    ap.add_argument("--top", type=int, default=0, help="only the N layers with the most ember time (0: all)")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    model = onnx.load(args.model)
    fix_dims(model, {k: int(v) for k, v in (d.split("=", 1) for d in args.dim)})
    rng = np.random.default_rng(0)
    cases = []
    for index, (key, node, count) in enumerate(layers(model)):
        sub, graph_inputs = one_node_model(model, node, index)
        base = os.path.join(args.out, f"layer{index}")
        onnx.save(sub, base + ".onnx")
        feeds = []
        for v in graph_inputs:
            shape = [d.dim_value for d in v.type.tensor_type.shape.dim]
            np.save(f"{base}.{v.name}.npy", rng.standard_normal(shape).astype(np.float32))
            feeds.append(f"{v.name}={base}.{v.name}.npy")
        subprocess.run([args.ember, "convert", base + ".onnx", "-o", base + ".ember"], check=True,
                       stdout=subprocess.DEVNULL)
        cases.append((describe(key), count, base, feeds))

    import onnxruntime
    print(f"{args.model}: {len(cases)} distinct layers; onnxruntime {onnxruntime.__version__}; per side the "
          f"median of {args.iterations} runs, {args.rounds} alternating rounds; ratio < 1: ember faster\n")
    for threads in [int(t) for t in args.threads.split(",")]:
        rows = []
        for name, count, base, feeds in cases:
            per_round = []
            for _ in range(args.rounds):
                o = compare.ort_measure(args, base + ".onnx", threads, feeds)["median_ms"]
                e = compare.ember_measure(args, base + ".ember", threads, feeds)["median_ms"]
                per_round.append((e, o))
            med = compare.median
            rows.append((name, count, med([r[0] for r in per_round]), med([r[1] for r in per_round]),
                         med([r[0] / r[1] for r in per_round])))
        rows.sort(key=lambda r: -r[1] * r[2])
        e_total = sum(r[1] * r[2] for r in rows)
        o_total = sum(r[1] * r[3] for r in rows)
        print(f"threads {threads}: summed ember {e_total:.2f} ms, ORT {o_total:.2f} ms, ratio {e_total / o_total:.2f}")
        print(f"{'layer':44s} {'count':>5s} {'ember ms':>9s} {'ORT ms':>8s} {'ember/ORT':>9s} {'ember %':>7s} "
              f"{'ORT %':>6s}")
        for name, count, e, o, ratio in rows[:args.top or len(rows)]:
            print(f"{name[:44]:44s} {count:5d} {e:9.3f} {o:8.3f} {ratio:9.2f} {100 * count * e / e_total:7.1f} "
                  f"{100 * count * o / o_total:6.1f}", flush=True)
        print()


if __name__ == "__main__":
    main()
