"""Golden records for elementwise ops: unary, binary, promotion, where, clamp."""
import torch

UNARY = ["neg", "abs", "exp", "log", "sqrt", "rsqrt", "sin", "cos", "tanh", "sigmoid", "relu",
         "silu", "erf"]
FLOATS = {"f32": torch.float32, "f64": torch.float64, "f16": torch.float16, "bf16": torch.bfloat16}


def in_float(fn, *args, **kw):
    """fn in the inputs' dtype; where torch 1.13 has no CPU kernel for a 16-bit
    float, computed in float32 and rounded once (what ember does)."""
    try:
        return fn(*args, **kw)
    except RuntimeError:
        dt = args[0].dtype
        return fn(*[a.float() for a in args], **kw).to(dt)


def cases(emit):
    g = torch.Generator().manual_seed(1)
    x = torch.randn(3, 5, generator=g) * 2
    x[0, 0] = 0.0
    pos = torch.rand(3, 5, generator=g) * 4 + 0.05
    for dn, dt in FLOATS.items():
        xd, pd = x.to(dt), pos.to(dt)
        emit.tensor(f"ew.x.{dn}", xd)
        emit.tensor(f"ew.pos.{dn}", pd)
        for op in UNARY:
            inp = pd if op in ("log", "sqrt", "rsqrt") else xd
            fn = torch.nn.functional.silu if op == "silu" else getattr(torch, op)
            emit.tensor(f"ew.{op}.{dn}", in_float(fn, inp))
        emit.tensor(f"ew.gelu.{dn}", in_float(torch.nn.functional.gelu, xd))
        emit.tensor(f"ew.gelu_tanh.{dn}", in_float(torch.nn.functional.gelu, xd, approximate="tanh"))
        # Non-contiguous: the transpose of x.
        emit.tensor(f"ew.exp_t.{dn}", in_float(torch.exp, xd.t()))
    unary_math(emit, g)
    # Integer inputs to float ops become float32.
    xi = torch.tensor([[0, 1, -2], [3, -4, 5]])
    emit.tensor("ew.int.x", xi)
    emit.tensor("ew.int.exp", torch.exp(xi))
    emit.tensor("ew.int.sigmoid", torch.sigmoid(xi))
    emit.tensor("ew.int.abs", torch.abs(xi))
    emit.tensor("ew.int.neg", torch.neg(xi))
    emit.tensor("ew.int.relu", torch.relu(xi))

    # Binary ops with broadcasting [3, 1, 4] x [2, 1].
    a = torch.randn(3, 1, 4, generator=g)
    b = torch.randn(2, 1, generator=g) + 0.5
    emit.tensor("bin.a", a)
    emit.tensor("bin.b", b)
    for op in ["add", "sub", "mul", "div", "maximum", "minimum", "eq", "ne", "lt", "le", "gt", "ge"]:
        emit.tensor(f"bin.{op}", getattr(torch, op)(a, b))
    emit.tensor("bin.pow", torch.pow(a.abs(), b))
    emit.tensor("bin.pow_scalar", torch.pow(a, 2))
    emit.tensor("bin.rpow_scalar", torch.pow(2, a))
    emit.tensor("bin.rsub_scalar", 1.5 - a)
    emit.tensor("bin.rdiv_scalar", 3 / b)
    for dn, dt in FLOATS.items():
        emit.tensor(f"bin.mul.{dn}", a.to(dt) * b.to(dt))
        emit.tensor(f"bin.div.{dn}", a.to(dt) / b.to(dt))
    # Integer arithmetic, true division, wrap-around, integer pow.
    ia = torch.tensor([[7, -7, 3], [0, 100, -1]])
    ib = torch.tensor([2, 3, -4])
    emit.tensor("int.a", ia)
    emit.tensor("int.b", ib)
    emit.tensor("int.add", ia + ib)
    emit.tensor("int.mul", ia * ib)
    emit.tensor("int.div", ia / ib)
    emit.tensor("int.pow", torch.pow(ia, torch.tensor([2, 3, 0])))
    emit.tensor("int.pow_neg", torch.pow(torch.tensor([1, -1, 2, -1]), torch.tensor([-1, -3, -2, -2])))
    u = torch.tensor([250, 3], dtype=torch.uint8)
    emit.tensor("int.u8_add", u + torch.tensor([10, 4], dtype=torch.uint8))
    emit.tensor("int.i32_mul_wrap", torch.tensor([2**30], dtype=torch.int32) * 4)
    # Mixed dtypes: result_type rules.
    mixed = [
        ("i64_f32", torch.tensor([1, 2]), torch.tensor([0.5, 0.25])),
        ("u8_i8", torch.tensor([200, 3], dtype=torch.uint8), torch.tensor([-1, 5], dtype=torch.int8)),
        ("f16_bf16", torch.tensor([1.5, 2], dtype=torch.float16), torch.tensor([0.25, 3], dtype=torch.bfloat16)),
        ("f32_0dim_f64", torch.tensor([1.5, 2.0]), torch.tensor(2.0, dtype=torch.float64)),
        ("i32_0dim_f64", torch.tensor([1, 2], dtype=torch.int32), torch.tensor(0.5, dtype=torch.float64)),
        ("bool_i16", torch.tensor([True, False]), torch.tensor([3, 4], dtype=torch.int16)),
        ("f16_i64", torch.tensor([0.5, 1.5], dtype=torch.float16), torch.tensor([1, 2])),
    ]
    for name, p, q in mixed:
        emit.tensor(f"mix.{name}.a", p)
        emit.tensor(f"mix.{name}.b", q)
        emit.tensor(f"mix.{name}.add", p + q)
    emit.tensor("mix.i32_plus_float", torch.tensor([1, 2], dtype=torch.int32) + 2.5)
    emit.tensor("mix.f16_times_float", torch.tensor([1, 2], dtype=torch.float16) * 2.5)
    emit.tensor("mix.u8_plus_int", torch.tensor([1, 2], dtype=torch.uint8) + 300)
    emit.tensor("mix.bool_plus_bool", torch.tensor([True, False]) + torch.tensor([True, False]))

    # where, clamp.
    c = torch.tensor([[True, False, True], [False, False, True]])
    wa = torch.randn(2, 3, generator=g)
    emit.tensor("where.c", c)
    emit.tensor("where.a", wa)
    emit.tensor("where.out", torch.where(c, wa, torch.tensor([1, 2, 3])))
    emit.tensor("where.scalar", torch.where(c, wa, 0.0))
    emit.tensor("clamp.x", x)
    emit.tensor("clamp.both", torch.clamp(x, -1.0, 0.5))
    emit.tensor("clamp.min", torch.clamp(x, min=0.25))
    emit.tensor("clamp.int_float_bound", torch.clamp(torch.tensor([1, 5, 9]), min=1.5, max=6))
    nan = torch.tensor([float("nan"), 1.0, -2.0])
    emit.tensor("nan.x", nan)
    emit.tensor("nan.relu", torch.relu(nan))
    emit.tensor("nan.clamp", torch.clamp(nan, -1, 0.5))
    emit.tensor("nan.maximum", torch.maximum(nan, torch.tensor([0.0, float("nan"), -3.0])))
    activations(emit)


