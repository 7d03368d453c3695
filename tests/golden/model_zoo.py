"""Exports the conformance models: real networks and one tiny model per ONNX op.

Run by Bazel at build time with Debian's /usr/bin/python3 (python3-torch,
python3-torchvision, python3-onnx, numpy), offline and seeded:
    model_zoo.py OUT_DIR [--only NAME,NAME...]
writes, for every model <name>:
    <name>.onnx           the exported model (ONNX shape inference's value_info kept)
    <name>.in<k>.npy      its inputs, in the order of the ONNX graph inputs
    <name>.out<k>.npy     what torch computes for them (the reference)
and OUT_DIR/manifest.txt, one line per case:
    <case> file=<name>.onnx inputs=<in0>,<in1> outputs=<out0> rtol=<r> atol=<a>
A case may reuse another case's .onnx with other inputs (mlp_b2: batch 2 through
mlp.onnx; bert_opset14_b1: batch 1, seq 20); its .npy files are named after the
case (tests/golden/BUILD lists these as ZOO_VARIANTS).  Non-float outputs (int64,
bool) compare exactly whatever the tolerance says.

Weights are random (torchvision models are built with weights=None); BatchNorm
running statistics are calibrated on random data so activations keep a sane
scale through deep networks.
"""
import os
import sys
import time

import numpy as np
import onnx
from onnx import TensorProto, helper
import torch
import torch.nn as nn
import torch.nn.functional as F

from model_zoo_attn import attention_models
from model_zoo_spatial import spatial_models

RTOL = 1e-4
ATOL = 1e-4


class Zoo:
    def __init__(self, out_dir):
        self.out_dir = out_dir
        self.lines = []
        self.names = set()

    def path(self, name):
        return os.path.join(self.out_dir, name)

    def case(self, name, onnx_file, inputs, outputs, rtol=RTOL, atol=ATOL):
        """Writes the .npy files of a case and its manifest line."""
        assert name not in self.names, name
        self.names.add(name)
        model = onnx.load(self.path(onnx_file))
        init_names = {i.name for i in model.graph.initializer}
        in_names = [i.name for i in model.graph.input if i.name not in init_names]
        out_names = [o.name for o in model.graph.output]
        assert len(in_names) == len(inputs), (name, in_names)
        assert len(out_names) == len(outputs), (name, out_names, len(outputs))
        for k, t in enumerate(inputs):
            np.save(self.path(f"{name}.in{k}.npy"), to_numpy(t))
        for k, t in enumerate(outputs):
            np.save(self.path(f"{name}.out{k}.npy"), to_numpy(t))
        self.lines.append(f"{name} file={onnx_file} inputs={','.join(in_names)} "
                          f"outputs={','.join(out_names)} rtol={rtol:g} atol={atol:g}")

    def write_manifest(self):
        with open(self.path("manifest.txt"), "w") as f:
            f.write("\n".join(self.lines) + "\n")


def to_numpy(t):
    a = t.detach().contiguous().numpy() if isinstance(t, torch.Tensor) else np.asarray(t)
    return np.ascontiguousarray(a).reshape(a.shape)  # ascontiguousarray makes 0-d arrays 1-d


def as_list(y):
    return list(y) if isinstance(y, (tuple, list)) else [y]


def infer_shapes(path):
    onnx.save(onnx.shape_inference.infer_shapes(onnx.load(path)), path)


class Fn(nn.Module):
    def __init__(self, fn, **modules):
        super().__init__()
        self.fn = fn
        for k, m in modules.items():
            setattr(self, k, m)

    def forward(self, *xs):
        return self.fn(self, *xs)


def export_torch(zoo, name, model, inputs, opset=13, dynamic=None, in_names=None, out_names=None,
                 training=torch.onnx.TrainingMode.EVAL, rtol=RTOL, atol=ATOL, fold=True):
    """Exports `model` on `inputs` and records torch's outputs as the case `name`.

    dynamic: {input_name: {axis: symbol}} (outputs get the first axis "batch" too).
    """
    model.eval()
    inputs = tuple(inputs)
    in_names = in_names or [f"x{k}" if len(inputs) > 1 else "input" for k in range(len(inputs))]
    with torch.no_grad():
        ref = as_list(model(*inputs))
    out_names = out_names or [f"out{k}" if len(ref) > 1 else "output" for k in range(len(ref))]
    kwargs = {}
    if dynamic:
        axes = dict(dynamic)
        for o in out_names:
            axes.setdefault(o, {0: "batch"})
        kwargs["dynamic_axes"] = axes
    onnx_file = f"{name}.onnx"
    torch.onnx.export(model, inputs, zoo.path(onnx_file), opset_version=opset, input_names=in_names,
                      output_names=out_names, training=training, do_constant_folding=fold, **kwargs)
    infer_shapes(zoo.path(onnx_file))
    zoo.case(name, onnx_file, inputs, ref, rtol, atol)
    return onnx_file


def export_helper(zoo, name, nodes, inputs, outputs, reference, opset=13, initializers=(),
                  rtol=RTOL, atol=ATOL):
    """A graph built with onnx.helper. inputs: [(name, tensor)]; outputs: [(name, elem_type, shape)];
    reference: the torch outputs for the inputs."""
    vi_in = [helper.make_tensor_value_info(n, onnx_type(t.dtype), list(t.shape)) for n, t in inputs]
    vi_out = [helper.make_tensor_value_info(n, ty, shape) for n, ty, shape in outputs]
    graph = helper.make_graph(nodes, name, vi_in, vi_out, initializer=list(initializers))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                              producer_name="model_zoo.py")
    onnx_file = f"{name}.onnx"
    try:
        model = onnx.shape_inference.infer_shapes(model)
    except Exception:  # an op newer than this onnx (Gelu): keep the graph as built
        pass
    onnx.save(model, zoo.path(onnx_file))
    zoo.case(name, onnx_file, [t for _, t in inputs], as_list(reference), rtol, atol)


def onnx_type(dtype):
    return {torch.float32: TensorProto.FLOAT, torch.int64: TensorProto.INT64, torch.bool: TensorProto.BOOL,
            torch.int32: TensorProto.INT32, torch.uint8: TensorProto.UINT8, torch.int8: TensorProto.INT8}[dtype]


def ints(name, values):
    return helper.make_tensor(name, TensorProto.INT64, [len(values)], values)


# ----------------------------------------------------------------------------
# Real networks


class Mlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(64, 128)
        self.fc2 = nn.Linear(128, 64)
        self.fc3 = nn.Linear(64, 10)

    def forward(self, x):
        return self.fc3(torch.relu(self.fc2(torch.relu(self.fc1(x)))))


def calibrate_bn(model, shape, steps=2):
    """Running statistics from random data (cumulative average), so activations stay O(1)."""
    for m in model.modules():
        if isinstance(m, (nn.BatchNorm1d, nn.BatchNorm2d)):
            m.reset_running_stats()
            m.momentum = None
    model.train()
    with torch.no_grad():
        for _ in range(steps):
            model(torch.randn(*shape))
    model.eval()


