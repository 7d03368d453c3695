"""Golden records for ember::nn: init functions, default layer init, layer
forwards, BatchNorm2d running statistics, parameter names and state_dict keys,
and safetensors bytes as the Python library writes them."""
import json
import math
import struct

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn import init


def names(pairs):
    return ",".join(n for n, _ in pairs)


def init_cases(emit):
    def seeded(name, seed, shape, fn, dtype=torch.float32):
        torch.manual_seed(seed)
        t = torch.empty(shape, dtype=dtype)
        fn(t)
        emit.tensor(f"nnm.init.{name}", t)

    seeded("kaiming_uniform.default", 0, (5, 7), init.kaiming_uniform_)
    seeded("kaiming_uniform.fan_out_relu", 1, (4, 3, 3, 3),
           lambda t: init.kaiming_uniform_(t, a=0.2, mode="fan_out", nonlinearity="relu"))
    seeded("kaiming_uniform.f64", 2, (6, 5), lambda t: init.kaiming_uniform_(t, a=math.sqrt(5)), torch.float64)
    seeded("kaiming_normal.big", 3, (4, 3, 3, 3), init.kaiming_normal_)
    seeded("kaiming_normal.small", 4, (3, 4), lambda t: init.kaiming_normal_(t, mode="fan_out"))
    seeded("kaiming_normal.f64", 5, (8, 4), lambda t: init.kaiming_normal_(t, nonlinearity="tanh"), torch.float64)
    seeded("xavier_uniform.gain2", 6, (6, 5), lambda t: init.xavier_uniform_(t, gain=2.0))
    seeded("xavier_uniform.conv", 7, (4, 2, 3, 3), init.xavier_uniform_)
    seeded("xavier_normal.big", 8, (6, 5), init.xavier_normal_)
    seeded("xavier_normal.small", 9, (2, 3), lambda t: init.xavier_normal_(t, gain=0.5))
    seeded("normal.f32", 10, (37,), lambda t: init.normal_(t, 0.3, 0.77))
    seeded("normal.f32.small", 11, (5,), lambda t: init.normal_(t, -1.5, 2.0))
    seeded("normal.f64", 12, (40,), lambda t: init.normal_(t, 0.3, 0.77), torch.float64)
    seeded("normal.f64.small", 13, (7,), lambda t: init.normal_(t, 0.3, 0.77), torch.float64)
    seeded("uniform.f32", 14, (33,), lambda t: init.uniform_(t, -0.37, 0.91))
    seeded("uniform.f64", 15, (33,), lambda t: init.uniform_(t, -0.37, 0.91), torch.float64)
    seeded("trunc_normal.default", 16, (64,), init.trunc_normal_)
    seeded("trunc_normal.args", 17, (50,), lambda t: init.trunc_normal_(t, 0.5, 2.0, -1.0, 3.0))
    seeded("trunc_normal.f64", 18, (50,), lambda t: init.trunc_normal_(t, 0.5, 2.0, -1.0, 3.0), torch.float64)
    seeded("orthogonal.tall", 19, (6, 4), init.orthogonal_)
    seeded("orthogonal.wide", 20, (3, 7), lambda t: init.orthogonal_(t, gain=2.0))
    seeded("orthogonal.conv", 21, (4, 2, 2, 2), init.orthogonal_)
    seeded("orthogonal.f64", 22, (5, 5), init.orthogonal_, torch.float64)
    gains = [init.calculate_gain(n) for n in ("linear", "conv2d", "sigmoid", "tanh", "relu", "leaky_relu", "selu")]
    gains.append(init.calculate_gain("leaky_relu", 0.2))
    gains.append(init.calculate_gain("leaky_relu", math.sqrt(5)))
    emit.tensor("nnm.init.gains", torch.tensor(gains, dtype=torch.float64))
    fans = [init._calculate_fan_in_and_fan_out(torch.empty(s)) for s in ((3, 4), (5, 4, 3, 2), (2, 3, 7))]
    emit.tensor("nnm.init.fans", torch.tensor(fans))


