"""Golden records for the integer and bitwise ops: remainder, fmod,
floor_divide, div with rounding_mode, the bitwise ops and shifts, isnan /
isinf / isfinite, their gradients; the unsigned types torch 1.13 lacks
(uint16/32/64) from numpy, recorded as int64."""
import numpy as np
import torch

INTS = {"i8": torch.int8, "u8": torch.uint8, "i16": torch.int16, "i32": torch.int32, "i64": torch.int64}
FLOATS = {"f32": torch.float32, "f64": torch.float64, "f16": torch.float16, "bf16": torch.bfloat16}


def in_float(fn, *args, **kw):
    """fn in the inputs' dtype, or in float32 rounded once where torch 1.13 has no 16-bit kernel."""
    try:
        return fn(*args, **kw)
    except RuntimeError:
        dt = args[0].dtype
        return fn(*[a.float() for a in args], **kw).to(dt)


def division(emit):
    # Mixed signs, exact multiples, and (floats) zeros, infinities and NaN.
    a = torch.tensor([-7.5, 7.5, -7.0, 7.0, 5.25, -5.25, 0.0, -0.0, 3.0, -3.0, float("inf"), 1.0, float("nan"), 4.0])
    b = torch.tensor([2.0, -2.0, 2.0, -3.5, 1.5, -1.5, 3.0, 3.0, float("inf"), float("-inf"), 2.0, 0.0, 1.0, -0.0])
    for dn, dt in FLOATS.items():
        x, y = a.to(dt), b.to(dt)
        emit.tensor(f"int.fa.{dn}", x)
        emit.tensor(f"int.fb.{dn}", y)
        emit.tensor(f"int.remainder.{dn}", in_float(torch.remainder, x, y))
        emit.tensor(f"int.fmod.{dn}", in_float(torch.fmod, x, y))
        emit.tensor(f"int.floor_divide.{dn}", in_float(torch.floor_divide, x, y))
        emit.tensor(f"int.div_trunc.{dn}", in_float(torch.div, x, y, rounding_mode="trunc"))
        emit.tensor(f"int.div_floor.{dn}", in_float(torch.div, x, y, rounding_mode="floor"))
    # Integers: no zero divisors (torch raises).
    ia = torch.tensor([-7, 7, -7, 7, 6, -6, 0, 100, -100, 1])
    ib = torch.tensor([2, -2, -2, 2, 3, 3, 5, 7, 7, -1])
    for dn, dt in INTS.items():
        x, y = (ia.abs(), ib.abs()) if dt == torch.uint8 else (ia, ib)
        x, y = x.to(dt), y.to(dt)
        emit.tensor(f"int.ia.{dn}", x)
        emit.tensor(f"int.ib.{dn}", y)
        emit.tensor(f"int.remainder.{dn}", torch.remainder(x, y))
        emit.tensor(f"int.fmod.{dn}", torch.fmod(x, y))
        emit.tensor(f"int.floor_divide.{dn}", torch.floor_divide(x, y))
        emit.tensor(f"int.div_trunc.{dn}", torch.div(x, y, rounding_mode="trunc"))
        emit.tensor(f"int.div_floor.{dn}", torch.div(x, y, rounding_mode="floor"))
    # Broadcasting and a Python scalar.
    g = torch.Generator().manual_seed(3)
    m = torch.randn(3, 1, 4, generator=g) * 5
    n = torch.randn(2, 1, generator=g) * 2 + 0.5
    emit.tensor("int.bc.a", m)
    emit.tensor("int.bc.b", n)
    emit.tensor("int.bc.remainder", torch.remainder(m, n))
    emit.tensor("int.bc.fmod", torch.fmod(m, n))
    emit.tensor("int.bc.remainder_scalar", torch.remainder(m, -1.5))
    emit.tensor("int.bc.fmod_scalar", torch.fmod(m, -1.5))
    # Gradients (torch: d/da = 1, d/db = -floor(a / b) or -trunc(a / b)).
    for op in ("remainder", "fmod"):
        x = m.clone().requires_grad_()
        y = n.clone().requires_grad_()
        out = getattr(torch, op)(x, y)
        out.backward(torch.ones_like(out))
        emit.tensor(f"int.grad.{op}.a", x.grad)
        emit.tensor(f"int.grad.{op}.b", y.grad)
        emit.text(f"int.grad_fn.{op}", type(out.grad_fn).__name__)


