"""Golden records for mm, bmm, matmul and linear (prefix "linalg.")."""
import torch


def cases(emit):
    g = torch.Generator().manual_seed(1)

    def rn(*shape, dtype=torch.float32):
        return torch.randn(*shape, generator=g, dtype=torch.float64).to(dtype)

    def ri(*shape, dtype=torch.int64, lo=-9, hi=10):
        return torch.randint(lo, hi, shape, generator=g).to(dtype)

    # matmul over every rank combination (and broadcasting of batch dims).
    shapes = {
        "dot": ((5,), (5,)),
        "mv": ((3, 5), (5,)),
        "vm": ((5,), (5, 4)),
        "mm": ((3, 5), (5, 4)),
        "mm_odd": ((37, 29), (29, 41)),
        "b3_v": ((2, 3, 5), (5,)),
        "v_b3": ((5,), (2, 5, 4)),
        "b3_m": ((2, 3, 5), (5, 4)),
        "m_b3": ((3, 5), (2, 5, 4)),
        "b3_b3": ((2, 3, 5), (2, 5, 4)),
        "bcast4": ((2, 1, 3, 5), (4, 5, 6)),
        "bcast_b1": ((1, 3, 5), (4, 5, 2)),
        "b4_v": ((2, 2, 3, 5), (5,)),
        "v_b4": ((5,), (2, 2, 5, 3)),
        "b4_m": ((2, 2, 3, 5), (5, 2)),
        "empty_m": ((2, 0, 5), (5, 3)),
        "empty_k": ((3, 5, 0), (0, 0)),
        "empty_dot": ((0,), (0,)),
        "big": ((70, 130), (130, 90)),
    }
    for name, (sa, sb) in shapes.items():
        a, b = rn(*sa), rn(*sb)
        emit.tensor(f"linalg.matmul.{name}.a", a)
        emit.tensor(f"linalg.matmul.{name}.b", b)
        emit.tensor(f"linalg.matmul.{name}.out", torch.matmul(a, b))

    # Transposed / non-contiguous operands (built in C++ from these).
    a, b = rn(5, 3), rn(4, 5)
    emit.tensor("linalg.trans.a", a)
    emit.tensor("linalg.trans.b", b)
    emit.tensor("linalg.trans.out", a.t() @ b.t())
    a = rn(2, 5, 3)  # permuted batch: [2,3,5] view with transposed last dims (bmm path)
    b = rn(5, 4)
    emit.tensor("linalg.trans3.a", a)
    emit.tensor("linalg.trans3.b", b)
    emit.tensor("linalg.trans3.out", a.transpose(1, 2) @ b)
    a = rn(6, 8)  # a[::2, 1::2] (step slices)
    b = rn(4, 7)
    emit.tensor("linalg.slice.a", a)
    emit.tensor("linalg.slice.b", b)
    emit.tensor("linalg.slice.out", a[::2, 1::2] @ b[:, ::2])

    # bmm and mm directly; dtypes.
    a, b = rn(3, 4, 5), rn(3, 5, 2)
    emit.tensor("linalg.bmm.a", a)
    emit.tensor("linalg.bmm.b", b)
    emit.tensor("linalg.bmm.out", torch.bmm(a, b))
    for dt, tag in [(torch.float64, "f64"), (torch.bfloat16, "bf16")]:
        a, b = rn(2, 7, 9, dtype=dt), rn(9, 5, dtype=dt)
        emit.tensor(f"linalg.dtype.{tag}.a", a)
        emit.tensor(f"linalg.dtype.{tag}.b", b)
        emit.tensor(f"linalg.dtype.{tag}.out", torch.matmul(a, b))
        emit.tensor(f"linalg.dtype.{tag}.dot", torch.matmul(a[0, 0], b[:, 0]))
    for dt, tag in [(torch.int64, "i64"), (torch.int32, "i32"), (torch.uint8, "u8"), (torch.int8, "i8")]:
        lo, hi = (0, 40) if dt == torch.uint8 else (-40, 40)
        a, b = ri(2, 7, 9, dtype=dt, lo=lo, hi=hi), ri(2, 9, 5, dtype=dt, lo=lo, hi=hi)
        emit.tensor(f"linalg.dtype.{tag}.a", a)
        emit.tensor(f"linalg.dtype.{tag}.b", b)
        emit.tensor(f"linalg.dtype.{tag}.out", torch.matmul(a, b))  # wraps around for 8-bit types
    # int32 overflow wraps.
    a = torch.full((1, 2), 2**30, dtype=torch.int32)
    b = torch.full((2, 1), 3, dtype=torch.int32)
    emit.tensor("linalg.wrap.out", a @ b)

    # linear: 1-D/2-D/3-D (contiguous and not)/4-D input, bias or none.
    F = torch.nn.functional
    for name, xs, with_bias in [("x2_bias", (3, 5), True), ("x2", (3, 5), False), ("x1_bias", (5,), True),
                                ("x3_bias", (2, 3, 5), True), ("x4_bias", (2, 2, 3, 5), True), ("x3", (2, 3, 5), False)]:
        x, w = rn(*xs), rn(4, 5)
        bias = rn(4) if with_bias else None
        emit.tensor(f"linalg.linear.{name}.x", x)
        emit.tensor(f"linalg.linear.{name}.w", w)
        if with_bias:
            emit.tensor(f"linalg.linear.{name}.bias", bias)
        emit.tensor(f"linalg.linear.{name}.out", F.linear(x, w, bias))
    x = rn(3, 2, 5)  # non-contiguous 3-D input (transpose(0, 1))
    w, bias = rn(4, 5), rn(4)
    emit.tensor("linalg.linear.x3t.x", x)
    emit.tensor("linalg.linear.x3t.w", w)
    emit.tensor("linalg.linear.x3t.bias", bias)
    emit.tensor("linalg.linear.x3t.out", F.linear(x.transpose(0, 1), w, bias))

    # scaled_dot_product_attention (torch 2's F.scaled_dot_product_attention without dropout; this torch, 1.13,
    # lacks it): its math path, softmax(q @ k^T * scale + mask) @ v, in float64, rounded once.
    def sdpa(name, qs, ks, vs, mask=None, scale=None):
        q, k, v = rn(*qs, dtype=torch.float64), rn(*ks, dtype=torch.float64), rn(*vs, dtype=torch.float64)
        emit.tensor(f"linalg.sdpa.{name}.q", q.float())
        emit.tensor(f"linalg.sdpa.{name}.k", k.float())
        emit.tensor(f"linalg.sdpa.{name}.v", v.float())
        s = q.float().double() @ k.float().double().transpose(-2, -1) * (scale or 1.0 / qs[-1] ** 0.5)
        if mask is not None:
            emit.tensor(f"linalg.sdpa.{name}.mask", mask)
            s = s + (torch.zeros(mask.shape, dtype=torch.float64).masked_fill(~mask, float("-inf"))
                     if mask.dtype == torch.bool else mask.double())
        emit.tensor(f"linalg.sdpa.{name}.out", (torch.softmax(s, -1) @ v.float().double()).float())

    sdpa("plain", (2, 3, 5, 8), (2, 3, 7, 8), (2, 3, 7, 6))
    pad = torch.zeros(2, 1, 1, 7)
    pad[1, 0, 0, 4:] = -10000.0  # BERT's padding mask
    sdpa("bert_mask", (2, 3, 5, 8), (2, 3, 7, 8), (2, 3, 7, 6), pad, 0.5)
    sdpa("bool_mask", (2, 3, 5, 8), (2, 3, 7, 8), (2, 3, 7, 6), torch.rand(5, 7, generator=g) > 0.3)
    sdpa("broadcast", (2, 3, 5, 8), (1, 3, 7, 8), (2, 1, 7, 4))
    sdpa("rank3", (4, 9, 16), (4, 11, 16), (4, 11, 16), rn(4, 9, 11))
    # 600 keys: the CPU kernel's blocks of query rows (32768 / 600 = 54 rows).
    sdpa("long", (1, 2, 300, 16), (1, 2, 600, 16), (1, 2, 600, 16), rn(1, 1, 300, 600), 0.25)
    sdpa("one_query", (3, 1, 32), (3, 50, 32), (3, 50, 8))
    causal = torch.zeros(6, 6).masked_fill(torch.ones(6, 6, dtype=torch.bool).triu(1), float("-inf"))
    sdpa("causal", (2, 6, 4), (2, 6, 4), (2, 6, 5), causal)