class BertEncoder(nn.Module):
    """Token + position embeddings, LayerNorm, self-attention layers written out."""

    def __init__(self, vocab=1000, max_pos=128, d=128, heads=4, layers=2, ff=256):
        super().__init__()
        self.heads, self.d_head = heads, d // heads
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(max_pos, d)
        self.register_buffer("position_ids", torch.arange(max_pos).unsqueeze(0))
        self.ln_emb = nn.LayerNorm(d, eps=1e-12)
        self.layers = nn.ModuleList()
        for _ in range(layers):
            self.layers.append(nn.ModuleDict({
                "q": nn.Linear(d, d), "k": nn.Linear(d, d), "v": nn.Linear(d, d), "o": nn.Linear(d, d),
                "ln1": nn.LayerNorm(d, eps=1e-12), "ff1": nn.Linear(d, ff), "ff2": nn.Linear(ff, d),
                "ln2": nn.LayerNorm(d, eps=1e-12)}))

    def split_heads(self, x):
        x = x.view(x.size(0), -1, self.heads, self.d_head)
        return x.permute(0, 2, 1, 3)

    def forward(self, ids, mask):
        seq = ids.size(1)
        pos = self.position_ids[:, :seq]
        h = self.ln_emb(self.tok(ids) + self.pos(pos))
        # [batch, seq] int64 (1: attend, 0: padding) -> additive [batch, 1, 1, seq]
        add_mask = (1.0 - mask[:, None, None, :].to(torch.float32)) * -10000.0
        for l in self.layers:
            q, k, v = self.split_heads(l["q"](h)), self.split_heads(l["k"](h)), self.split_heads(l["v"](h))
            scores = torch.matmul(q, k.transpose(-1, -2)) / (self.d_head ** 0.5) + add_mask
            ctx = torch.matmul(torch.softmax(scores, dim=-1), v)
            ctx = ctx.permute(0, 2, 1, 3).contiguous()
            ctx = ctx.view(ctx.size(0), -1, self.heads * self.d_head)
            h = l["ln1"](h + l["o"](ctx))
            h = l["ln2"](h + l["ff2"](F.gelu(l["ff1"](h))))
        return h


def real_models(zoo, only):
    def want(n):
        return only is None or n in only

    if want("mlp"):
        torch.manual_seed(10)
        mlp = Mlp().eval()
        export_torch(zoo, "mlp", mlp, [torch.randn(1, 64)], dynamic={"input": {0: "batch"}})
        with torch.no_grad():
            x2 = torch.randn(2, 64)
            zoo.case("mlp_b2", "mlp.onnx", [x2], [mlp(x2)])

    import torchvision
    if want("mobilenet_v2"):
        torch.manual_seed(11)
        net = torchvision.models.mobilenet_v2(weights=None)
        calibrate_bn(net, (4, 3, 224, 224))
        export_torch(zoo, "mobilenet_v2", net, [torch.randn(1, 3, 224, 224)], dynamic={"input": {0: "batch"}})
        with torch.no_grad():
            x2 = torch.randn(2, 3, 224, 224)
            zoo.case("mobilenet_v2_b2", "mobilenet_v2.onnx", [x2], [net(x2)])

    if want("resnet18"):
        torch.manual_seed(12)
        net = torchvision.models.resnet18(weights=None)
        calibrate_bn(net, (4, 3, 224, 224))
        export_torch(zoo, "resnet18", net, [torch.randn(1, 3, 224, 224)], dynamic={"input": {0: "batch"}})

    if want("transformer"):
        torch.manual_seed(13)
        layer = nn.TransformerEncoderLayer(d_model=256, nhead=4, dim_feedforward=1024, dropout=0.1,
                                           batch_first=True)  # [batch, seq, d]
        enc = nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False).eval()
        x = torch.randn(1, 128, 256)
        # torch 1.13 takes its fused fast path (one aten op, not exportable) in eval mode
        # without grad; with grad enabled it runs the plain modules, which export as ONNX ops.
        with torch.enable_grad():
            ref = enc(x).detach()
            torch.onnx.export(enc, (x,), zoo.path("transformer.onnx"), opset_version=13,
                              input_names=["input"], output_names=["output"],
                              dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}})
        infer_shapes(zoo.path("transformer.onnx"))
        zoo.case("transformer", "transformer.onnx", [x], [ref])
        with torch.enable_grad():
            x2 = torch.randn(2, 128, 256)
            zoo.case("transformer_b2", "transformer.onnx", [x2], [enc(x2).detach()])

    for opset in (14, 17):
        if not want(f"bert_opset{opset}"):
            continue
        torch.manual_seed(14)
        bert = BertEncoder().eval()
        ids = torch.randint(0, 1000, (2, 32))
        mask = torch.ones(2, 32, dtype=torch.int64)
        mask[1, 20:] = 0
        export_torch(zoo, f"bert_opset{opset}", bert, [ids, mask], opset=opset, in_names=["ids", "mask"],
                     out_names=["hidden"],
                     dynamic={"ids": {0: "batch", 1: "seq"}, "mask": {0: "batch", 1: "seq"},
                              "hidden": {0: "batch", 1: "seq"}})
        # Other sizes through the same file: batch 1, seq 20 (padding at the end).
        ids1 = torch.randint(0, 1000, (1, 20))
        mask1 = torch.ones(1, 20, dtype=torch.int64)
        mask1[0, 15:] = 0
        with torch.no_grad():
            zoo.case(f"bert_opset{opset}_b1", f"bert_opset{opset}.onnx", [ids1, mask1], [bert(ids1, mask1)])


# ----------------------------------------------------------------------------
# One tiny model per supported ONNX op, with edge cases


def r(*shape):
    return torch.randn(*shape)


def pos(*shape):
    return torch.rand(*shape) + 0.5