def bitwise(emit):
    a = torch.tensor([0, 1, -1, 5, -6, 127, -128, 42, 85, -86])
    b = torch.tensor([3, -1, 7, 12, 9, 1, -128, 127, -86, 85])
    for dn, dt in INTS.items():
        x, y = a.to(dt), b.to(dt)  # uint8: wrapped, as torch's conversion
        emit.tensor(f"bit.a.{dn}", x)
        emit.tensor(f"bit.b.{dn}", y)
        for op in ("bitwise_and", "bitwise_or", "bitwise_xor"):
            emit.tensor(f"bit.{op}.{dn}", getattr(torch, op)(x, y))
        emit.tensor(f"bit.bitwise_not.{dn}", torch.bitwise_not(x))
        # Shifts within the width (torch 1.13 does not define the others).
        width = torch.iinfo(dt).bits
        s = torch.tensor([0, 1, 2, 3, 4, 5, 6, 7, 1, width - 1]).to(dt)
        emit.tensor(f"bit.shift.{dn}", s)
        emit.tensor(f"bit.bitwise_left_shift.{dn}", torch.bitwise_left_shift(x, s))
        emit.tensor(f"bit.bitwise_right_shift.{dn}", torch.bitwise_right_shift(x, s))
    p = torch.tensor([True, True, False, False])
    q = torch.tensor([True, False, True, False])
    for op in ("bitwise_and", "bitwise_or", "bitwise_xor"):
        emit.tensor(f"bit.{op}.bool", getattr(torch, op)(p, q))
    emit.tensor("bit.bitwise_not.bool", torch.bitwise_not(p))


def classify(emit):
    x = torch.tensor([1.0, float("inf"), float("-inf"), float("nan"), -0.0, 3e38, -2.5])
    for dn, dt in FLOATS.items():
        emit.tensor(f"cls.x.{dn}", x.to(dt))  # 3e38 overflows to inf in float16
        for op in ("isnan", "isinf", "isposinf", "isneginf", "isfinite"):
            emit.tensor(f"cls.{op}.{dn}", getattr(torch, op)(x.to(dt)))
    i = torch.tensor([0, 1, -3])
    for op in ("isnan", "isinf", "isposinf", "isneginf", "isfinite"):
        emit.tensor(f"cls.{op}.i64", getattr(torch, op)(i))


def unsigned(emit):
    """uint16/32/64 arithmetic as numpy computes it (torch 1.13 has no such
    dtypes), recorded as int64 (uint64 values below 2^63)."""
    for dn, npt in (("u16", np.uint16), ("u32", np.uint32), ("u64", np.uint64)):
        a = np.array([0, 1, 7, 200, 65535, 40000, 12345, 9], dtype=npt)
        b = np.array([3, 1, 2, 200, 65535, 3, 100, 4], dtype=npt)
        emit.tensor(f"uint.a.{dn}", torch.from_numpy(a.astype(np.int64)))
        emit.tensor(f"uint.b.{dn}", torch.from_numpy(b.astype(np.int64)))
        with np.errstate(over="ignore"):
            results = {
                "add": a + b, "sub": a - b, "mul": a * b, "remainder": a % b, "floor_divide": a // b,
                "maximum": np.maximum(a, b), "minimum": np.minimum(a, b), "bitwise_and": a & b,
                "bitwise_or": a | b, "bitwise_xor": a ^ b, "left_shift": a << (b % 8), "right_shift": a >> (b % 8),
            }
        for op, r in results.items():
            # uint64 wrap-around (0 - 3) does not fit int64: the low 63 bits are compared.
            r = r.astype(np.uint64) & np.uint64((1 << 63) - 1)
            emit.tensor(f"uint.{op}.{dn}", torch.from_numpy(r.astype(np.int64)))
        emit.tensor(f"uint.lt.{dn}", torch.from_numpy(a < b))
        emit.tensor(f"uint.sum.{dn}", torch.tensor([int(a.astype(np.uint64).sum())]))
        emit.tensor(f"uint.to_f32.{dn}", torch.from_numpy(a.astype(np.float32)))


def cases(emit):
    division(emit)
    bitwise(emit)
    classify(emit)
    unsigned(emit)
