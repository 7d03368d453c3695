"""Exports the small ONNX models the converter tests import.

Run by Bazel at build time with Debian's /usr/bin/python3 (python3-torch,
python3-onnx), offline and seeded:
    onnx_models.py OUT_DIR
writes OUT_DIR/<model>.onnx and OUT_DIR/onnx_expected.txt, whose records
(gen_golden.py's line format) hold what torch says: parameters, inputs and
the values the converter's folding must reproduce.
"""
import os
import sys

import onnx
from onnx import TensorProto, helper
import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen_golden import Emitter  # noqa: E402


class Mlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(10, 16)
        self.fc2 = nn.Linear(16, 4)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


class Projections(nn.Module):
    """Three Linears of one input (attention's q, k and v), their outputs
    concatenated: the converter merges them into one wider Linear unless told
    --keep-projections."""
    def __init__(self):
        super().__init__()
        self.q = nn.Linear(16, 8)
        self.k = nn.Linear(16, 8)
        self.v = nn.Linear(16, 12)

    def forward(self, x):
        return torch.cat([self.q(x), self.k(x), self.v(x)], -1)


class SmallCnn(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 8, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(8)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(8, 5)

    def forward(self, x):
        x = torch.relu(self.bn1(self.conv1(x)))
        x = torch.clamp(self.bn2(self.conv2(x)), 0.0, 6.0)
        return self.fc(torch.flatten(self.pool(x), 1))


class ViewNet(nn.Module):
    """x.view(x.size(0), -1): Shape -> Gather -> Unsqueeze -> Concat -> Reshape."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(2, 4, 3)
        self.fc = nn.Linear(4 * 4 * 4, 3)

    def forward(self, x):
        x = self.conv(x)
        x = x.view(x.size(0), -1)
        return self.fc(x)


def randomize_bn(model):
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.running_mean.uniform_(-0.5, 0.5)
                m.running_var.uniform_(0.5, 1.5)
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-0.5, 0.5)


def export(model, x, path, opset, dynamic_batch=True, training=torch.onnx.TrainingMode.EVAL):
    """Exports with ONNX shape inference's value_info (intermediate shapes) kept."""
    model.eval()
    kwargs = {}
    if dynamic_batch:
        kwargs["dynamic_axes"] = {"input": {0: "batch"}, "output": {0: "batch"}}
    torch.onnx.export(model, (x,), path, opset_version=opset, input_names=["input"],
                      output_names=["output"], do_constant_folding=False, training=training, **kwargs)
    onnx.save(onnx.shape_inference.infer_shapes(onnx.load(path)), path)


def make_static(src, dst, batch):
    """The model at src with its "batch" dim bound to `batch`, shapes re-inferred."""
    m = onnx.load(src)
    for v in list(m.graph.input) + list(m.graph.output):
        for d in v.type.tensor_type.shape.dim:
            if d.dim_param == "batch":
                d.dim_value = batch
    del m.graph.value_info[:]
    onnx.save(onnx.shape_inference.infer_shapes(m), dst)


def unsupported_model(path):
    """Two unsupported op types (three nodes) beside a supported one: a random
    generator and a string op, both out of scope for good."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])
    nodes = [
        helper.make_node("Relu", ["x"], ["a"], name="relu_0"),
        helper.make_node("Bernoulli", ["a"], ["b"], name="bernoulli_0"),
        helper.make_node("TfIdfVectorizer", ["b"], ["c"], name="tfidf_0"),
        helper.make_node("Bernoulli", ["c"], ["y"], name="bernoulli_1"),
    ]
    graph = helper.make_graph(nodes, "unsupported", [x], [y])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)


def opset9_model(path):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="relu_0")], "old", [x], [y])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 9)]), path)


def missing_initializer_model(path):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])
    graph = helper.make_graph([helper.make_node("Add", ["x", "bias"], ["y"], name="add_0")],
                              "missing", [x], [y])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)


def typed_fields_model(path):
    """Initializers stored in the typed fields (not raw_data), one per dtype."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])
    inits = [
        helper.make_tensor("f32", TensorProto.FLOAT, [3], [1.5, -2.0, 0.25]),
        helper.make_tensor("f64", TensorProto.DOUBLE, [2], [1e-3, -7.5]),
        helper.make_tensor("i64", TensorProto.INT64, [2], [-(2 ** 40), 7]),
        helper.make_tensor("i32", TensorProto.INT32, [2], [-5, 1 << 20]),
        helper.make_tensor("i8", TensorProto.INT8, [2], [-128, 127]),
        helper.make_tensor("u8", TensorProto.UINT8, [2], [0, 255]),
        helper.make_tensor("b", TensorProto.BOOL, [3], [True, False, True]),
        helper.make_tensor("f16", TensorProto.FLOAT16, [2], [0.5, -3.25]),  # bits in int32_data
        helper.make_tensor("f16raw", TensorProto.FLOAT16, [2],
                           torch.tensor([1.0, 65504.0], dtype=torch.float16).numpy().tobytes(), raw=True),
    ]
    graph = helper.make_graph([helper.make_node("Add", ["x", "f32"], ["y"], name="add_0")],
                              "typed", [x], [y], initializer=inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)


def control_if_model(path):
    """If on the graph input sr (silero-vad's pattern), with a nested If, branches
    reading outer values (a two levels out), initializers of their own and
    outputs that are a captured value or a constant. Two outputs:
      sr > 20000: y = (x*w + tb) * 2,  z = x*w
      sr > 10000: y = (x*w + tb) - x,  z = x*w
      else:       y = x*w - x,         z = eb"""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])
    sr = helper.make_tensor_value_info("sr", TensorProto.INT64, [])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])
    z = helper.make_tensor_value_info("z", TensorProto.FLOAT, [3])
    i64 = lambda name, v: helper.make_tensor(name, TensorProto.INT64, [], [v])
    f32 = lambda name, v: helper.make_tensor(name, TensorProto.FLOAT, [len(v)], v)
    out = lambda name: helper.make_tensor_value_info(name, TensorProto.FLOAT, [3])
    nested_then = helper.make_graph(
        [helper.make_node("Constant", [], ["two"], name="two_c", value=f32("two_v", [2.0])),
         helper.make_node("Mul", ["t1", "two"], ["n_then"], name="double")],
        "nested_then", [], [out("n_then")])
    nested_else = helper.make_graph([helper.make_node("Sub", ["t1", "x"], ["n_else"], name="minus_x")],
                                    "nested_else", [], [out("n_else")])
    then_branch = helper.make_graph(
        [helper.make_node("Add", ["a", "tb"], ["t1"], name="add_tb"),
         helper.make_node("Greater", ["sr", "k20000"], ["c2"], name="gt_20000"),
         helper.make_node("If", ["c2"], ["n"], name="inner_if", then_branch=nested_then, else_branch=nested_else)],
        "then", [], [out("n"), out("a")], initializer=[f32("tb", [10.0, 20.0, 30.0]), i64("k20000", 20000)])
    else_branch = helper.make_graph([helper.make_node("Sub", ["a", "x"], ["e1"], name="a_minus_x")],
                                    "else", [], [out("e1"), out("eb")], initializer=[f32("eb", [7.0, 8.0, 9.0])])
    nodes = [helper.make_node("Mul", ["x", "w"], ["a"], name="mul_w"),
             helper.make_node("Greater", ["sr", "k10000"], ["c"], name="gt_10000"),
             helper.make_node("If", ["c"], ["y", "z"], name="outer_if", then_branch=then_branch,
                              else_branch=else_branch)]
    graph = helper.make_graph(nodes, "control_if", [x, sr], [y, z],
                              initializer=[f32("w", [1.0, 2.0, 3.0]), i64("k10000", 10000)])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)


