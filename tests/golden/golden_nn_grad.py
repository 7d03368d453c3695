"""Golden gradients of the nn ops (prefix "nngrad."): torch computes them with
.backward() of sum(out * gout) for a random gout."""
import torch


def cases(emit):
    g = torch.Generator().manual_seed(11)
    F = torch.nn.functional

    def rn(*shape):
        return torch.randn(*shape, generator=g, dtype=torch.float64)

    def leaf(t):
        return t.clone().requires_grad_()

    def run(name, fn, inputs, extra=None):
        """inputs: dict name -> tensor (None: absent); records inputs, gout, out and grads."""
        leaves = {k: (leaf(v) if v is not None and v.is_floating_point() else v) for k, v in inputs.items()}
        out = fn(**leaves)
        gout = rn(*out.shape)
        (out * gout).sum().backward()
        for k, v in inputs.items():
            if v is None:
                continue
            emit.tensor(f"nngrad.{name}.{k}", v)
            if v.is_floating_point():
                emit.tensor(f"nngrad.{name}.grad_{k}", leaves[k].grad)
        emit.tensor(f"nngrad.{name}.gout", gout)
        emit.tensor(f"nngrad.{name}.out", out.detach())

    # conv2d: name, x, w, bias, stride, padding, dilation, groups
    convs = [
        ("basic", (2, 3, 7, 6), (4, 3, 3, 3), True, 1, 0, 1, 1),
        ("stride2_rem", (2, 3, 8, 7), (4, 3, 3, 2), True, 2, 1, 1, 1),
        ("dilation2", (1, 2, 9, 8), (3, 2, 3, 3), False, 1, 2, 2, 1),
        ("groups2", (2, 4, 6, 7), (6, 2, 3, 3), True, (2, 1), (1, 0), (1, 2), 2),
        ("depthwise", (2, 3, 6, 6), (3, 1, 3, 3), True, 1, 1, 1, 3),
        ("bigpad", (1, 2, 4, 5), (2, 2, 1, 1), True, 1, 1, 1, 1),
    ]
    for name, xs, ws, bias, stride, padding, dilation, groups in convs:
        def conv(x, w, b=None, stride=stride, padding=padding, dilation=dilation, groups=groups):
            return F.conv2d(x, w, b, stride, padding, dilation, groups)
        run(f"conv.{name}", conv, {"x": rn(*xs), "w": rn(*ws), "b": rn(ws[0]) if bias else None})

    # max_pool2d with ties (small integers) and NaN-free inputs.
    pools = [
        ("basic", (2, 3, 6, 7), 2, None, 0, 1, False),
        ("overlap_pad", (1, 2, 7, 6), 3, 2, 1, 1, False),
        ("dilation_ceil", (2, 2, 9, 8), (3, 2), (2, 1), (1, 1), (2, 1), True),
    ]
    for name, xs, k, s, p, d, ceil in pools:
        x = torch.randint(0, 4, xs, generator=g).double()
        run(f"maxpool.{name}", lambda x, k=k, s=s, p=p, d=d, ceil=ceil: F.max_pool2d(x, k, s, p, d, ceil), {"x": x})
    x = rn(2, 3, 7, 6)
    run("avgpool.pad_ceil", lambda x: F.avg_pool2d(x, 3, 2, 1, True, False), {"x": x})
    run("adaptive.5x4", lambda x: F.adaptive_avg_pool2d(x, (5, 4)), {"x": x})

    # layer_norm over the last two dims.
    run("layer_norm", lambda x, w, b: F.layer_norm(x, (4, 5), w, b, 1e-5),
        {"x": rn(3, 4, 5), "w": rn(4, 5), "b": rn(4, 5)})

    # batch_norm in training mode: output, updated running stats and gradients.
    for name, xs in [("3d", (4, 3, 5)), ("4d", (2, 3, 4, 3))]:
        rm, rv = rn(3), rn(3).abs() + 0.5
        emit.tensor(f"nngrad.bn_train.{name}.running_mean", rm)
        emit.tensor(f"nngrad.bn_train.{name}.running_var", rv)
        rm2, rv2 = rm.clone(), rv.clone()
        run(f"bn_train.{name}", lambda x, w, b: F.batch_norm(x, rm2, rv2, w, b, True, 0.3, 1e-5),
            {"x": rn(*xs), "w": rn(3), "b": rn(3)})
        emit.tensor(f"nngrad.bn_train.{name}.running_mean_after", rm2)
        emit.tensor(f"nngrad.bn_train.{name}.running_var_after", rv2)

    # embedding with repeated indices.
    idx = torch.tensor([[1, 4, 1, 0], [4, 4, 2, 1]])
    run("embedding", lambda w, idx: F.embedding(idx, w), {"w": rn(6, 3), "idx": idx})