def op_models(zoo, only):
    cases = []  # (name, fn(module, *xs), inputs, kwargs)

    def t(name, fn, inputs, **kw):
        cases.append((name, fn, inputs, kw))

    # Elementwise binary, with broadcasting.
    t("op_add_broadcast", lambda m, x, y: x + y, [r(2, 3, 4), r(4)])
    t("op_sub_broadcast", lambda m, x, y: x - y, [r(2, 1, 4), r(3, 1)])
    t("op_mul", lambda m, x, y: x * y, [r(2, 3), r(2, 1)])
    t("op_div", lambda m, x, y: x / y, [r(3, 4), pos(3, 4)])
    t("op_pow", lambda m, x, y: torch.pow(x, y), [pos(3, 4), r(3, 4)])
    t("op_pow_square", lambda m, x: torch.pow(x, 2.0), [r(5)])
    t("op_max", lambda m, x, y: torch.maximum(x, y), [r(2, 3), r(3)])
    t("op_min", lambda m, x, y: torch.minimum(x, y), [r(2, 3), r(2, 1)])
    t("op_equal", lambda m, x, y: torch.eq(x, y), [torch.tensor([[1, 2, 3], [4, 5, 6]]), torch.tensor([1, 5, 6])])
    t("op_less", lambda m, x, y: x < y, [r(2, 3), r(3)])
    t("op_greater", lambda m, x, y: x > y, [r(2, 3), r(2, 1)])
    t("op_where", lambda m, x, y: torch.where(x > 0, x, y), [r(2, 3, 4), r(4)])
    # Unary.
    t("op_relu", lambda m, x: torch.relu(x), [r(2, 5)])
    t("op_sigmoid", lambda m, x: torch.sigmoid(x), [r(2, 5)])
    t("op_tanh", lambda m, x: torch.tanh(x), [r(2, 5)])
    t("op_exp", lambda m, x: torch.exp(x), [r(2, 5)])
    t("op_log", lambda m, x: torch.log(x), [pos(2, 5)])
    t("op_sqrt", lambda m, x: torch.sqrt(x), [pos(2, 5)])
    t("op_erf", lambda m, x: torch.erf(x), [r(2, 5)])
    t("op_sin", lambda m, x: torch.sin(x), [r(2, 5) * 3])
    t("op_cos", lambda m, x: torch.cos(x), [r(2, 5) * 3])
    t("op_neg", lambda m, x: -x, [r(2, 5)])
    t("op_abs", lambda m, x: torch.abs(x), [r(2, 5)])
    t("op_clip_min_only", lambda m, x: torch.clamp(x, min=-0.5), [r(3, 4)])
    t("op_clip_max_only", lambda m, x: torch.clamp(x, max=0.25), [r(3, 4)])
    t("op_clip_both", lambda m, x: torch.clamp(x, -1.0, 1.0), [r(3, 4) * 2])
    # Linear algebra.
    t("op_matmul", lambda m, x, y: torch.matmul(x, y), [r(2, 3, 4), r(4, 5)])
    t("op_matmul_batched", lambda m, x, y: torch.matmul(x, y), [r(2, 3, 4), r(2, 4, 5)])
    t("op_matmul_broadcast", lambda m, x, y: torch.matmul(x, y), [r(3, 4), r(2, 4, 5)])
    t("op_gemm", lambda m, x: m.fc(x), [r(3, 6)], fc=nn.Linear(6, 4))
    t("op_gemm_no_bias", lambda m, x: m.fc(x), [r(3, 6)], fc=nn.Linear(6, 4, bias=False))
    # Convolution, pooling, normalization.
    t("op_conv", lambda m, x: m.c(x), [r(1, 3, 9, 9)], c=nn.Conv2d(3, 4, 3, stride=2, padding=1))
    t("op_conv_groups_dilation", lambda m, x: m.c(x), [r(2, 4, 10, 10)],
      c=nn.Conv2d(4, 6, 3, padding=2, dilation=2, groups=2))
    t("op_conv_depthwise", lambda m, x: m.c(x), [r(1, 4, 8, 8)], c=nn.Conv2d(4, 4, 3, padding=1, groups=4))
    t("op_conv1d", lambda m, x: m.c(x), [r(2, 3, 12)], c=nn.Conv1d(3, 5, 3, padding=1))
    t("op_maxpool", lambda m, x: F.max_pool2d(x, 3, stride=2, padding=1), [r(1, 3, 9, 9)])
    t("op_maxpool_ceil", lambda m, x: F.max_pool2d(x, 2, stride=2, ceil_mode=True), [r(1, 2, 7, 7)])
    t("op_avgpool", lambda m, x: F.avg_pool2d(x, 2), [r(1, 3, 8, 8)])
    t("op_avgpool_pad_exclude", lambda m, x: F.avg_pool2d(x, 3, stride=2, padding=1, count_include_pad=False),
      [r(1, 2, 7, 7)])
    t("op_global_avgpool", lambda m, x: F.adaptive_avg_pool2d(x, 1), [r(2, 3, 5, 5)])
    t("op_batchnorm", lambda m, x: m.bn(x), [r(2, 3, 4, 4)], bn=nn.BatchNorm2d(3), bn_stats=True)
    t("op_batchnorm1d", lambda m, x: m.bn(x), [r(2, 3, 6)], bn=nn.BatchNorm1d(3), bn_stats=True)
    t("op_layernorm", lambda m, x: m.ln(x), [r(2, 3, 8)], ln=nn.LayerNorm(8), opset=17, ln_params=True)
    t("op_layernorm_2d", lambda m, x: m.ln(x), [r(2, 3, 4)], ln=nn.LayerNorm([3, 4]), opset=17, ln_params=True)
    t("op_softmax_axis1", lambda m, x: torch.softmax(x, dim=1), [r(2, 3, 4)])
    t("op_softmax_opset11", lambda m, x: torch.softmax(x, dim=-1), [r(2, 3, 4)], opset=11)
    t("op_logsoftmax", lambda m, x: torch.log_softmax(x, dim=-1), [r(2, 5)])
    # Shapes and data movement.
    t("op_flatten", lambda m, x: torch.flatten(x, 1), [r(2, 3, 4)])
    t("op_reshape", lambda m, x: x.reshape(4, -1, 2), [r(2, 3, 4)])
    t("op_transpose", lambda m, x: x.permute(2, 0, 1), [r(2, 3, 4)])
    t("op_unsqueeze_negative", lambda m, x: x.unsqueeze(-1), [r(2, 3)])
    t("op_unsqueeze_opset11", lambda m, x: x.unsqueeze(0), [r(2, 3)], opset=11)
    t("op_squeeze", lambda m, x: x.squeeze(1), [r(2, 1, 3)])
    t("op_squeeze_opset11", lambda m, x: x.squeeze(-1), [r(2, 3, 1)], opset=11)
    t("op_concat_negative_axis", lambda m, x, y: torch.cat([x, y], dim=-1), [r(2, 3), r(2, 2)])
    t("op_slice_steps", lambda m, x: x[:, 1::2, -3:], [r(2, 7, 5)])
    t("op_slice_negative", lambda m, x: x[..., 1:-1], [r(3, 6)])
    t("op_split_uneven", lambda m, x: torch.split(x, [2, 3], dim=1), [r(2, 5, 3)])
    t("op_split_chunk", lambda m, x: torch.chunk(x, 3, dim=-1), [r(2, 7)])
    t("op_split_opset11", lambda m, x: torch.split(x, [1, 3], dim=0), [r(4, 2)], opset=11)
    t("op_expand", lambda m, x: x.expand(2, 3, 4), [r(3, 1)])
    t("op_gather_embedding", lambda m, ids: m.emb(ids), [torch.tensor([[0, 3, 9], [2, 2, 1]])],
      emb=nn.Embedding(10, 4))
    # gather -> GatherElements, topk -> TopK (k a constant input), cumsum -> CumSum,
    # scatter_add -> ScatterElements (reduction add, opset 16), index_select -> Gather.
    t("op_gather_topk_cumsum",
      lambda m, x, i: (*torch.topk(x, 3, dim=1), torch.cumsum(torch.gather(x, 1, i), 1),
                       torch.zeros(3, 5).scatter_add(1, i, x[:, :2] * 2).index_select(0, torch.tensor([2, 0]))),
      [r(3, 5), torch.tensor([[4, 0], [2, 2], [1, 3]])], opset=16)
    t("op_cast_float_to_int", lambda m, x: (x * 3).to(torch.int64), [r(2, 5)])
    t("op_cast_int_to_float", lambda m, x: x.to(torch.float32) * 0.5, [torch.tensor([[-3, 0, 7]])])
    t("op_reducemean", lambda m, x: x.mean(dim=-1, keepdim=True), [r(2, 3, 4)])
    t("op_reducesum", lambda m, x: x.sum(dim=(0, 2)), [r(2, 3, 4)])
    t("op_reducemean_opset11", lambda m, x: x.mean(dim=1), [r(2, 3, 4)], opset=11)
    t("op_pad_constant", lambda m, x: F.pad(x, (1, 2, 0, 1), value=0.5), [r(1, 2, 3, 3)])
    t("op_pad_reflect", lambda m, x: F.pad(x, (2, 1, 1, 2), mode="reflect"), [r(1, 2, 4, 4)])
    t("op_pad_edge", lambda m, x: F.pad(x, (1, 2, 2, 0), mode="replicate"), [r(1, 2, 3, 3)])
    t("op_constantofshape", lambda m, x: torch.zeros(x.size(0), 3) + x[:, :1], [r(2, 4)],
      dynamic={"input": {0: "batch"}})
    t("op_shape_view_dynamic", lambda m, x: x.view(x.size(0), -1, 2), [r(3, 4, 2)],
      dynamic={"input": {0: "batch"}})

    for i, (name, fn, inputs, kw) in enumerate(cases):
        if only is not None and name not in only:
            continue
        torch.manual_seed(100 + i)
        opset = kw.pop("opset", 13)
        dynamic = kw.pop("dynamic", None)
        bn_stats = kw.pop("bn_stats", False)
        ln_params = kw.pop("ln_params", False)
        m = Fn(fn, **kw)
        with torch.no_grad():
            for mod in m.modules():
                if bn_stats and isinstance(mod, (nn.BatchNorm1d, nn.BatchNorm2d)):
                    mod.running_mean.uniform_(-0.5, 0.5)
                    mod.running_var.uniform_(0.5, 1.5)
                    mod.weight.uniform_(0.5, 1.5)
                    mod.bias.uniform_(-0.5, 0.5)
                if ln_params and isinstance(mod, nn.LayerNorm):
                    mod.weight.uniform_(0.5, 1.5)
                    mod.bias.uniform_(-0.5, 0.5)
        # BatchNorm stays a node only when the export keeps it (PRESERVE).
        training = torch.onnx.TrainingMode.PRESERVE if bn_stats else torch.onnx.TrainingMode.EVAL
        export_torch(zoo, name, m, inputs, opset=opset, dynamic=dynamic, training=training, fold=False)

    helper_models(zoo, only)
    reduce_logic_models(zoo, only)
    recurrence_quant_math_models(zoo, only)
    composite_models(zoo, only)
    index_models(zoo, only)
    dtype_models(zoo, only)
    spatial_models(zoo, only, export_torch, Fn)


