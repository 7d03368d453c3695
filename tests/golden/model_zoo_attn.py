"""The attention family's conformance model for model_zoo.py: one graph built
with onnx.helper (opset 28 and ai.onnx.preview 1) with Swish, SwiGLU,
RMSNormalization, RotaryEmbedding, Attention (3-D, GQA, causal),
LinearAttention (linear rule, GQA), CausalConvWithState and FlexAttention;
references written with torch ops in float32. torch 1.13 has no
scaled_dot_product_attention: its attention exports MatMul and Softmax only."""
import math

import onnx
from onnx import TensorProto, helper
import torch
import torch.nn.functional as F


def _attention(q, k, v, causal):  # q [B, Hq, S, D], k / v [B, Hkv, L, D]
    r = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(r, 1), v.repeat_interleave(r, 1)
    s = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
    if causal:
        s = s.masked_fill(torch.ones(s.shape[-2:], dtype=torch.bool).triu(1), float("-inf"))
    return s.softmax(-1) @ v


def _references(x, x2, kv, c, q4, scale, cos, sin, w):
    heads = lambda t, h: t.reshape(t.shape[0], t.shape[1], h, -1).transpose(1, 2)  # noqa: E731
    merge = lambda t: t.transpose(1, 2).reshape(t.shape[0], t.shape[2], -1)  # noqa: E731
    swish = x * torch.sigmoid(0.7 * x)
    swiglu = F.silu(x) * x2
    rms = x / torch.sqrt((x * x).mean(-1, keepdim=True) + 1e-5) * scale
    xh = x.reshape(2, 3, 2, 4)
    x1, x2h = xh[..., :2], xh[..., 2:]
    cs, sn = cos.unsqueeze(2), sin.unsqueeze(2)
    rope = torch.cat([cs * x1 - sn * x2h, sn * x1 + cs * x2h], -1).reshape(2, 3, 8)
    attn = merge(_attention(heads(x, 2), heads(kv, 1), heads(kv, 1), True))
    q, k, v = heads(x, 2), heads(kv, 1), heads(kv, 1)
    state = torch.zeros(2, 1, 4, 4)
    outs = []
    for t in range(3):
        state = state + k[:, :, t, :, None] * v[:, :, t, None, :]
        outs.append(q[:, :, t, None, :] @ state.repeat_interleave(2, 1))
    lin = merge(torch.cat(outs, 2) * 0.5)
    padded = F.pad(c, (1, 0))
    conv = F.conv1d(padded, w, groups=3)
    flex = _attention(q4, q4, q4, False)
    return [swish, swiglu, rms, rope, attn, lin, state, conv, padded[:, :, -1:], flex]


def attention_models(zoo, only):
    if only is not None and "op_attention_family" not in only:
        return
    torch.manual_seed(303)
    f = TensorProto.FLOAT
    x, x2, kv, c, q4 = torch.randn(2, 3, 8), torch.randn(2, 3, 8), torch.randn(2, 3, 4), torch.randn(2, 3, 5), torch.randn(1, 2, 3, 4)
    scale, cos, sin, w = torch.randn(8), torch.randn(2, 3, 2), torch.randn(2, 3, 2), torch.randn(3, 1, 2)
    mk = helper.make_node
    nodes = [mk("Swish", ["x"], ["swish"], alpha=0.7, name="swish"),
             mk("SwiGLU", ["x", "x2"], ["swiglu"], name="swiglu"),
             mk("RMSNormalization", ["x", "scale"], ["rms"], name="rms"),
             mk("RotaryEmbedding", ["x", "cos", "sin"], ["rope"], num_heads=2, name="rope"),
             mk("Attention", ["x", "kv", "kv"], ["attn"], q_num_heads=2, kv_num_heads=1, is_causal=1, name="attn"),
             mk("LinearAttention", ["x", "kv", "kv"], ["lin", "lin_state"], q_num_heads=2, kv_num_heads=1,
                update_rule="linear", scale=0.5, name="linear_attention"),
             mk("CausalConvWithState", ["c", "w"], ["conv", "conv_state"], name="causal_conv"),
             mk("FlexAttention", ["q4", "q4", "q4"], ["flex"], domain="ai.onnx.preview", name="flex")]
    inputs = [("x", x), ("x2", x2), ("kv", kv), ("c", c), ("q4", q4)]
    shapes = [[2, 3, 8]] * 6 + [[2, 1, 4, 4], [2, 3, 5], [2, 3, 1], [1, 2, 3, 4]]
    names = ["swish", "swiglu", "rms", "rope", "attn", "lin", "lin_state", "conv", "conv_state", "flex"]
    inits = [helper.make_tensor(n, f, list(t.shape), t.flatten().tolist())
             for n, t in (("scale", scale), ("cos", cos), ("sin", sin), ("w", w))]
    graph = helper.make_graph(nodes, "op_attention_family",
                              [helper.make_tensor_value_info(n, f, list(t.shape)) for n, t in inputs],
                              [helper.make_tensor_value_info(n, f, s) for n, s in zip(names, shapes)],
                              initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 28), helper.make_opsetid("ai.onnx.preview", 1)],
                              producer_name="model_zoo.py")
    onnx.save(model, zoo.path("op_attention_family.onnx"))
    with torch.no_grad():
        refs = _references(x, x2, kv, c, q4, scale, cos, sin, w)
    zoo.case("op_attention_family", "op_attention_family.onnx", [t for _, t in inputs], refs)
