"""Golden records for reductions: sum, mean, prod, var, std, norm, max/min, argmax/argmin."""
import torch

FLOATS = {"f32": torch.float32, "f64": torch.float64, "f16": torch.float16, "bf16": torch.bfloat16}
INTS = {"i8": torch.int8, "u8": torch.uint8, "i16": torch.int16, "i32": torch.int32,
        "i64": torch.int64, "b": torch.bool}


def cases(emit):
    torch.manual_seed(1)
    x = torch.randn(3, 4, 5)
    emit.tensor("reduce.x", x)
    # sum / mean over dim lists (negative dims, keepdim), all dims.
    dim_cases = {"d0": (0,), "dm1": (-1,), "d02": (0, 2), "dm1m3": (-1, -3), "all": (0, 1, 2)}
    for name, dims in dim_cases.items():
        for kd in (False, True):
            suffix = f"{name}.{'k' if kd else 'nk'}"
            emit.tensor(f"reduce.sum.{suffix}", x.sum(dims, keepdim=kd))
            emit.tensor(f"reduce.mean.{suffix}", x.mean(dims, keepdim=kd))
            emit.tensor(f"reduce.var.{suffix}", x.var(dims, keepdim=kd))
            emit.tensor(f"reduce.std.{suffix}", x.std(dims, keepdim=kd))
            emit.tensor(f"reduce.norm.{suffix}", torch.linalg.vector_norm(x, dim=dims, keepdim=kd))
    emit.tensor("reduce.sum.whole", x.sum())
    emit.tensor("reduce.mean.whole", x.mean())
    emit.tensor("reduce.var.whole", x.var())
    emit.tensor("reduce.var.c0.d1", torch.var(x, 1, correction=0))
    emit.tensor("reduce.var.c3.d02", torch.var(x, (0, 2), correction=3, keepdim=True))
    emit.tensor("reduce.std.c0.whole", torch.std(x, (), correction=0))
    # Non-contiguous: transpose(0, 2) and a stepped slice.
    xt = x.transpose(0, 2)
    emit.tensor("reduce.t.sum.d1", xt.sum(1))
    emit.tensor("reduce.t.mean.d02", xt.mean((0, 2), keepdim=True))
    emit.tensor("reduce.t.var.dm1", xt.var(-1))
    emit.tensor("reduce.t.max.v", xt.max(1)[0])
    emit.tensor("reduce.t.max.i", xt.max(1)[1])
    emit.tensor("reduce.t.argmin.all", xt.argmin())
    emit.tensor("reduce.t.argmax.d2", xt.argmax(2))
    emit.tensor("reduce.t.norm3.d0", torch.norm(xt, p=3, dim=0))
    xs = x[:, ::2, 1:]
    emit.tensor("reduce.s.sum.d12", xs.sum((1, 2)))
    emit.tensor("reduce.s.prod.d1", xs.prod(1))
    emit.tensor("reduce.s.min.v", xs.min(-1)[0])
    emit.tensor("reduce.s.min.i", xs.min(-1)[1])
    # prod
    p = torch.rand(4, 6) + 0.5
    emit.tensor("reduce.p", p)
    emit.tensor("reduce.prod.whole", p.prod())
    emit.tensor("reduce.prod.d0", p.prod(0))
    emit.tensor("reduce.prod.dm1.k", p.prod(-1, keepdim=True))
    # norms
    n = torch.tensor([[1.0, -2.0, 0.0, 3.5], [0.25, 0.0, -4.0, 1.0], [0.0, 0.0, 0.0, 0.0]])
    emit.tensor("reduce.n", n)
    for pname, pv in {"p1": 1, "p2": 2, "pinf": float("inf"), "pninf": float("-inf"), "p0": 0,
                      "p3": 3, "p05": 0.5, "pm1": -1}.items():
        emit.tensor(f"reduce.norm.{pname}.all", torch.norm(n, p=pv))
        emit.tensor(f"reduce.norm.{pname}.d1", torch.norm(n, p=pv, dim=1))
        emit.tensor(f"reduce.norm.{pname}.d0k", torch.norm(n, p=pv, dim=0, keepdim=True))
    # max / min / argmax / argmin with ties (first occurrence).
    m = torch.tensor([[3.0, 1.0, 3.0, -2.0], [0.5, 0.5, -7.0, -7.0], [2.0, 9.0, 9.0, 1.0]])
    emit.tensor("reduce.m", m)
    for op in ("max", "min"):
        emit.tensor(f"reduce.{op}.all", getattr(m, op)())
        for d in (0, 1, -1):
            for kd in (False, True):
                v, i = getattr(m, op)(d, keepdim=kd)
                emit.tensor(f"reduce.{op}.d{d}.{int(kd)}.v", v)
                emit.tensor(f"reduce.{op}.d{d}.{int(kd)}.i", i)
    for op in ("argmax", "argmin"):
        emit.tensor(f"reduce.{op}.all", getattr(m, op)())
        emit.tensor(f"reduce.{op}.all.k", getattr(m, op)(keepdim=True))
        emit.tensor(f"reduce.{op}.d0", getattr(m, op)(0))
        emit.tensor(f"reduce.{op}.d1.k", getattr(m, op)(1, keepdim=True))
    # NaN behaviour.
    nan = float("nan")
    q = torch.tensor([[1.0, nan, 5.0, nan], [2.0, 4.0, -1.0, 0.0], [nan, 1.0, 1.0, 1.0]])
    emit.tensor("reduce.q", q)
    emit.tensor("reduce.nan.max.all", q.max())
    emit.tensor("reduce.nan.min.all", q.min())
    emit.tensor("reduce.nan.max.v", q.max(1)[0])
    emit.tensor("reduce.nan.max.i", q.max(1)[1])
    emit.tensor("reduce.nan.min.v", q.min(0)[0])
    emit.tensor("reduce.nan.min.i", q.min(0)[1])
    emit.tensor("reduce.nan.argmax.all", q.argmax())
    emit.tensor("reduce.nan.argmin.d1", q.argmin(1))
    emit.tensor("reduce.nan.sum.d1", q.sum(1))
    emit.tensor("reduce.nan.norminf.d1", torch.norm(q, p=float("inf"), dim=1))
    emit.tensor("reduce.nan.normninf.d1", torch.norm(q, p=float("-inf"), dim=1))
    emit.tensor("reduce.nan.norm0.d1", torch.norm(q, p=0, dim=1))
    # Floating dtypes.
    for dname, dt in FLOATS.items():
        y = x.to(dt)
        emit.tensor(f"reduce.{dname}.x", y)
        emit.tensor(f"reduce.{dname}.sum.d1", y.sum(1))
        emit.tensor(f"reduce.{dname}.mean.d02", y.mean((0, 2)))
        emit.tensor(f"reduce.{dname}.var.dm1", y.var(-1))
        emit.tensor(f"reduce.{dname}.std.all", y.std())
        emit.tensor(f"reduce.{dname}.norm.d1", torch.norm(y, dim=1))
        emit.tensor(f"reduce.{dname}.max.v", y.max(2)[0])
        emit.tensor(f"reduce.{dname}.max.i", y.max(2)[1])
        emit.tensor(f"reduce.{dname}.min.all", y.min())
        emit.tensor(f"reduce.{dname}.argmax.d0", y.argmax(0))
        pd = p.to(dt)
        emit.tensor(f"reduce.{dname}.p", pd)
        # PyTorch 1.13 has no CPU prod for 16-bit floats: compute in float32.
        emit.tensor(f"reduce.{dname}.prod.d1", pd.float().prod(1).to(dt) if dt in (torch.float16, torch.bfloat16)
                    else pd.prod(1))
    # Integer and bool dtypes.
    torch.manual_seed(2)
    base = torch.randint(-4, 5, (3, 5))
    for dname, dt in INTS.items():
        y = base.to(dt) if dt != torch.uint8 else (base + 4).to(dt)
        emit.tensor(f"reduce.{dname}.x", y)
        emit.tensor(f"reduce.{dname}.sum.all", y.sum())
        emit.tensor(f"reduce.{dname}.sum.d1", y.sum(1))
        emit.tensor(f"reduce.{dname}.prod.d0", y.prod(0))
        emit.tensor(f"reduce.{dname}.max.all", y.max())
        emit.tensor(f"reduce.{dname}.min.v", y.min(1)[0])
        emit.tensor(f"reduce.{dname}.min.i", y.min(1)[1])
        if dt != torch.bool:
            emit.tensor(f"reduce.{dname}.argmax.d0", y.argmax(0))
            emit.tensor(f"reduce.{dname}.argmin.all", y.argmin())
    emit.tensor("reduce.i64.sum.dtype_i32", base.sum(1, dtype=torch.int32))
    emit.tensor("reduce.i64.sum.dtype_f32", base.sum(dtype=torch.float32))
    emit.tensor("reduce.i64.mean.dtype_f64", base.mean(dtype=torch.float64))
    emit.tensor("reduce.f32.sum.dtype_f64", x.sum(0, dtype=torch.float64))
    emit.tensor("reduce.f32.sum.dtype_i64", x.sum(dtype=torch.int64))
    emit.tensor("reduce.i64.prod.dtype_f32.d1", base.prod(1, dtype=torch.float32))
    # Zero-size inputs.
    e = torch.empty(0, 3)
    emit.tensor("reduce.empty.sum.d0", e.sum(0))
    emit.tensor("reduce.empty.sum.d1", e.sum(1))
    emit.tensor("reduce.empty.sum.all", e.sum())
    emit.tensor("reduce.empty.mean.d0", e.mean(0))
    emit.tensor("reduce.empty.prod.d0", e.prod(0))
    emit.tensor("reduce.empty.var.d0", e.var(0))
    emit.tensor("reduce.empty.norm.d0", torch.norm(e, dim=0))
    emit.tensor("reduce.empty.max.d1.v", e.max(1)[0])
    emit.tensor("reduce.empty.max.d1.i", e.max(1)[1])
    emit.tensor("reduce.empty.argmax.d1", e.argmax(1))
    # 0-dim inputs.
    s = torch.tensor(2.5)
    emit.tensor("reduce.scalar.sum.d0", s.sum(0))
    emit.tensor("reduce.scalar.var", s.var())
    emit.tensor("reduce.scalar.max.d0.i", s.max(0)[1])
    # A larger input for the CPU fast path (contiguous inner dims, many rows).
    big = torch.randn(67, 1031)
    emit.tensor("reduce.big", big)
    emit.tensor("reduce.big.sum.d1", big.sum(1))
    emit.tensor("reduce.big.mean.d1", big.mean(1))
    emit.tensor("reduce.big.max.d1.v", big.max(1)[0])
    emit.tensor("reduce.big.max.d1.i", big.max(1)[1])
    emit.tensor("reduce.big.sum.all", big.sum())
