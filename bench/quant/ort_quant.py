"""ONNX Runtime side of bench/quant: one Linear (MatMul with a constant [K, N]
weight + bias) in fp32, and the same after onnxruntime.quantization.quantize_dynamic
(int8 weights, activations quantized at run time: DynamicQuantizeLinear +
MatIntegerToFloat / MatMulInteger), on the cases of quant_bench.cc.
Prints "M K N threads fp32_us int8_us" (median of runs).
Usage: bench/.venv/bin/python ort_quant.py [threads ...]   (the venv of bench/models/run.sh)
"""
import os
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
import onnxruntime as ort
from onnxruntime.quantization import QuantType, quantize_dynamic

from timing import median_us


def linear_model(k, n, path):
    rng = np.random.default_rng(0)
    w = (rng.standard_normal((k, n)) / np.sqrt(k)).astype(np.float32)
    b = (rng.standard_normal(n) * 0.1).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["xw"]), helper.make_node("Add", ["xw", "b"], ["y"])],
        "linear", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["m", k])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["m", n])],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)


def session(path, threads):
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])


def main(threads):
    tmp = tempfile.mkdtemp()
    rng = np.random.default_rng(1)
    for th in threads:
        for k, n in ((768, 3072), (3072, 768)):
            f32 = os.path.join(tmp, f"lin_{k}_{n}.onnx")
            i8 = os.path.join(tmp, f"lin_{k}_{n}_int8.onnx")
            linear_model(k, n, f32)
            quantize_dynamic(f32, i8, weight_type=QuantType.QInt8)
            s32, s8 = session(f32, th), session(i8, th)
            for m in (1, 16, 128):
                x = {"x": rng.standard_normal((m, k)).astype(np.float32)}
                a = median_us(lambda: s32.run(None, x))
                b = median_us(lambda: s8.run(None, x))
                print(f"{m} {k} {n} {th} {a:.1f} {b:.1f}", flush=True)


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]] or [1])