def helper_models(zoo, only):
    """Ops or forms torch does not emit."""
    def want(n):
        return only is None or n in only

    torch.manual_seed(200)
    f = TensorProto.FLOAT
    if want("op_gather_negative_indices"):
        x = r(3, 5)
        idx = torch.tensor([-1, 0, -5, 2])
        export_helper(zoo, "op_gather_negative_indices",
                      [helper.make_node("Gather", ["x", "idx"], ["y"], axis=-1, name="gather")],
                      [("x", x)], [("y", f, [3, 4])], x[:, idx % 5], initializers=[ints("idx", idx.tolist())])
    if want("op_gather_scalar_index"):
        x = r(4, 3)
        export_helper(zoo, "op_gather_scalar_index",
                      [helper.make_node("Gather", ["x", "i"], ["y"], axis=0, name="gather")],
                      [("x", x)], [("y", f, [3])], x[-2],
                      initializers=[helper.make_tensor("i", TensorProto.INT64, [], [-2])])
    if want("op_gelu"):
        x = r(2, 6)
        export_helper(zoo, "op_gelu", [helper.make_node("Gelu", ["x"], ["y"], name="gelu")],
                      [("x", x)], [("y", f, [2, 6])], F.gelu(x), opset=17)
    if want("op_gelu_tanh"):
        x = r(2, 6)
        export_helper(zoo, "op_gelu_tanh", [helper.make_node("Gelu", ["x"], ["y"], approximate="tanh", name="gelu")],
                      [("x", x)], [("y", f, [2, 6])], F.gelu(x, approximate="tanh"), opset=17)
    # The unary math ops of ops.def with an ONNX name: one node each, torch's values.
    unit = lambda *s: torch.rand(*s) * 1.9 - 0.95  # noqa: E731
    unary_math = [
        ("op_reciprocal", "Reciprocal", torch.reciprocal, torch.sign(r(2, 5)) * pos(2, 5), 13),
        ("op_floor", "Floor", torch.floor, r(2, 5) * 3, 13),
        ("op_ceil", "Ceil", torch.ceil, r(2, 5) * 3, 13),
        ("op_round", "Round", torch.round, torch.cat([torch.round(r(2, 4) * 4) / 2, r(2, 4) * 3], 1), 13),
        ("op_sign", "Sign", torch.sign, torch.cat([r(2, 4), torch.zeros(2, 1)], 1), 13),
        ("op_tan", "Tan", torch.tan, r(2, 5), 13),
        ("op_asin", "Asin", torch.asin, unit(2, 5), 13),
        ("op_acos", "Acos", torch.acos, unit(2, 5), 13),
        ("op_atan", "Atan", torch.atan, r(2, 5) * 3, 13),
        ("op_sinh", "Sinh", torch.sinh, r(2, 5) * 2, 13),
        ("op_cosh", "Cosh", torch.cosh, r(2, 5) * 2, 13),
        ("op_asinh", "Asinh", torch.asinh, r(2, 5) * 3, 13),
        ("op_acosh", "Acosh", torch.acosh, pos(2, 5) * 3 + 0.5, 13),
        ("op_atanh", "Atanh", torch.atanh, unit(2, 5), 13),
        ("op_softsign", "Softsign", F.softsign, r(2, 5) * 3, 13),
        # Softplus: torch's threshold 20 (x itself above) vs ONNX's ln(1 + e^x): < 2.1e-9 apart.
        ("op_softplus", "Softplus", F.softplus, r(2, 5) * 12, 13),
        # Mish is ONNX opset 18; this onnx and the importer stop at 17 (as Gelu above).
        ("op_mish", "Mish", F.mish, r(2, 5) * 3, 17),
    ]
    for name, onnx_op, fn, x, opset in unary_math:
        if want(name):
            export_helper(zoo, name, [helper.make_node(onnx_op, ["x"], ["y"], name=onnx_op.lower())],
                          [("x", x)], [("y", f, list(x.shape))], fn(x), opset=opset)
    # The activations (hardswish, the RT_UNARY_P ops): ONNX's defaults and given attributes.
    thresholded = lambda x, a=1.0: torch.where(x > a, x, torch.zeros_like(x))  # noqa: E731
    activations = [
        ("op_hardswish", "HardSwish", {}, F.hardswish, 14),
        ("op_hardsigmoid", "HardSigmoid", {}, lambda x: torch.clamp(0.2 * x + 0.5, 0, 1), 13),
        ("op_hardsigmoid_torch", "HardSigmoid", {"alpha": 1 / 6}, F.hardsigmoid, 13),
        ("op_leakyrelu", "LeakyRelu", {}, F.leaky_relu, 13),
        ("op_leakyrelu_alpha", "LeakyRelu", {"alpha": 0.2}, lambda x: F.leaky_relu(x, 0.2), 13),
        ("op_elu", "Elu", {"alpha": 0.5}, lambda x: F.elu(x, 0.5), 13),
        ("op_selu", "Selu", {}, F.selu, 13),
        ("op_celu", "Celu", {"alpha": 2.0}, lambda x: F.celu(x, 2.0), 13),
        ("op_thresholdedrelu", "ThresholdedRelu", {"alpha": 0.5}, lambda x: thresholded(x, 0.5), 13),
    ]
    for name, onnx_op, attrs, fn, opset in activations:
        if want(name):
            x = r(2, 5) * 4
            export_helper(zoo, name, [helper.make_node(onnx_op, ["x"], ["y"], name=onnx_op.lower(), **attrs)],
                          [("x", x)], [("y", f, list(x.shape))], fn(x), opset=opset)
    if want("op_shape"):
        x = r(2, 3, 4)
        export_helper(zoo, "op_shape", [helper.make_node("Shape", ["x"], ["y"], name="shape")],
                      [("x", x)], [("y", TensorProto.INT64, [3])], torch.tensor([2, 3, 4]))
    if want("op_shape_start_end"):
        x = r(2, 3, 4, 5)
        export_helper(zoo, "op_shape_start_end",
                      [helper.make_node("Shape", ["x"], ["y"], start=1, end=-1, name="shape")],
                      [("x", x)], [("y", TensorProto.INT64, [2])], torch.tensor([3, 4]), opset=15)
    if want("op_constant"):
        x = r(2, 3)
        c = torch.tensor([0.5, -1.0, 2.0])
        export_helper(zoo, "op_constant",
                      [helper.make_node("Constant", [], ["c"], value_floats=c.tolist(), name="const"),
                       helper.make_node("Constant", [], ["k"], value=helper.make_tensor(
                           "k", f, [1], [3.0]), name="const_t"),
                       helper.make_node("Mul", ["x", "c"], ["xc"], name="mul"),
                       helper.make_node("Add", ["xc", "k"], ["y"], name="add")],
                      [("x", x)], [("y", f, [2, 3])], x * c + 3.0)
    if want("op_constantofshape_int"):
        x = r(2, 3)
        export_helper(zoo, "op_constantofshape_int",
                      [helper.make_node("Shape", ["x"], ["s"], name="shape"),
                       helper.make_node("ConstantOfShape", ["s"], ["y"], name="cos",
                                        value=helper.make_tensor("v", TensorProto.INT64, [1], [7]))],
                      [("x", x)], [("y", TensorProto.INT64, [2, 3])], torch.full((2, 3), 7, dtype=torch.int64))
    if want("op_identity_dropout"):
        x = r(2, 3)
        export_helper(zoo, "op_identity_dropout",
                      [helper.make_node("Identity", ["x"], ["a"], name="identity"),
                       helper.make_node("Dropout", ["a"], ["b"], name="dropout"),
                       helper.make_node("Relu", ["b"], ["y"], name="relu")],
                      [("x", x)], [("y", f, [2, 3])], torch.relu(x))
    if want("op_where_broadcast_cond"):
        c, x, y = torch.tensor([True, False, True]), r(2, 3), r(2, 1)
        export_helper(zoo, "op_where_broadcast_cond", [helper.make_node("Where", ["c", "x", "y"], ["z"], name="where")],
                      [("c", c), ("x", x), ("y", y)], [("z", f, [2, 3])], torch.where(c, x, y))
    if want("op_cast_bool"):
        x = torch.tensor([[0.0, 1.5, -2.0, 0.0]])
        export_helper(zoo, "op_cast_bool",
                      [helper.make_node("Cast", ["x"], ["b"], to=TensorProto.BOOL, name="to_bool"),
                       helper.make_node("Cast", ["b"], ["y"], to=TensorProto.FLOAT, name="to_float")],
                      [("x", x)], [("y", f, [1, 4])], (x != 0).to(torch.float32))
    if want("op_expand_broadcast_rank"):
        x = r(3, 1)
        export_helper(zoo, "op_expand_broadcast_rank", [helper.make_node("Expand", ["x", "s"], ["y"], name="expand")],
                      [("x", x)], [("y", f, [2, 3, 4])], x.expand(2, 3, 4), initializers=[ints("s", [2, 1, 4])])
    if want("op_slice_axes_negative_step2"):
        x = r(4, 6, 5)
        export_helper(zoo, "op_slice_axes_negative_step2",
                      [helper.make_node("Slice", ["x", "st", "en", "ax", "sp"], ["y"], name="slice")],
                      [("x", x)], [("y", f, [4, 3, 2])], x[:, 0:6:2, -4:-1:2],
                      initializers=[ints("st", [0, -4]), ints("en", [100, -1]), ints("ax", [1, -1]),
                                    ints("sp", [2, 2])])
    if want("op_max_variadic"):
        a, b, c = r(2, 3), r(3), r(2, 1)
        export_helper(zoo, "op_max_variadic", [helper.make_node("Max", ["a", "b", "c"], ["y"], name="max")],
                      [("a", a), ("b", b), ("c", c)], [("y", f, [2, 3])], torch.maximum(torch.maximum(a, b), c))