def control_loop_model(path):
    """A Loop (y = x + 1, three times) and an If whose branch holds an unsupported op."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"], name="keep_going"),
         helper.make_node("Add", ["acc", "one"], ["acc_out"], name="add_one")],
        "body", [helper.make_tensor_value_info("i", TensorProto.INT64, []),
                 helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
                 helper.make_tensor_value_info("acc", TensorProto.FLOAT, [3])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("acc_out", TensorProto.FLOAT, [3])])
    nodes = [helper.make_node("Loop", ["n", "", "x"], ["y"], name="loop_0", body=body)]
    graph = helper.make_graph(nodes, "control_loop", [x], [y], initializer=[
        helper.make_tensor("n", TensorProto.INT64, [], [3]),
        helper.make_tensor("one", TensorProto.FLOAT, [1], [1.0])])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)


def control_scan_model(path):
    """Scan: a running sum over xs [3, 2] read backwards (scan_input_directions 1):
    final s = s0 + sum(xs), ys = each step's sum, stacked along axis 0."""
    f = lambda name, shape: helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)
    body = helper.make_graph(
        [helper.make_node("Add", ["s", "x"], ["s_out"], name="acc"),
         helper.make_node("Identity", ["s_out"], ["y"], name="emit")],
        "body", [f("s", [2]), f("x", [2])], [f("s_out", [2]), f("y", [2])])
    nodes = [helper.make_node("Scan", ["s0", "xs"], ["s_final", "ys"], name="scan_0", body=body,
                              num_scan_inputs=1, scan_input_directions=[1])]
    graph = helper.make_graph(nodes, "control_scan", [f("s0", [2]), f("xs", [3, 2])],
                              [f("s_final", [2]), f("ys", [3, 2])])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)


