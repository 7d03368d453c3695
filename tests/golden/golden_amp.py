"""Golden records for automatic mixed precision: torch.autocast("cpu", dtype=torch.bfloat16).

amp.op.<name>.<fp32|bf16>: an op's output under autocast for float32 / bfloat16
inputs (its dtype is the record's); amp.mlp.* / amp.cnn.*: a small MLP and CNN
forward under autocast, backward outside it; amp.loop.*: an SGD loop under
autocast (no GradScaler: torch 1.13's is CUDA-only).
"""
import warnings

import torch
import torch.nn as nn
import torch.nn.functional as F


def autocast():
    return torch.autocast("cpu", dtype=torch.bfloat16)


def op_cases(emit):
    torch.manual_seed(30)
    x = torch.randn(4, 8)
    w = torch.randn(6, 8)
    b = torch.randn(6)
    img = torch.randn(2, 3, 6, 6)
    cw = torch.randn(4, 3, 3, 3)
    cb = torch.randn(4)
    tw = torch.randn(3, 4, 3, 3)  # conv_transpose2d weight [C_in, C_out, k, k]
    target = torch.tensor([0, 5, 2, 3])
    prob = torch.rand(4, 8)
    grid = torch.rand(2, 4, 4, 2) * 2 - 1
    for name, t in [("x", x), ("w", w), ("b", b), ("img", img), ("cw", cw), ("cb", cb), ("tw", tw),
                    ("target", target), ("prob", prob), ("grid", grid)]:
        emit.tensor(f"amp.in.{name}", t)
    ops = {
        "linear": lambda h: F.linear(h(x), w, b),
        "matmul": lambda h: torch.matmul(h(x), w.t()),
        "mm": lambda h: torch.mm(h(x), w.t()),
        "bmm": lambda h: torch.bmm(h(x).unsqueeze(0), w.t().unsqueeze(0)),
        "conv2d": lambda h: F.conv2d(h(img), cw, cb, padding=1),
        "conv_transpose2d": lambda h: F.conv_transpose2d(h(img), tw, stride=2),
        "softmax": lambda h: F.softmax(h(x), 1),
        "log_softmax": lambda h: F.log_softmax(h(x), 1),
        "layer_norm": lambda h: F.layer_norm(h(x), (8,)),
        "sum": lambda h: h(x).sum(),
        "prod": lambda h: h(x[0]).prod(),
        "cumsum": lambda h: h(x).cumsum(1),
        "exp": lambda h: h(x).exp(),
        "pow": lambda h: h(x).pow(2),
        "relu": lambda h: F.relu(h(x)),
        "add": lambda h: h(x) + x,
        "mse_loss": lambda h: F.mse_loss(h(x), h(prob)),
        "l1_loss": lambda h: F.l1_loss(h(x), h(prob)),
        "nll_loss": lambda h: F.nll_loss(h(x), target),
        "cross_entropy": lambda h: F.cross_entropy(h(x), target),
        "bce_with_logits": lambda h: F.binary_cross_entropy_with_logits(h(x), h(prob)),
        "cat": lambda h: torch.cat([h(x), x]),
        "cat_same": lambda h: torch.cat([h(x), h(w)]),
        "stack": lambda h: torch.stack([h(x), x]),
        "pad_reflect": lambda h: F.pad(h(img), (1, 1, 1, 1), mode="reflect"),
        "pad_constant": lambda h: F.pad(h(img), (1, 1, 1, 1)),
        "grid_sample": lambda h: F.grid_sample(h(img), grid, align_corners=False),
    }
    for name, fn in ops.items():
        for suffix, h in (("fp32", lambda t: t), ("bf16", lambda t: t.bfloat16())):
            with autocast():
                out = fn(h)
            emit.tensor(f"amp.op.{name}.{suffix}", out)


def record_model(emit, prefix, model, x, loss_fn):
    """Forward under autocast, backward outside it: output, loss and the fp32 parameters' grads."""
    for key, value in model.state_dict().items():
        emit.tensor(f"{prefix}.init.{key}", value)
    emit.tensor(f"{prefix}.x", x)
    with autocast():
        out = model(x)
        loss = loss_fn(out)
    emit.tensor(f"{prefix}.out", out)
    emit.tensor(f"{prefix}.loss", loss)
    loss.backward()
    for key, p in model.named_parameters():
        emit.tensor(f"{prefix}.grad.{key}", p.grad)


def model_cases(emit):
    torch.manual_seed(31)
    mlp = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
    x = torch.randn(5, 8)
    target = torch.tensor([0, 3, 1, 2, 3])
    emit.tensor("amp.mlp.target", target)
    record_model(emit, "amp.mlp", mlp, x, lambda out: F.cross_entropy(out, target))

    torch.manual_seed(32)
    cnn = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(36, 5))
    x = torch.randn(2, 3, 6, 6)
    y = torch.randn(2, 5)
    emit.tensor("amp.cnn.y", y)
    record_model(emit, "amp.cnn", cnn, x, lambda out: F.mse_loss(out, y))


def loop_cases(emit):
    torch.manual_seed(33)
    model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 4))
    for key, value in model.state_dict().items():
        emit.tensor(f"amp.loop.init.{key}", value)
    x = torch.randn(16, 8)
    target = torch.randint(0, 4, (16,))
    emit.tensor("amp.loop.x", x)
    emit.tensor("amp.loop.target", target)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    losses = []
    for _ in range(20):
        opt.zero_grad()
        with autocast():
            loss = F.cross_entropy(model(x), target)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    emit.tensor("amp.loop.losses", torch.tensor(losses))
    for key, value in model.state_dict().items():
        emit.tensor(f"amp.loop.final.{key}", value)


def cases(emit):
    # PyTorch's bf16 conv2d (forward and backward) depends on the CPU: oneDNN
    # where the CPU has AVX-512 BF16 (float32 sums, rounded once), else
    # slow_conv2d (rounded per step, as ember's reference is). oneDNN off:
    # the same records on every CPU (they differed by several bf16 steps on a Zen 4).
    with warnings.catch_warnings(), torch.backends.mkldnn.flags(enabled=False):
        warnings.simplefilter("ignore")
        op_cases(emit)
        model_cases(emit)
        loop_cases(emit)