def reduce_logic_models(zoo, only):
    """The reductions, ArgMax/ArgMin, comparisons, logical ops and composites of
    converter/lower_reduce.cc and lower_composite.cc (axes as attributes: opset 13)."""
    def want(n):
        return only is None or n in only

    torch.manual_seed(201)
    f, i64, b = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL
    mk = helper.make_node
    if want("op_reduce_max_min_prod"):
        x = r(2, 3, 4)
        export_helper(zoo, "op_reduce_max_min_prod",
                      [mk("ReduceMax", ["x"], ["a"], axes=[1], keepdims=0, name="rmax"),
                       mk("ReduceMin", ["x"], ["b"], axes=[-1], name="rmin"),
                       mk("ReduceProd", ["x"], ["c"], axes=[0, 2], keepdims=0, name="rprod")],
                      [("x", x)], [("a", f, [2, 4]), ("b", f, [2, 3, 1]), ("c", f, [3])],
                      [x.amax(1), x.amin(-1, keepdim=True), x.prod(2).prod(0)])
    if want("op_reduce_norms"):
        x = r(2, 3, 4)
        export_helper(zoo, "op_reduce_norms",
                      [mk("ReduceL1", ["x"], ["a"], axes=[1], name="l1"),
                       mk("ReduceL2", ["x"], ["b"], axes=[2], keepdims=0, name="l2"),
                       mk("ReduceSumSquare", ["x"], ["c"], name="ssq")],
                      [("x", x)], [("a", f, [2, 1, 4]), ("b", f, [2, 3]), ("c", f, [1, 1, 1])],
                      [x.abs().sum(1, keepdim=True), x.square().sum(2).sqrt(), x.square().sum().reshape(1, 1, 1)])
    if want("op_reduce_logs"):
        x, p = r(2, 3, 4) * 40, pos(2, 3, 4)  # exp(40 * 3) overflows float32: the max is subtracted
        export_helper(zoo, "op_reduce_logs",
                      [mk("ReduceLogSum", ["p"], ["a"], axes=[1], name="logsum"),
                       mk("ReduceLogSumExp", ["x"], ["b"], axes=[0, 2], keepdims=0, name="lse")],
                      [("p", p), ("x", x)], [("a", f, [2, 1, 4]), ("b", f, [3])],
                      [p.sum(1, keepdim=True).log(), torch.logsumexp(x, (0, 2))])
    if want("op_argmax_argmin"):
        x = torch.randint(0, 3, (3, 5)).float()  # ties: first and last index differ
        last = 4 - x.flip(-1).argmin(-1, keepdim=True)
        export_helper(zoo, "op_argmax_argmin",
                      [mk("ArgMax", ["x"], ["a"], axis=1, keepdims=0, name="argmax"),
                       mk("ArgMin", ["x"], ["b"], axis=-1, select_last_index=1, name="argmin")],
                      [("x", x)], [("a", i64, [3]), ("b", i64, [3, 1])], [x.argmax(1), last])
    if want("op_compare_logic"):
        x, y = torch.randint(0, 3, (2, 3)).float(), torch.randint(0, 3, (3,)).float()
        ge, le = x >= y, x <= y
        export_helper(zoo, "op_compare_logic",
                      [mk("GreaterOrEqual", ["x", "y"], ["ge"], name="ge"),
                       mk("LessOrEqual", ["x", "y"], ["le"], name="le"),
                       mk("And", ["ge", "le"], ["and"], name="and"), mk("Or", ["ge", "le"], ["or"], name="or"),
                       mk("Xor", ["ge", "le"], ["xor"], name="xor"), mk("Not", ["and"], ["not"], name="not")],
                      [("x", x), ("y", y)], [(n, b, [2, 3]) for n in ("and", "or", "xor", "not")],
                      [ge & le, ge | le, ge ^ le, ~(ge & le)])
    if want("op_sum_mean_prelu_castlike"):
        x, y = r(2, 3), r(3)
        slope = torch.tensor([0.25, -1.0, 2.0])
        export_helper(zoo, "op_sum_mean_prelu_castlike",
                      [mk("Sum", ["x", "y", "x"], ["s"], name="sum"), mk("Mean", ["x", "y"], ["m"], name="mean"),
                       mk("PRelu", ["x", "slope"], ["p"], name="prelu"),
                       mk("CastLike", ["x", "like"], ["c"], name="castlike")],
                      [("x", x), ("y", y)],
                      [("s", f, [2, 3]), ("m", f, [2, 3]), ("p", f, [2, 3]), ("c", TensorProto.INT32, [2, 3])],
                      [x + y + x, (x + y) / 2, torch.where(x < 0, x * slope, x), x.int()],
                      opset=15, initializers=[helper.make_tensor("slope", f, [3], slope.tolist()),
                                    helper.make_tensor("like", TensorProto.INT32, [1], [0])])
    if want("op_runtime_axes_range_size"):
        # Axes, bounds and range arguments that only the run gives (graph inputs).
        x = r(2, 3, 4)
        axes, lo, hi = torch.tensor([0, -1]), torch.tensor(-0.5), torch.tensor(0.5)
        start, delta = torch.tensor(1), torch.tensor(5)
        export_helper(zoo, "op_runtime_axes_range_size",
                      [mk("ReduceSum", ["x", "axes"], ["s"], keepdims=0, name="sum"),
                       mk("ReduceMax", ["x", "axes"], ["m"], name="max"),
                       mk("Unsqueeze", ["s", "axes"], ["u"], name="unsqueeze"),
                       mk("Clip", ["x", "lo", "hi"], ["c"], name="clip"),
                       mk("Size", ["x"], ["n"], name="size"),
                       mk("Range", ["start", "n", "delta"], ["range"], name="range")],
                      [("x", x), ("axes", axes), ("lo", lo), ("hi", hi), ("start", start), ("delta", delta)],
                      [("s", f, [3]), ("m", f, [1, 3, 1]), ("u", f, [1, 3, 1]), ("c", f, [2, 3, 4]),
                       ("n", i64, []), ("range", i64, ["len"])],
                      [x.sum((0, 2)), x.amax((0, 2), keepdim=True), x.sum((0, 2)).reshape(1, 3, 1),
                       x.clamp(-0.5, 0.5), torch.tensor(24), torch.arange(1, 24, 5)], opset=18)
    if want("op_layernorm_stats"):
        x, w, bias = r(2, 3, 4), r(3, 4), r(3, 4)
        mean = x.mean((1, 2), keepdim=True)
        inv = (x.var((1, 2), unbiased=False, keepdim=True) + 1e-5).rsqrt()
        export_helper(zoo, "op_layernorm_stats",
                      [mk("LayerNormalization", ["x", "w", "bias"], ["y", "mean", "inv"], axis=1, name="ln")],
                      [("x", x)], [("y", f, [2, 3, 4]), ("mean", f, [2, 1, 1]), ("inv", f, [2, 1, 1])],
                      [(x - mean) * inv * w + bias, mean, inv], opset=17,
                      initializers=[helper.make_tensor("w", f, [3, 4], w.flatten().tolist()),
                                    helper.make_tensor("bias", f, [3, 4], bias.flatten().tolist())])


