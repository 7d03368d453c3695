"""Golden records for joining, splitting and padding (cat, stack, pad)."""
import torch
import torch.nn.functional as F


def cases(emit):
    g = torch.Generator().manual_seed(11)

    def randn(*shape, dtype=torch.float32):
        return torch.randn(*shape, generator=g).to(dtype)

    # cat: type promotion across inputs, the legacy empty tensor, every dim.
    a = randn(2, 3)
    b = randn(2, 4, dtype=torch.float64)
    c = torch.randint(-9, 9, (2, 1), generator=g)
    emit.tensor("shape.cat.a", a)
    emit.tensor("shape.cat.b", b)
    emit.tensor("shape.cat.c", c)
    emit.tensor("shape.cat.abc_dim1", torch.cat([a, b, c], 1))
    emit.tensor("shape.cat.ca_dim1", torch.cat([c, a], -1))
    emit.tensor("shape.cat.a_legacy_f64", torch.cat([a, torch.zeros(0, dtype=torch.float64)], 0))
    r = torch.randint(0, 2, (3, 2), generator=g).bool()
    u = torch.randint(0, 255, (1, 2), generator=g).to(torch.uint8)
    emit.tensor("shape.cat.bool", r)
    emit.tensor("shape.cat.u8", u)
    emit.tensor("shape.cat.bool_u8", torch.cat([r, u]))
    h = randn(2, 3, dtype=torch.float16)
    bf = randn(2, 3, dtype=torch.bfloat16)
    emit.tensor("shape.cat.h", h)
    emit.tensor("shape.cat.bf", bf)
    emit.tensor("shape.cat.h_bf", torch.cat([h, bf]))
    x4 = randn(2, 3, 2, 2)
    y4 = randn(2, 2, 2, 2)
    emit.tensor("shape.cat.x4", x4)
    emit.tensor("shape.cat.y4", y4)
    emit.tensor("shape.cat.x4y4", torch.cat([x4, y4], 1))
    # A non-contiguous input (transposed) concatenated with a contiguous one.
    emit.tensor("shape.cat.at_a", torch.cat([a.t(), randn(0, 2), a.t()], 0))

    # stack
    s0 = randn(2, 3)
    s1 = randn(2, 3, dtype=torch.float64)
    emit.tensor("shape.stack.s0", s0)
    emit.tensor("shape.stack.s1", s1)
    for d in [0, 1, 2, -1, -3]:
        emit.tensor(f"shape.stack.dim{d}", torch.stack([s0, s1, s0], d))
    emit.tensor("shape.stack.scalars", torch.stack([torch.tensor(1.5), torch.tensor(2)]))

    # pad: records shape.pad.<i>.{x,pad,value,out} and text shape.pad.<i>.mode
    pads = [
        ((2, 3, 5), torch.float32, [2, 1], "constant", 0.0),
        ((2, 3, 5), torch.float32, [2, 1, 0, 3], "constant", -1.5),
        ((2, 3, 5), torch.float32, [1, 1, 1, 1, 1, 1], "constant", 2.0),
        ((2, 3, 5), torch.float32, [-1, 2, 1, -2], "constant", 0.5),
        ((2, 3, 5), torch.float32, [-1, -2], "constant", 0.0),
        ((2, 3, 5), torch.int64, [1, 2], "constant", 1.7),
        ((2, 3, 5), torch.float16, [0, 2, 1, 0], "constant", 3.0),
        ((2, 3, 5), torch.bfloat16, [2, 0], "constant", -2.0),
        ((3, 5), torch.bool, [1, 1], "constant", 1.0),
        ((2, 3, 5), torch.float32, [], "constant", 0.0),
        ((2, 3, 5), torch.float32, [2, 4], "reflect", 0.0),
        ((3, 5), torch.float32, [4, 1], "reflect", 0.0),
        ((2, 3, 5), torch.float32, [-1, 2], "reflect", 0.0),
        ((2, 3, 5), torch.float32, [-3, 3], "reflect", 0.0),
        ((2, 3, 5), torch.float64, [1, 2, 2, 1], "reflect", 0.0),
        ((2, 3, 4, 5), torch.float32, [3, 1, -1, 3], "reflect", 0.0),
        ((2, 3, 4, 5), torch.float32, [1, 2, 1, 0, 2, 1], "reflect", 0.0),
        ((1, 2, 3, 4, 5), torch.float32, [4, 1, 2, 2, 0, 1], "reflect", 0.0),
        ((0, 3, 5), torch.float32, [1, 1], "reflect", 0.0),
        ((2, 3, 5), torch.float32, [3, 6], "replicate", 0.0),
        ((3, 5), torch.float64, [1, 0], "replicate", 0.0),
        ((2, 3, 5), torch.float32, [-2, 3], "replicate", 0.0),
        ((2, 3, 5), torch.float32, [2, -4], "replicate", 0.0),
        ((2, 3, 5), torch.float32, [1, 2, 3, 0], "replicate", 0.0),
        ((2, 3, 4, 5), torch.float32, [2, 2, -1, 1], "replicate", 0.0),
        ((2, 3, 4, 5), torch.float32, [1, 0, 0, 2, 3, 1], "replicate", 0.0),
        ((1, 2, 3, 4, 5), torch.float32, [1, 1, 1, 1, 1, 1], "replicate", 0.0),
        ((1, 2, 3, 4), torch.float32, [-4, 0, -3, 1], "replicate", 0.0),
        ((2, 3, 5), torch.float32, [2, 5], "circular", 0.0),
        ((2, 3, 5), torch.float32, [-1, 3], "circular", 0.0),
        ((2, 3, 5), torch.float32, [3, -2], "circular", 0.0),
        ((2, 3, 5), torch.float32, [-2, -1], "circular", 0.0),
        ((2, 3, 5), torch.int32, [1, 2], "circular", 0.0),
        ((2, 3, 5), torch.float16, [2, 1], "circular", 0.0),
        ((2, 3, 4, 5), torch.float32, [1, 2, 4, 3], "circular", 0.0),
        ((2, 3, 4, 5), torch.bool, [1, 2, 0, 1], "circular", 0.0),
        ((1, 2, 3, 4, 5), torch.float64, [1, 2, 3, 4, 2, 3], "circular", 0.0),
        ((2, 0, 4, 5), torch.float32, [1, 1, 1, 1], "circular", 0.0),
    ]
    for i, (shape, dtype, pad, mode, value) in enumerate(pads):
        if dtype == torch.bool:
            x = torch.randint(0, 2, shape, generator=g).bool()
        elif dtype in (torch.int32, torch.int64):
            x = torch.randint(-50, 50, shape, generator=g).to(dtype)
        else:
            x = randn(*shape, dtype=dtype)
        emit.tensor(f"shape.pad.{i}.x", x)
        emit.tensor(f"shape.pad.{i}.pad", torch.tensor(pad, dtype=torch.int64))
        emit.text(f"shape.pad.{i}.mode", mode)
        emit.tensor(f"shape.pad.{i}.value", torch.tensor(value, dtype=torch.float64))
        emit.tensor(f"shape.pad.{i}.out", F.pad(x, pad, mode, value) if mode == "constant" else F.pad(x, pad, mode))