F = torch.nn.functional
# The unary math ops added to ops.def: name -> (torch function, input domain).
MATH = {"reciprocal": (torch.reciprocal, "x"), "floor": (torch.floor, "q"), "ceil": (torch.ceil, "q"),
        "round": (torch.round, "q"), "sign": (torch.sign, "q"), "tan": (torch.tan, "x"),
        "asin": (torch.asin, "unit"), "acos": (torch.acos, "unit"), "atan": (torch.atan, "x"),
        "sinh": (torch.sinh, "x"), "cosh": (torch.cosh, "x"), "asinh": (torch.asinh, "x"),
        "acosh": (torch.acosh, "above1"), "atanh": (torch.atanh, "unit"), "softsign": (F.softsign, "x"),
        "mish": (F.mish, "x"), "softplus": (F.softplus, "wide"), "expm1": (torch.expm1, "x"),
        "log1p": (torch.log1p, "unit")}
SPECIALS = [float("nan"), float("inf"), -float("inf"), 0.0, -0.0, 2.5, -0.5, 0.5, 1.5, -2.5, 1.0, -1.0,
            3.5, -1.5, 19.5, 20.0, 20.5, 25.0, -20.0, 100.0, -100.0, 1e-4, -1e-4, 1e-30, 0.9999]


def unary_math(emit, g):
    """reciprocal ... log1p on an odd shape [3, 7] in every float dtype, float32
    special values (NaN, inf, +-0, ties, domain edges), integer and bool inputs."""
    doms = {"x": torch.randn(3, 7, generator=g) * 1.5,
            "q": torch.round(torch.randn(3, 7, generator=g) * 4) / 2,  # halves: round's ties
            "unit": torch.rand(3, 7, generator=g) * 1.9 - 0.95,
            "above1": torch.rand(3, 7, generator=g) * 4 + 1.05,
            "wide": torch.randn(3, 7, generator=g) * 12}  # around softplus's threshold 20
    for dn, dt in FLOATS.items():
        for k, v in doms.items():
            emit.tensor(f"um.{k}.{dn}", v.to(dt))
        for op, (fn, dom) in MATH.items():
            emit.tensor(f"um.{op}.{dn}", in_float(fn, doms[dom].to(dt)))
    sp = torch.tensor(SPECIALS)
    emit.tensor("um.special.x", sp)
    for op, (fn, _) in MATH.items():
        emit.tensor(f"um.special.{op}", fn(sp))
    # Integers: floor/ceil/round/sign keep the dtype (exact beyond 2^53), the others become float32.
    big = torch.tensor([0, 3, -7, 2**53 + 1, -(2**62) - 3, 9])
    emit.tensor("um.int.x", big)
    for op in ("floor", "ceil", "round", "sign"):
        emit.tensor(f"um.int.{op}", getattr(torch, op)(big))
    small = torch.tensor([[0, 1, -2], [3, -4, 5]])
    emit.tensor("um.int.small", small)
    for op in ("reciprocal", "tan", "atan", "sinh", "asinh", "softsign", "expm1"):
        emit.tensor(f"um.int.{op}", MATH[op][0](small))
    emit.tensor("um.int.sign_i32", torch.sign(small.to(torch.int32)))
    emit.tensor("um.int.sign_u8", torch.sign(torch.tensor([0, 3, 255], dtype=torch.uint8)))
    emit.tensor("um.int.sign_bool", torch.sign(torch.tensor([True, False])))
    emit.tensor("um.int.floor_u8", torch.floor(torch.tensor([0, 3, 255], dtype=torch.uint8)))
    emit.tensor("um.int.acosh_bool", torch.acosh(torch.tensor([True, False])))