def recurrence_quant_math_models(zoo, only):
    """converter/lower_rnn.cc (torch's LSTM, GRU, RNN exports), lower_quant.cc and
    lower_math.cc (torch's einsum; the others built with onnx.helper, their
    references written with torch ops: integers exact, computed in float64)."""
    def want(n):
        return only is None or n in only

    torch.manual_seed(202)
    f, u8, i32 = TensorProto.FLOAT, TensorProto.UINT8, TensorProto.INT32
    mk = helper.make_node
    if want("op_lstm"):  # bidirectional, batch first, initial states
        lstm = nn.LSTM(3, 4, bidirectional=True, batch_first=True)
        export_torch(zoo, "op_lstm", Fn(lambda m, x, h, c: (lambda y, s: (y, *s))(*m.lstm(x, (h, c))), lstm=lstm), [r(2, 5, 3), r(2, 2, 4),
                     r(2, 2, 4)], opset=14, out_names=["y", "h", "c"])
    if want("op_gru"):
        gru = nn.GRU(3, 4)
        export_torch(zoo, "op_gru", Fn(lambda m, x, h: m.gru(x, h), gru=gru), [r(5, 2, 3), r(1, 2, 4)], opset=14,
                     out_names=["y", "h"])
    if want("op_rnn_relu"):  # activations = ["Relu"]
        rnn = nn.RNN(3, 4, nonlinearity="relu", num_layers=2)
        export_torch(zoo, "op_rnn_relu", Fn(lambda m, x: m.rnn(x)[0], rnn=rnn), [r(4, 2, 3)], opset=14)
    if want("op_einsum"):
        export_torch(zoo, "op_einsum", Fn(lambda m, x, y: torch.einsum("bij,bkj->bki", x, y)), [r(2, 3, 4), r(2, 5, 4)],
                     opset=13)
    if want("op_shrink_hardmax_lpnorm_mvn"):
        x, h = r(2, 3, 2, 2), r(3, 5)
        shrunk = torch.where(x < -0.5, x + 0.2, torch.where(x > 0.5, x - 0.2, torch.zeros_like(x)))
        mean = x.mean((0, 2, 3), keepdim=True)
        std = ((x * x).mean((0, 2, 3), keepdim=True) - mean * mean).sqrt()
        export_helper(zoo, "op_shrink_hardmax_lpnorm_mvn",
                      [mk("Shrink", ["x"], ["s"], lambd=0.5, bias=0.2, name="shrink"),
                       mk("Hardmax", ["h"], ["hm"], axis=1, name="hardmax"),
                       mk("LpNormalization", ["h"], ["lp"], axis=0, p=2, name="lpnorm"),
                       mk("MeanVarianceNormalization", ["x"], ["mvn"], name="mvn")],
                      [("x", x), ("h", h)], [("s", f, [2, 3, 2, 2]), ("hm", f, [3, 5]), ("lp", f, [3, 5]),
                                             ("mvn", f, [2, 3, 2, 2])],
                      [shrunk, F.one_hot(h.argmax(1), 5).float(), F.normalize(h, dim=0), (x - mean) / (std + 1e-9)])
    if want("op_quantize_dequantize"):  # uint8 per tensor, then int8 per channel back
        x = r(2, 3, 4) * 3
        q = torch.clamp(torch.round(x / 0.05) + 128, 0, 255)
        qi = torch.clamp(torch.round(x / torch.tensor([0.02, 0.03, 0.04]).reshape(3, 1)), -128, 127)  # zero point 0
        export_helper(zoo, "op_quantize_dequantize",
                      [mk("QuantizeLinear", ["x", "s", "zp"], ["q"], name="quantize"),
                       mk("QuantizeLinear", ["x", "sc", "zpi"], ["qi"], axis=1, name="quantize_axis"),
                       mk("DequantizeLinear", ["qi", "sc", "zpi"], ["dq"], axis=1, name="dequantize")],
                      [("x", x)], [("q", u8, [2, 3, 4]), ("dq", f, [2, 3, 4])],
                      [q.to(torch.uint8), qi * torch.tensor([0.02, 0.03, 0.04]).reshape(3, 1)],
                      initializers=[helper.make_tensor("s", f, [], [0.05]), helper.make_tensor("zp", u8, [], [128]),
                                    helper.make_tensor("sc", f, [3], [0.02, 0.03, 0.04]),
                                    helper.make_tensor("zpi", TensorProto.INT8, [3], [0, 0, 0])])
    if want("op_dynamic_quantize"):
        x = r(3, 4)
        hi, lo = max(0.0, float(x.max())), min(0.0, float(x.min()))
        scale = torch.tensor((hi - lo) / 255.0, dtype=torch.float32)
        zp = torch.clamp(torch.round(0 - torch.tensor(lo) / scale), 0, 255)
        export_helper(zoo, "op_dynamic_quantize", [mk("DynamicQuantizeLinear", ["x"], ["y", "s", "z"], name="dql")],
                      [("x", x)], [("y", u8, [3, 4]), ("s", f, []), ("z", u8, [])],
                      [torch.clamp(torch.round(x / scale) + zp, 0, 255).to(torch.uint8), scale, zp.to(torch.uint8)],
                      opset=11)
    if want("op_integer_ops"):  # MatMulInteger, ConvInteger, QLinearMatMul, QLinearConv
        a = torch.randint(0, 256, (3, 4), dtype=torch.uint8)
        b = torch.randint(0, 256, (4, 2), dtype=torch.uint8)
        x = torch.randint(0, 256, (1, 2, 5, 5), dtype=torch.uint8)
        w = torch.randint(0, 256, (3, 2, 3, 3), dtype=torch.uint8)
        d = torch.float64
        mm = (a.to(d) - 100) @ (b.to(d) - torch.tensor([120.0, 130.0], dtype=d))
        conv = F.conv2d(x.to(d) - 7, w.to(d) - 128, padding=1)
        m_mm = float(np.float32(0.01) * np.float32(0.02) / np.float32(0.5))
        m_conv = torch.tensor([np.float32(0.02) * np.float32(v) / np.float32(4.0) for v in (0.01, 0.02, 0.03)],
                              dtype=d).reshape(1, 3, 1, 1)
        bias = torch.tensor([1000.0, -2000.0, 0.0], dtype=d).reshape(1, 3, 1, 1)
        export_helper(zoo, "op_integer_ops",
                      [mk("MatMulInteger", ["a", "b", "azp", "bzp"], ["mm"], name="matmul_integer"),
                       mk("ConvInteger", ["x", "w", "xzp", "wzp"], ["conv"], pads=[1, 1, 1, 1], name="conv_integer"),
                       mk("QLinearMatMul", ["a", "as", "azp", "b", "bs", "bzp1", "ys", "yzp"], ["qmm"], name="qlmm"),
                       mk("QLinearConv", ["x", "xs", "xzp", "w", "ws", "wzp", "cys", "yzp", "bias"], ["qconv"],
                          pads=[1, 1, 1, 1], name="qlconv")],
                      [("a", a), ("x", x)],
                      [("mm", i32, [3, 2]), ("conv", i32, [1, 3, 5, 5]), ("qmm", u8, [3, 2]), ("qconv", u8, [1, 3, 5, 5])],
                      [mm.to(torch.int32), conv.to(torch.int32),
                       torch.clamp(torch.round((a.to(d) - 100) @ (b.to(d) - 120) * m_mm) + 128, 0, 255).to(torch.uint8),
                       torch.clamp(torch.round((conv + bias) * m_conv) + 128, 0, 255).to(torch.uint8)],
                      initializers=[helper.make_tensor("b", u8, [4, 2], b.flatten().tolist()),
                                    helper.make_tensor("azp", u8, [], [100]),
                                    helper.make_tensor("bzp", u8, [2], [120, 130]),
                                    helper.make_tensor("bzp1", u8, [], [120]),
                                    helper.make_tensor("w", u8, [3, 2, 3, 3], w.flatten().tolist()),
                                    helper.make_tensor("xzp", u8, [], [7]), helper.make_tensor("wzp", u8, [], [128]),
                                    helper.make_tensor("as", f, [], [0.01]), helper.make_tensor("bs", f, [], [0.02]),
                                    helper.make_tensor("ys", f, [], [0.5]), helper.make_tensor("yzp", u8, [], [128]),
                                    helper.make_tensor("xs", f, [], [0.02]),
                                    helper.make_tensor("ws", f, [3], [0.01, 0.02, 0.03]),
                                    helper.make_tensor("cys", f, [], [4.0]),
                                    helper.make_tensor("bias", i32, [3], [1000, -2000, 0])])


