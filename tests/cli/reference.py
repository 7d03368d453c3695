"""PyTorch references for the `ember` CLI test (Debian's /usr/bin/python3).

    reference.py make KIND MODEL.onnx DIR
        KIND mlp or cnn: the torch module of tests/golden/onnx_models.py with
        the ONNX file's initializers as its state; writes DIR/x.npy (a seeded
        input, batch 3), DIR/expected.npy (torch's output) and the bad inputs
        DIR/x_f64.npy (float64), DIR/x_shape.npy (a wrong fixed dim).
    reference.py compare ACTUAL.npy EXPECTED.npy
        exits 1 unless same shape and dtype and |a - e| <= 1e-5 + 1e-5 |e|.
"""
import os
import sys

import numpy as np
import onnx
from onnx import numpy_helper
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "golden"))
from onnx_models import Mlp, SmallCnn  # noqa: E402


def make(kind, onnx_path, out):
    model = {"mlp": Mlp, "cnn": SmallCnn}[kind]()
    inits = {t.name: torch.from_numpy(numpy_helper.to_array(t).copy())
             for t in onnx.load(onnx_path).graph.initializer}
    state = model.state_dict()
    for k in state:
        if not k.endswith("num_batches_tracked"):
            state[k] = inits[k]  # KeyError: the export changed
    model.load_state_dict(state)
    model.eval()
    torch.manual_seed(7)
    x = torch.randn(3, 10) if kind == "mlp" else torch.randn(3, 3, 8, 8)
    with torch.no_grad():
        y = model(x)
    np.save(os.path.join(out, "x.npy"), x.numpy())
    np.save(os.path.join(out, "expected.npy"), y.numpy())
    np.save(os.path.join(out, "x_f64.npy"), x.double().numpy())
    bad = list(x.shape)
    bad[1] += 1
    np.save(os.path.join(out, "x_shape.npy"), np.zeros(bad, dtype=np.float32))


def compare(actual, expected):
    a, e = np.load(actual), np.load(expected)
    if a.shape != e.shape or a.dtype != e.dtype:
        print(f"mismatch: {a.dtype}{list(a.shape)} vs expected {e.dtype}{list(e.shape)}")
        return 1
    diff = float(np.max(np.abs(a.astype(np.float64) - e))) if a.size else 0.0
    ok = np.allclose(a, e, rtol=1e-5, atol=1e-5)
    print(f"max abs diff {diff:.3g}: {'ok' if ok else 'TOO LARGE'}")
    return 0 if ok else 1


if __name__ == "__main__":
    if sys.argv[1] == "make":
        make(sys.argv[2], sys.argv[3], sys.argv[4])
    else:
        sys.exit(compare(sys.argv[2], sys.argv[3]))
