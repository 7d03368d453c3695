"""Golden records for conv2d (prefix "conv.")."""
import torch


def cases(emit):
    g = torch.Generator().manual_seed(2)
    F = torch.nn.functional

    def rn(*shape, dtype=torch.float32):
        return torch.randn(*shape, generator=g, dtype=torch.float64).to(dtype)

    specs = [
        # name, x shape, w shape, bias, stride, padding, dilation, groups
        ("basic", (2, 3, 7, 6), (4, 3, 3, 3), True, 1, 0, 1, 1),
        ("nobias", (1, 3, 5, 5), (2, 3, 3, 3), False, 1, 0, 1, 1),
        ("stride", (2, 3, 9, 8), (4, 3, 3, 2), True, (2, 3), 0, 1, 1),
        ("pad", (1, 2, 5, 6), (3, 2, 3, 3), True, 1, (1, 2), 1, 1),
        ("dilation", (1, 2, 9, 9), (3, 2, 3, 3), True, 1, 1, (2, 3), 1),
        ("all", (2, 4, 11, 10), (6, 4, 3, 5), True, (2, 1), (2, 1), (1, 2), 1),
        ("groups", (2, 6, 7, 7), (4, 3, 3, 3), True, 1, 1, 1, 2),
        ("depthwise", (2, 5, 8, 8), (5, 1, 3, 3), True, 1, 1, 1, 5),
        ("depthwise_mult", (1, 3, 6, 6), (6, 1, 3, 3), False, 2, 1, 1, 3),
        ("pointwise", (2, 8, 5, 4), (6, 8, 1, 1), True, 1, 0, 1, 1),
        ("pointwise_stride", (2, 8, 5, 4), (6, 8, 1, 1), True, 2, 0, 1, 1),
        ("big", (2, 16, 20, 20), (32, 16, 3, 3), True, 1, 1, 1, 1),
        ("empty_batch", (0, 3, 5, 5), (4, 3, 3, 3), True, 1, 0, 1, 1),
    ]
    for name, xs, ws, with_bias, stride, padding, dilation, groups in specs:
        x, w = rn(*xs), rn(*ws)
        bias = rn(ws[0]) if with_bias else None
        emit.tensor(f"conv.{name}.x", x)
        emit.tensor(f"conv.{name}.w", w)
        if with_bias:
            emit.tensor(f"conv.{name}.bias", bias)
        emit.tensor(f"conv.{name}.out", F.conv2d(x, w, bias, stride, padding, dilation, groups))

    # Unbatched [C, H, W] input.
    x, w, bias = rn(3, 6, 5), rn(2, 3, 3, 3), rn(2)
    emit.tensor("conv.unbatched.x", x)
    emit.tensor("conv.unbatched.w", w)
    emit.tensor("conv.unbatched.bias", bias)
    emit.tensor("conv.unbatched.out", F.conv2d(x, w, bias, 1, 1))

    # Other dtypes.
    for dt, tag in [(torch.float64, "f64"), (torch.bfloat16, "bf16")]:
        x, w, bias = rn(2, 3, 6, 6, dtype=dt), rn(4, 3, 3, 3, dtype=dt), rn(4, dtype=dt)
        emit.tensor(f"conv.{tag}.x", x)
        emit.tensor(f"conv.{tag}.w", w)
        emit.tensor(f"conv.{tag}.bias", bias)
        emit.tensor(f"conv.{tag}.out", F.conv2d(x, w, bias, 1, 1))
    x = torch.randint(-5, 6, (1, 2, 5, 5), generator=g)
    w = torch.randint(-5, 6, (3, 2, 3, 3), generator=g)
    emit.tensor("conv.i64.x", x)
    emit.tensor("conv.i64.w", w)
    emit.tensor("conv.i64.out", F.conv2d(x, w, None, 1, 1))