def thresholded_relu(x, alpha=1.0):
    """ONNX ThresholdedRelu (no torch function): x > alpha ? x : 0."""
    return torch.where(x > alpha, x, torch.zeros_like(x))


# The activations: hardswish and the RT_UNARY_P ops, with torch's defaults and
# other params (the names as elementwise_test.cc's apply_act spells them).
ACT = {"hardswish": F.hardswish, "hardsigmoid": F.hardsigmoid,
       "leaky_relu": F.leaky_relu, "leaky_relu_0.2": lambda x: F.leaky_relu(x, 0.2),
       "elu": F.elu, "elu_0.5": lambda x: F.elu(x, 0.5), "selu": F.selu,
       "celu": F.celu, "celu_2": lambda x: F.celu(x, 2.0),
       "thresholded_relu": thresholded_relu, "thresholded_relu_-0.5": lambda x: thresholded_relu(x, -0.5)}


def activations(emit):
    """The activations on [3, 7] around hardswish's knees at -3 and 3 in every
    float dtype, and on float32 special values."""
    g = torch.Generator().manual_seed(7)
    x = torch.randn(3, 7, generator=g) * 3
    for dn, dt in FLOATS.items():
        emit.tensor(f"act.x.{dn}", x.to(dt))
        for op, fn in ACT.items():
            emit.tensor(f"act.{op}.{dn}", in_float(fn, x.to(dt)))
    sp = torch.tensor(SPECIALS + [3.0, -3.0, 6.0, -6.0])
    emit.tensor("act.special.x", sp)
    for op, fn in ACT.items():
        emit.tensor(f"act.special.{op}", fn(sp))
