"""Golden records for softmax, log_softmax, layer_norm and batch_norm (inference)."""
import torch
import torch.nn.functional as F

FLOATS = {"f32": torch.float32, "f64": torch.float64, "f16": torch.float16, "bf16": torch.bfloat16}


def lowp(dt, fn, *args):
    """PyTorch 1.13 lacks some CPU kernels for 16-bit floats: compute those in float32."""
    if dt in (torch.float16, torch.bfloat16):
        return fn(*[a.float() if isinstance(a, torch.Tensor) else a for a in args]).to(dt)
    return fn(*args)


def cases(emit):
    torch.manual_seed(3)
    x = torch.randn(3, 4, 5) * 3
    emit.tensor("norm.x", x)
    for d in (0, 1, 2, -1, -2):
        emit.tensor(f"norm.softmax.d{d}", torch.softmax(x, d))
        emit.tensor(f"norm.log_softmax.d{d}", torch.log_softmax(x, d))
    xt = x.transpose(0, 2)  # non-contiguous
    emit.tensor("norm.t.softmax.d0", torch.softmax(xt, 0))
    emit.tensor("norm.t.log_softmax.dm1", torch.log_softmax(xt, -1))
    emit.tensor("norm.softmax.f64dtype", torch.softmax(x, 1, dtype=torch.float64))
    i = torch.tensor([[1, 2, 3], [-1, 0, 5]])
    emit.tensor("norm.int", i)
    emit.tensor("norm.softmax.int_f32", torch.softmax(i, 1, dtype=torch.float32))
    emit.tensor("norm.log_softmax.int_f64", torch.log_softmax(i, 0, dtype=torch.float64))
    big = torch.tensor([[1000.0, 1001.0, 1002.0], [-1000.0, -1000.0, -999.0]])
    emit.tensor("norm.big", big)
    emit.tensor("norm.softmax.big", torch.softmax(big, 1))
    emit.tensor("norm.log_softmax.big", torch.log_softmax(big, 1))
    special = torch.tensor([[float("-inf"), 0.0, 1.0], [float("nan"), 1.0, 2.0],
                            [float("-inf"), float("-inf"), float("-inf")], [float("inf"), 1.0, 0.0]])
    emit.tensor("norm.special", special)
    emit.tensor("norm.softmax.special", torch.softmax(special, 1))
    emit.tensor("norm.log_softmax.special", torch.log_softmax(special, 1))
    emit.tensor("norm.softmax.scalar", torch.softmax(torch.tensor(3.0), 0))
    emit.tensor("norm.log_softmax.scalar", torch.log_softmax(torch.tensor(3.0), -1))
    wide = torch.randn(33, 517)
    emit.tensor("norm.wide", wide)
    emit.tensor("norm.softmax.wide", torch.softmax(wide, 1))
    emit.tensor("norm.log_softmax.wide", torch.log_softmax(wide, 1))
    for dname, dt in FLOATS.items():
        y = x.to(dt)
        emit.tensor(f"norm.{dname}.x", y)
        emit.tensor(f"norm.{dname}.softmax.dm1", lowp(dt, torch.softmax, y, -1))
        emit.tensor(f"norm.{dname}.log_softmax.d1", lowp(dt, torch.log_softmax, y, 1))

    # layer_norm
    w = torch.randn(4, 5)
    b = torch.randn(4, 5)
    emit.tensor("norm.ln.w", w)
    emit.tensor("norm.ln.b", b)
    emit.tensor("norm.ln.last", F.layer_norm(x, [5]))
    emit.tensor("norm.ln.last.wb", F.layer_norm(x, [5], w[0], b[0]))
    emit.tensor("norm.ln.last.w", F.layer_norm(x, [5], w[0], None))
    emit.tensor("norm.ln.last.b", F.layer_norm(x, [5], None, b[0]))
    emit.tensor("norm.ln.two.wb", F.layer_norm(x, [4, 5], w, b, 1e-3))
    emit.tensor("norm.ln.all", F.layer_norm(x, [3, 4, 5]))
    emit.tensor("norm.ln.t.wb", F.layer_norm(xt, [3], w[0, :3], b[1, :3]))
    const = torch.full((2, 6), 7.0)
    emit.tensor("norm.ln.const", F.layer_norm(const, [6]))
    for dname, dt in FLOATS.items():
        y = x.to(dt)
        emit.tensor(f"norm.{dname}.ln.w", w[0].to(dt))
        emit.tensor(f"norm.{dname}.ln.b", b[0].to(dt))
        emit.tensor(f"norm.{dname}.ln", lowp(dt, F.layer_norm, y, [5], w[0].to(dt), b[0].to(dt)))
    emit.tensor("norm.ln.empty", F.layer_norm(torch.empty(0, 5), [5]))

    # batch_norm (inference): 2-D, 3-D, 4-D and channels_last 4-D.
    c = 3
    rm = torch.randn(c)
    rv = torch.rand(c) + 0.5
    bw = torch.randn(c)
    bb = torch.randn(c)
    for k, v in {"rm": rm, "rv": rv, "w": bw, "b": bb}.items():
        emit.tensor(f"norm.bn.{k}", v)
    x2 = torch.randn(4, c)
    x3 = torch.randn(2, c, 5)
    x4 = torch.randn(2, c, 4, 3)
    for name, t in {"x2": x2, "x3": x3, "x4": x4}.items():
        emit.tensor(f"norm.bn.{name}", t)
        emit.tensor(f"norm.bn.{name}.out", F.batch_norm(t, rm, rv, bw, bb, False, 0.1, 1e-5))
    emit.tensor("norm.bn.x4.noaffine", F.batch_norm(x4, rm, rv, None, None, False, 0.1, 1e-3))
    emit.tensor("norm.bn.x4.cl", F.batch_norm(x4.to(memory_format=torch.channels_last), rm, rv, bw, bb))
    for dname, dt in FLOATS.items():
        y = x3.to(dt)
        emit.tensor(f"norm.{dname}.bn.x3", y)
        emit.tensor(f"norm.{dname}.bn",
                    lowp(dt, F.batch_norm, y, rm.to(dt), rv.to(dt), bw.to(dt), bb.to(dt)))
    # bfloat16 input with float32 parameters (PyTorch's mixed-dtype path).
    emit.tensor("norm.bf16.bn.mixed", F.batch_norm(x3.bfloat16(), rm, rv, bw, bb))
