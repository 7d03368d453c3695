# RoiAlign max, DFT and STFT expectations from onnx.reference (onnx 1.23.2, tools/.venv-onnx).
import numpy as np, onnx
from onnx import helper as h, TensorProto as TP
from onnx.reference import ReferenceEvaluator
def lit(v):
    s = "%.9g" % v
    return (s if ("." in s or "e" in s) else s + ".0") + "f"
def fl(a): return ", ".join(lit(v) for v in np.asarray(a, np.float32).ravel())
def run(op, ins, attrs, opset, nin=None):
    names = ["i%d" % k if v is not None else "" for k, v in enumerate(ins)]
    node = h.make_node(op, names, ["y"], **attrs)
    vi = [h.make_tensor_value_info(n, TP.FLOAT if v.dtype == np.float32 else TP.INT64, None) for n, v in zip(names, ins) if n]
    g = h.make_graph([node], "g", vi, [h.make_tensor_value_info("y", TP.UNDEFINED, None)])
    m = h.make_model(g, opset_imports=[h.make_opsetid("", opset)])
    return ReferenceEvaluator(m).run(None, {n: v for n, v in zip(names, ins) if n})[0]
rng = np.random.default_rng(5)
x = np.round(rng.uniform(-2, 2, (1, 2, 4, 5)), 1).astype(np.float32)
rois = np.array([[0.4, 0.2, 3.3, 2.9], [1.0, 1.0, 2.0, 2.5]], np.float32)
bi = np.array([0, 0], np.int64)
print("rx", fl(x))
print("roi max hp", fl(run("RoiAlign", [x, rois, bi], dict(mode="max", output_height=2, output_width=3, sampling_ratio=2, spatial_scale=1.0), 16)))
# Opset 10 has no coordinate_transformation_mode and behaves as output_half_pixel (the
# opset-16 spec; ONNX Runtime too). onnx.reference applies its half_pixel default at
# every opset, so the opset-10 expectation is computed at 16 with the mode spelled out.
print("roi avg opset10", fl(run("RoiAlign", [x, rois, bi], dict(output_height=2, output_width=2, spatial_scale=2.0,
                                                                 coordinate_transformation_mode="output_half_pixel"), 16)))
# DFT, opset 20: complex [2, 3, 4, 2], axis 2, dft_length 6 (padded) and 3 (cut)
d = np.round(rng.uniform(-2, 2, (2, 3, 4, 2)), 1).astype(np.float32)
print("d", fl(d))
for L in (6, 3):
    y = run("DFT", [d, np.array(L, np.int64), np.array(2, np.int64)], {}, 20)
    print("dft len", L, y.shape, fl(y))
y = run("DFT", [d, None, np.array(-3, np.int64)], dict(inverse=1), 20); print("idft axis -3", y.shape, fl(y))
y = run("DFT", [d, np.array(7, np.int64), np.array(1, np.int64)], dict(inverse=1, onesided=1), 20); print("irfft 7 axis1", y.shape, fl(y))
r = np.round(rng.uniform(-2, 2, (1, 7, 1)), 1).astype(np.float32)
print("r", fl(r))
y = run("DFT", [r], dict(axis=-2, onesided=1), 17); print("rfft opset17 axis-2", y.shape, fl(y))
# STFT: complex signal [1, 9, 2], frame_step 3, window [4], onesided 0; real with frame_length only, onesided 1
s = np.round(rng.uniform(-2, 2, (1, 9, 2)), 1).astype(np.float32)
w = np.array([0.5, 1.0, 1.0, 0.25], np.float32)
print("s", fl(s))
y = run("STFT", [s, np.array(3, np.int64), w], dict(onesided=0), 17); print("stft complex", y.shape, fl(y))
sr = np.round(rng.uniform(-2, 2, (2, 10, 1)), 1).astype(np.float32)
print("sr", fl(sr))
y = run("STFT", [sr, np.array(2, np.int64), None, np.array(5, np.int64)], {}, 17); print("stft real", y.shape, fl(y))