def layer_cases(emit):
    torch.manual_seed(100)
    lin = nn.Linear(5, 3)
    emit.tensor("nnm.linear.weight", lin.weight)
    emit.tensor("nnm.linear.bias", lin.bias)
    x = torch.randn(2, 5)
    emit.tensor("nnm.linear.x", x)
    emit.tensor("nnm.linear.y", lin(x))
    torch.manual_seed(101)
    lin = nn.Linear(4, 6, bias=False)
    emit.tensor("nnm.linear_nobias.weight", lin.weight)

    torch.manual_seed(102)
    conv = nn.Conv2d(3, 4, (3, 2), stride=2, padding=1)
    emit.tensor("nnm.conv.weight", conv.weight)
    emit.tensor("nnm.conv.bias", conv.bias)
    x = torch.randn(2, 3, 7, 6)
    emit.tensor("nnm.conv.x", x)
    emit.tensor("nnm.conv.y", conv(x))
    torch.manual_seed(103)
    conv = nn.Conv2d(4, 6, 3, padding=2, dilation=2, groups=2)
    emit.tensor("nnm.conv_groups.weight", conv.weight)
    emit.tensor("nnm.conv_groups.bias", conv.bias)
    x = torch.randn(1, 4, 5, 5)
    emit.tensor("nnm.conv_groups.x", x)
    emit.tensor("nnm.conv_groups.y", conv(x))

    for tag, momentum in (("m01", 0.1), ("cma", None)):
        torch.manual_seed(104)
        bn = nn.BatchNorm2d(3, momentum=momentum)
        x1 = torch.randn(2, 3, 4, 5) * 2 + 1
        x2 = torch.randn(4, 3, 2, 3) - 0.5
        emit.tensor(f"nnm.bn.{tag}.x1", x1)
        emit.tensor(f"nnm.bn.{tag}.x2", x2)
        emit.tensor(f"nnm.bn.{tag}.y1", bn(x1))
        emit.tensor(f"nnm.bn.{tag}.y2", bn(x2))
        emit.tensor(f"nnm.bn.{tag}.running_mean", bn.running_mean)
        emit.tensor(f"nnm.bn.{tag}.running_var", bn.running_var)
        emit.tensor(f"nnm.bn.{tag}.num_batches_tracked", bn.num_batches_tracked)
        bn.eval()
        emit.tensor(f"nnm.bn.{tag}.eval_y", bn(x1))
    torch.manual_seed(105)
    bn = nn.BatchNorm2d(3, affine=False, track_running_stats=False)
    x = torch.randn(3, 3, 2, 2)
    emit.tensor("nnm.bn_plain.x", x)
    emit.tensor("nnm.bn_plain.y", bn.eval()(x))

    torch.manual_seed(106)
    ln = nn.LayerNorm([4, 5], eps=1e-3)
    with torch.no_grad():
        ln.weight.normal_()
        ln.bias.normal_()
    x = torch.randn(3, 4, 5)
    emit.tensor("nnm.ln.weight", ln.weight)
    emit.tensor("nnm.ln.bias", ln.bias)
    emit.tensor("nnm.ln.x", x)
    emit.tensor("nnm.ln.y", ln(x))

    torch.manual_seed(107)
    emb = nn.Embedding(10, 4)
    emit.tensor("nnm.emb.weight", emb.weight)
    idx = torch.tensor([[1, 2, 9], [0, 2, 5]])
    emit.tensor("nnm.emb.idx", idx)
    emit.tensor("nnm.emb.y", emb(idx))
    torch.manual_seed(108)
    emit.tensor("nnm.emb_pad.weight", nn.Embedding(6, 3, padding_idx=-2).weight)

    torch.manual_seed(109)
    x = torch.randn(4, 5)
    emit.tensor("nnm.dropout.x", x)
    torch.manual_seed(110)
    emit.tensor("nnm.dropout.y", nn.Dropout(0.3)(x))
    x64 = torch.randn(3, 7, dtype=torch.float64)
    emit.tensor("nnm.dropout.x64", x64)
    torch.manual_seed(111)
    emit.tensor("nnm.dropout.y64", nn.Dropout(0.6)(x64))

    x = torch.randn(2, 3, 5, 6)
    emit.tensor("nnm.act.x", x)
    emit.tensor("nnm.act.relu", nn.ReLU()(x))
    emit.tensor("nnm.act.gelu", nn.GELU()(x))
    emit.tensor("nnm.act.gelu_tanh", nn.GELU(approximate="tanh")(x))
    emit.tensor("nnm.act.flatten", nn.Flatten()(x))
    emit.tensor("nnm.act.flatten_1_2", nn.Flatten(1, 2)(x))
    emit.tensor("nnm.act.maxpool2", nn.MaxPool2d(2)(x))
    emit.tensor("nnm.act.maxpool3", nn.MaxPool2d(3, stride=2, padding=1)(x))

    # A nested network: names, state_dict keys and a training-mode forward.
    torch.manual_seed(112)
    net = nn.Sequential(
        nn.Conv2d(3, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(),
        nn.Sequential(nn.Conv2d(4, 4, 1), nn.BatchNorm2d(4), nn.GELU()),
        nn.MaxPool2d(2), nn.Flatten(), nn.Linear(4 * 3 * 3, 5, bias=False), nn.Dropout(0.0),
        nn.Sequential(nn.Linear(5, 2)))
    emit.text("nnm.net.named_parameters", names(net.named_parameters()))
    emit.text("nnm.net.named_buffers", names(net.named_buffers()))
    emit.text("nnm.net.state_dict", ",".join(net.state_dict().keys()))
    x = torch.randn(2, 3, 6, 6)
    emit.tensor("nnm.net.x", x)
    emit.tensor("nnm.net.y_train", net(x))
    emit.tensor("nnm.net.after.3.1.running_var", net[3][1].running_var)
    net.eval()
    emit.tensor("nnm.net.y_eval", net(x))


# safetensors as huggingface/safetensors writes it: tensors sorted by dtype
# (widest first), then name; compact JSON; header padded with spaces to 8.
ST_DTYPES = {torch.bool: ("BOOL", 0), torch.uint8: ("U8", 1), torch.int8: ("I8", 2), torch.int16: ("I16", 5),
             torch.float16: ("F16", 7), torch.bfloat16: ("BF16", 8), torch.int32: ("I32", 9),
             torch.float32: ("F32", 11), torch.float64: ("F64", 12), torch.int64: ("I64", 13)}


def safetensors_bytes(tensors, metadata=None):
    order = sorted(tensors.items(), key=lambda kv: (-ST_DTYPES[kv[1].dtype][1], kv[0]))
    header = {}
    if metadata:
        header["__metadata__"] = dict(sorted(metadata.items()))
    offset, blobs = 0, []
    for name, t in order:
        raw = t.contiguous().reshape(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b""
        header[name] = {"dtype": ST_DTYPES[t.dtype][0], "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(raw)]}
        offset += len(raw)
        blobs.append(raw)
    text = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    return struct.pack("<Q", len(text)) + text + b"".join(blobs)


def safetensors_cases(emit):
    torch.manual_seed(200)
    tensors = {
        "w.f32": torch.randn(3, 4),
        "a.f64": torch.randn(2, 3, dtype=torch.float64),
        "h.f16": torch.randn(5).half(),
        "b.bf16": torch.randn(2, 2).bfloat16(),
        "i64": torch.tensor([[-3, 2**40], [7, -(2**62)]]),
        "i32": torch.tensor([1, -2, 2**31 - 1], dtype=torch.int32),
        "i16": torch.tensor([-300, 12], dtype=torch.int16),
        "i8": torch.tensor([[-128, 127, 3]], dtype=torch.int8),
        "u8": torch.tensor([0, 255, 17, 4], dtype=torch.uint8),
        "mask": torch.tensor([True, False, True]),
        "scalar": torch.tensor(2.5),
        "empty": torch.zeros(0, 3),
        "zz\"q\\\n\u00e9": torch.tensor([1.0]),
    }
    for i, (name, t) in enumerate(tensors.items()):
        emit.text(f"nnm.st.name{i}", name)
        emit.tensor(f"nnm.st.t{i}", t)
    emit.text("nnm.st.count", str(len(tensors)))
    emit.text("nnm.st.bytes", safetensors_bytes(tensors, {"format": "pt", "note": "ember \"golden\""}).hex())
    emit.text("nnm.st.bytes_nometa", safetensors_bytes({"x": tensors["w.f32"], "n": tensors["i64"]}).hex())


def cases(emit):
    init_cases(emit)
    layer_cases(emit)
    safetensors_cases(emit)