def control_while_model(path):
    """A while loop (no trip count): acc doubles while it is below `limit`
    (a graph input the body captures); every acc is a scan output."""
    f = lambda name, shape: helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)
    body = helper.make_graph(
        [helper.make_node("Mul", ["acc", "two"], ["acc_out"], name="double"),
         helper.make_node("Less", ["acc_out", "limit"], ["below"], name="below_limit"),
         helper.make_node("Squeeze", ["below"], ["cond_out"], name="to_scalar"),
         helper.make_node("Identity", ["acc_out"], ["seen"], name="emit")],
        "body", [helper.make_tensor_value_info("i", TensorProto.INT64, []),
                 helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []), f("acc", [1])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []), f("acc_out", [1]), f("seen", [1])],
        initializer=[helper.make_tensor("two", TensorProto.FLOAT, [1], [2.0])])
    nodes = [helper.make_node("Loop", ["", "go", "x"], ["y", "all"], name="while_0", body=body)]
    graph = helper.make_graph(nodes, "control_while", [f("x", [1]), f("limit", [1])],
                              [f("y", [1]), f("all", ["n", 1])],
                              initializer=[helper.make_tensor("go", TensorProto.BOOL, [], [True])])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)


def control_range_model(path):
    """ONNX's Range function body: a Loop (trip count n, an input) carrying a
    scalar whose body reads the outer `delta` and an outer constant `axes` (for
    Unsqueeze): final = start + n * delta, ys[i] = [start + i * delta]. Neither the
    carried scalar nor the body's values have a declared shape."""
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"], name="keep"),
         helper.make_node("Add", ["prev", "delta"], ["current"], name="step"),
         helper.make_node("Unsqueeze", ["prev", "axes"], ["seen"], name="emit")],
        "body", [helper.make_tensor_value_info("i", TensorProto.INT64, []),
                 helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
                 helper.make_value_info("prev", onnx.TypeProto())],
        [helper.make_value_info("cond_out", onnx.TypeProto()), helper.make_value_info("current", onnx.TypeProto()),
         helper.make_value_info("seen", onnx.TypeProto())])
    nodes = [helper.make_node("Loop", ["n", "go", "start"], ["final", "ys"], name="range_loop", body=body)]
    scalar = lambda name, t: helper.make_tensor_value_info(name, t, [])
    graph = helper.make_graph(nodes, "control_range",
                              [scalar("n", TensorProto.INT64), scalar("start", TensorProto.FLOAT),
                               scalar("delta", TensorProto.FLOAT)],
                              [helper.make_tensor_value_info("final", TensorProto.FLOAT, None),
                               helper.make_tensor_value_info("ys", TensorProto.FLOAT, None)],
                              initializer=[helper.make_tensor("go", TensorProto.BOOL, [], [True]),
                                           helper.make_tensor("axes", TensorProto.INT64, [1], [0])])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)


class _ScriptedLoopIf(torch.nn.Module):
    def forward(self, x, n: int):
        y = x
        for i in range(n):
            y = y * 2 + i
        if bool(y.sum() > 10):
            y = y - 1
        else:
            y = y + 1
        return y