def mel_weights(bins, dft, rate, lo, hi):
    """MelWeightMatrix's triangular filters (as onnx.reference builds them), in torch float64."""
    d = torch.float64
    mel = lambda hz: 2595.0 * torch.log10(1.0 + torch.tensor(hz, dtype=d) / 700.0)
    points = torch.arange(bins + 2, dtype=d) * (mel(hi) - mel(lo)) / (bins + 2) + mel(lo)
    b = torch.floor((dft + 1) * 700.0 * (torch.pow(10.0, points / 2595.0) - 1.0) / rate)
    j = torch.arange(dft // 2 + 1, dtype=d).reshape(-1, 1)
    l, c, r = b[:-2].reshape(1, -1), b[1:-1].reshape(1, -1), b[2:].reshape(1, -1)
    w = torch.where(j < r, (r - j) / (r - c), torch.zeros(()).to(d))
    w = torch.where(j == c, torch.ones(()).to(d), w)
    w = torch.where(j < c, (j - l) / (c - l), w)
    return torch.where(j < l, torch.zeros(()).to(d), w).float()


def composite_models(zoo, only):
    """converter/lower_loss.cc, lower_pool.cc, lower_layout.cc, lower_crop_pad.cc, lower_norm.cc,
    lower_signal.cc, lower_linalg.cc: ops composed of existing ember ops (references written with torch)."""
    def want(n):
        return only is None or n in only

    torch.manual_seed(303)
    f, i64 = TensorProto.FLOAT, TensorProto.INT64
    mk = helper.make_node
    if want("op_losses"):
        x, t, w = r(3, 4, 2), torch.tensor([[0, 3], [2, 1], [1, 1]]), torch.tensor([0.5, 1.0, 2.0, 0.25])
        export_helper(zoo, "op_losses",
                      [mk("NegativeLogLikelihoodLoss", ["x", "t", "w"], ["nll"], ignore_index=1, name="nll"),
                       mk("SoftmaxCrossEntropyLoss", ["x", "t"], ["sce", "log_prob"], reduction="sum", name="sce")],
                      [("x", x), ("t", t)], [("nll", f, []), ("sce", f, []), ("log_prob", f, [3, 4, 2])],
                      [F.nll_loss(x, t, weight=w, ignore_index=1), F.cross_entropy(x, t, reduction="sum"),
                       F.log_softmax(x, 1)],
                      initializers=[helper.make_tensor("w", f, [4], w.tolist())])
    if want("op_pool_layout"):
        x, m, idx = r(1, 2, 4, 4), r(3, 4), torch.tensor([[0, 4], [2, 1]])
        export_helper(zoo, "op_pool_layout",
                      [mk("LpPool", ["x"], ["lp"], kernel_shape=[2, 2], strides=[2, 2], p=2, name="lppool"),
                       mk("GlobalMaxPool", ["x"], ["gmax"], name="gmax"),
                       mk("Trilu", ["m", "k"], ["triu"], name="trilu"),
                       mk("EyeLike", ["m"], ["eye"], k=1, name="eyelike"),
                       mk("OneHot", ["idx", "depth", "values"], ["hot"], name="onehot"),
                       mk("SpaceToDepth", ["x"], ["s2d"], blocksize=2, mode="CRD", name="s2d"),
                       mk("DepthToSpace", ["s2d"], ["d2s"], blocksize=2, mode="CRD", name="d2s"),
                       mk("Tile", ["m", "reps"], ["tile"], name="tile")],
                      [("x", x), ("m", m), ("idx", idx)],
                      [("lp", f, [1, 2, 2, 2]), ("gmax", f, [1, 2, 1, 1]), ("triu", f, [3, 4]), ("eye", f, [3, 4]),
                       ("hot", f, [2, 2, 5]), ("d2s", f, [1, 2, 4, 4]), ("tile", f, [6, 4])],
                      [F.lp_pool2d(x, 2, 2), x.amax((2, 3), keepdim=True), torch.triu(m, 1),
                       torch.ones(3, 4).triu(1).tril(1), F.one_hot(idx, 5).float(),
                       F.pixel_shuffle(F.pixel_unshuffle(x, 2), 2), m.repeat(2, 1)],
                      opset=14, initializers=[helper.make_tensor("k", i64, [], [1]), ints("depth", [5]),
                                              helper.make_tensor("values", f, [2], [0.0, 1.0]),
                                              ints("reps", [2, 1])])
    if want("op_norm_signal"):
        x, s, b, g, gb, mat = r(2, 4, 3, 3), r(4), r(4), r(2), r(2), r(2, 3, 3)
        group = F.group_norm(x, 2) * g.repeat_interleave(2).reshape(1, 4, 1, 1) + gb.repeat_interleave(2).reshape(1, 4, 1, 1)
        export_helper(zoo, "op_norm_signal",
                      [mk("CenterCropPad", ["x", "crop"], ["ccp"], axes=[2, 3], name="ccp"),
                       mk("InstanceNormalization", ["x", "s", "b"], ["inorm"], name="inorm"),
                       mk("GroupNormalization", ["x", "g", "gb"], ["gnorm"], num_groups=2, name="gnorm"),
                       mk("LRN", ["x"], ["lrn"], size=3, name="lrn"),
                       mk("HannWindow", ["n"], ["hann"], name="hann"),
                       mk("HammingWindow", ["n"], ["hamming"], name="hamming"),
                       mk("BlackmanWindow", ["n"], ["blackman"], name="blackman"),
                       mk("MelWeightMatrix", ["bins", "dft", "rate", "lo", "hi"], ["mel"], name="mel"),
                       mk("Det", ["mat"], ["det"], name="det")],
                      [("x", x), ("mat", mat)],
                      [("ccp", f, [2, 4, 1, 2]), ("inorm", f, [2, 4, 3, 3]), ("gnorm", f, [2, 4, 3, 3]),
                       ("lrn", f, [2, 4, 3, 3]), ("hann", f, [8]), ("hamming", f, [8]), ("blackman", f, [8]),
                       ("mel", f, [9, 4]), ("det", f, [2])],
                      [x[:, :, 1:2, 0:2], F.instance_norm(x, weight=s, bias=b), group, F.local_response_norm(x, 3),
                       torch.hann_window(8), torch.hamming_window(8, True, 25 / 46, 21 / 46),
                       torch.blackman_window(8), mel_weights(4, 16, 8000, 0.0, 4000.0), torch.det(mat)],
                      opset=18, initializers=[ints("crop", [1, 2]), helper.make_tensor("s", f, [4], s.tolist()),
                                              helper.make_tensor("b", f, [4], b.tolist()),
                                              helper.make_tensor("g", f, [2], g.tolist()),
                                              helper.make_tensor("gb", f, [2], gb.tolist()),
                                              helper.make_tensor("n", i64, [], [8]),
                                              helper.make_tensor("bins", i64, [], [4]),
                                              helper.make_tensor("dft", i64, [], [16]),
                                              helper.make_tensor("rate", i64, [], [8000]),
                                              helper.make_tensor("lo", f, [], [0.0]),
                                              helper.make_tensor("hi", f, [], [4000.0])])


def index_models(zoo, only):
    """The ONNX indexing, scan and selection ops of converter/lower_index.cc
    that torch 1.13 does not export, with torch's values."""
    def want(n):
        return only is None or n in only

    torch.manual_seed(301)
    f, i64 = TensorProto.FLOAT, TensorProto.INT64
    mk = helper.make_node
    if want("op_scatter_opset10"):  # Scatter (opsets 9-10): ScatterElements without reduction
        x, i, u = r(3, 4), torch.tensor([[2, 0, 1, 2], [0, 1, 2, 0]]), r(2, 4)
        export_helper(zoo, "op_scatter_opset10", [mk("Scatter", ["x", "i", "u"], ["y"], axis=0, name="scatter")],
                      [("x", x), ("i", i), ("u", u)], [("y", f, [3, 4])], torch.scatter(x, 0, i, u), opset=10)
    if want("op_index_nd_select"):  # GatherND, ScatterND, NonZero, Unique, Compress, ReverseSequence
        d, gi = r(2, 3, 2), torch.tensor([[[2], [0]], [[1], [1]]])
        sd, si, su = r(2, 2, 2), torch.tensor([[0, 1], [1, 0], [0, 1]]), r(3, 2)
        scattered = sd.clone().index_put_((si[:, 0], si[:, 1]), su, accumulate=True)
        c = torch.tensor([[0.0, 2.0, 0.0], [1.5, 0.0, 2.0]])
        uq = torch.tensor([3.0, 1.0, 3.0, 2.0, 1.0, 5.0])
        y, inverse, counts = torch.unique(uq, sorted=True, return_inverse=True, return_counts=True)
        first = torch.tensor([int((uq == v).nonzero()[0]) for v in y])
        cond = torch.tensor([True, False, True])
        seq, lens = r(4, 3, 2), torch.tensor([3, 1, 4])
        rev = seq.clone()
        for bi, n in enumerate(lens.tolist()):
            rev[:n, bi] = seq[:n, bi].flip(0)
        export_helper(zoo, "op_index_nd_select",
                      [mk("GatherND", ["d", "gi"], ["g"], batch_dims=1, name="gathernd"),
                       mk("ScatterND", ["sd", "si", "su"], ["s"], reduction="add", name="scatternd"),
                       mk("NonZero", ["c"], ["nz"], name="nonzero"),
                       mk("Unique", ["uq"], ["uy", "ui", "uinv", "uc"], sorted=1, name="unique"),
                       mk("Compress", ["c", "cond"], ["cp"], axis=1, name="compress"),
                       mk("ReverseSequence", ["seq", "lens"], ["rs"], time_axis=0, batch_axis=1, name="revseq")],
                      [("d", d), ("gi", gi), ("sd", sd), ("si", si), ("su", su), ("c", c), ("uq", uq),
                       ("cond", cond), ("seq", seq), ("lens", lens)],
                      [("g", f, [2, 2, 2]), ("s", f, [2, 2, 2]), ("nz", i64, [2, 3]), ("uy", f, [4]),
                       ("ui", i64, [4]), ("uinv", i64, [6]), ("uc", i64, [4]), ("cp", f, [2, 2]), ("rs", f, [4, 3, 2])],
                      [d[torch.arange(2)[:, None], gi[..., 0]], scattered, torch.nonzero(c).t(), y, first, inverse,
                       counts, c[:, cond], rev], opset=16)
    if want("op_cumprod_tensorscatter"):  # CumProd (opset 26), TensorScatter (24)
        x, cache, upd, wi = r(2, 4), r(2, 5, 3), r(2, 2, 3), torch.tensor([1, 3])
        present = cache.clone()
        for bi, w in enumerate(wi.tolist()):
            present[bi, w:w + 2] = upd[bi]
        export_helper(zoo, "op_cumprod_tensorscatter",
                      [mk("CumProd", ["x", "axis"], ["p"], reverse=1, name="cumprod"),
                       mk("TensorScatter", ["cache", "upd", "wi"], ["present"], axis=1, name="tensorscatter")],
                      [("x", x), ("cache", cache), ("upd", upd), ("wi", wi)],
                      [("p", f, [2, 4]), ("present", f, [2, 5, 3])],
                      [x.flip(1).cumprod(1).flip(1), present], opset=26,
                      initializers=[helper.make_tensor("axis", i64, [], [1])])

def dtype_models(zoo, only):
    """converter/lower_dtypes.cc: Mod (both forms), BitShift, the bitwise ops,
    IsNaN, IsInf and BitCast in one opset-26 graph built with onnx.helper;
    torch's remainder / fmod / shifts / bitwise ops / isnan / isposinf / view."""
    if only is not None and "op_dtype_ops" not in only:
        return
    torch.manual_seed(303)
    i32, u8, b = TensorProto.INT32, TensorProto.UINT8, TensorProto.BOOL
    mk = helper.make_node
    a = torch.randint(-50, 50, (2, 3), dtype=torch.int32)
    d = torch.tensor([[3, -4, 7], [-2, 5, -9]], dtype=torch.int32)
    u = torch.randint(0, 256, (2, 3), dtype=torch.uint8)
    s = torch.tensor([[0, 1, 3], [7, 2, 5]], dtype=torch.uint8)
    x = torch.tensor([[1.5, float("inf"), float("nan")], [-float("inf"), -0.0, 3.0]])
    export_helper(zoo, "op_dtype_ops",
                  [mk("Mod", ["a", "d"], ["mod0"], name="mod"), mk("Mod", ["a", "d"], ["mod1"], fmod=1, name="fmod"),
                   mk("BitShift", ["u", "s"], ["shl"], direction="LEFT", name="shl"),
                   mk("BitShift", ["u", "s"], ["shr"], direction="RIGHT", name="shr"),
                   mk("BitwiseAnd", ["a", "d"], ["band"], name="band"), mk("BitwiseOr", ["a", "d"], ["bor"], name="bor"),
                   mk("BitwiseXor", ["a", "d"], ["bxor"], name="bxor"), mk("BitwiseNot", ["a"], ["bnot"], name="bnot"),
                   mk("IsNaN", ["x"], ["nan"], name="isnan"),
                   mk("IsInf", ["x"], ["inf"], detect_negative=0, name="isinf"),
                   mk("BitCast", ["x"], ["bits"], to=i32, name="bitcast")],
                  [("a", a), ("d", d), ("u", u), ("s", s), ("x", x)],
                  [("mod0", i32, [2, 3]), ("mod1", i32, [2, 3]), ("shl", u8, [2, 3]), ("shr", u8, [2, 3]),
                   ("band", i32, [2, 3]), ("bor", i32, [2, 3]), ("bxor", i32, [2, 3]), ("bnot", i32, [2, 3]),
                   ("nan", b, [2, 3]), ("inf", b, [2, 3]), ("bits", i32, [2, 3])],
                  [torch.remainder(a, d), torch.fmod(a, d), torch.bitwise_left_shift(u, s),
                   torch.bitwise_right_shift(u, s), a & d, a | d, a ^ d, ~a, torch.isnan(x), torch.isposinf(x),
                   x.view(torch.int32)],
                  opset=26)


def main():
    out_dir = sys.argv[1]
    only = None
    if len(sys.argv) > 3 and sys.argv[2] == "--only":
        only = set(sys.argv[3].split(","))
    os.makedirs(out_dir, exist_ok=True)
    torch.set_num_threads(max(1, min(4, os.cpu_count() or 1)))
    start = time.time()
    zoo = Zoo(out_dir)
    real_models(zoo, only)
    op_models(zoo, only)
    attention_models(zoo, only)
    zoo.write_manifest()
    print(f"model_zoo: {len(zoo.lines)} cases in {time.time() - start:.1f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