def control_script_model(path):
    """torch.jit.script's for loop and if: ONNX Loop (trip count an input) and If
    (condition from the data). x=[1, 2], n=3: [11, 19]; x=[0, 0], n=1: [1, 1]."""
    torch.onnx.export(torch.jit.script(_ScriptedLoopIf()), (torch.tensor([1.0, 2.0]), 3), path,
                      input_names=["x", "n"], output_names=["y"], opset_version=13)


def main(out_dir):
    torch.set_num_threads(1)
    os.makedirs(out_dir, exist_ok=True)
    expected = open(os.path.join(out_dir, "onnx_expected.txt"), "w")
    emit = Emitter(expected)

    torch.manual_seed(0)
    mlp = Mlp()
    x = torch.randn(2, 10)
    for opset in (11, 13, 17):
        export(mlp, x, os.path.join(out_dir, f"mlp_opset{opset}.onnx"), opset)
    for name, p in mlp.state_dict().items():
        emit.tensor(f"mlp.{name}", p)

    torch.manual_seed(4)
    export(Projections(), torch.randn(2, 5, 16), os.path.join(out_dir, "projections_opset13.onnx"), 13)

    torch.manual_seed(1)
    cnn = SmallCnn()
    randomize_bn(cnn)
    # PRESERVE keeps BatchNormalization nodes (EVAL would fold them into the convs).
    export(cnn, torch.randn(1, 3, 8, 8), os.path.join(out_dir, "cnn_opset13.onnx"), 13,
           training=torch.onnx.TrainingMode.PRESERVE)
    with torch.no_grad():
        for i, (conv, bn) in enumerate(((cnn.conv1, cnn.bn1), (cnn.conv2, cnn.bn2)), 1):
            s = bn.weight / torch.sqrt(bn.running_var + bn.eps)
            emit.tensor(f"cnn.conv{i}.folded_weight", conv.weight * s.reshape(-1, 1, 1, 1))
            b = conv.bias if conv.bias is not None else torch.zeros_like(bn.running_mean)
            emit.tensor(f"cnn.conv{i}.folded_bias", (b - bn.running_mean) * s + bn.bias)
        emit.tensor("cnn.conv1.weight", cnn.conv1.weight)
        emit.tensor("cnn.bn1.running_var", cnn.bn1.running_var)

    torch.manual_seed(2)
    view = ViewNet()
    x = torch.randn(3, 2, 6, 6)
    # Bound to a static batch, Shape(x) folds and Reshape's target becomes a constant.
    export(view, x, os.path.join(out_dir, "view_dynamic_opset13.onnx"), 13)
    export(view, x, os.path.join(out_dir, "view_dynamic_opset11.onnx"), 11)  # Unsqueeze axes attribute
    make_static(os.path.join(out_dir, "view_dynamic_opset13.onnx"),
                os.path.join(out_dir, "view_static_opset13.onnx"), x.size(0))
    emit.tensor("view.reshape_target", torch.tensor([x.size(0), -1]))  # the view's arguments

    torch.manual_seed(3)
    layer = nn.TransformerEncoderLayer(d_model=32, nhead=2, dim_feedforward=64, dropout=0.1,
                                       batch_first=True)
    export(layer, torch.randn(2, 8, 32), os.path.join(out_dir, "transformer_opset13.onnx"), 13)
    export(layer, torch.randn(2, 8, 32), os.path.join(out_dir, "transformer_opset17.onnx"), 17)
    emit.tensor("transformer.linear1.weight", layer.linear1.weight)
    emit.tensor("transformer.norm1.weight", layer.norm1.weight)

    unsupported_model(os.path.join(out_dir, "unsupported_ops.onnx"))
    opset9_model(os.path.join(out_dir, "opset9.onnx"))
    missing_initializer_model(os.path.join(out_dir, "missing_initializer.onnx"))
    typed_fields_model(os.path.join(out_dir, "typed_fields.onnx"))
    control_if_model(os.path.join(out_dir, "control_if.onnx"))
    control_loop_model(os.path.join(out_dir, "control_loop.onnx"))
    control_scan_model(os.path.join(out_dir, "control_scan.onnx"))
    control_while_model(os.path.join(out_dir, "control_while.onnx"))
    control_script_model(os.path.join(out_dir, "control_script.onnx"))
    control_range_model(os.path.join(out_dir, "control_range.onnx"))
    expected.close()


if __name__ == "__main__":
    main(sys.argv[1])
