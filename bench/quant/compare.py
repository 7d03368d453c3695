"""Runs bench/quant's ember binary and torch_quant.py in one session and prints a
markdown table: times in microseconds, and the ratios
  int8/fp32 speedup (ember fp32 time / ember int8 time; > 1: int8 faster),
  ember int8 vs torch or ONNX Runtime (their time / ember int8 time; > 1: ember faster).
ONNX Runtime's columns (ort_quant.py: onnxruntime.quantization.quantize_dynamic) come
from the venv bench/.venv-ort when it exists; create it once (needs PyPI) with
  /usr/bin/python3 -m venv bench/.venv-ort && bench/.venv-ort/bin/pip install onnxruntime onnx ml_dtypes
(a venv of its own: onnxruntime's quantization tool needs a newer onnx and numpy than
Debian's torch 1.13 works with).
Usage: /usr/bin/python3 bench/quant/compare.py bazel-bin/bench/quant/quant_bench [threads ...]
"""
import os
import subprocess
import sys


def rows(cmd):
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    head = [l for l in out.splitlines() if l.startswith("#")]
    data = {}
    for line in out.splitlines():
        if line.startswith("#") or not line.strip():
            continue
        v = line.split()
        data[tuple(int(x) for x in v[:4])] = [float(x) for x in v[4:]]
    return head, data


def main():
    binary, threads = sys.argv[1], sys.argv[2:] or ["1"]
    here = os.path.dirname(os.path.abspath(__file__))
    head, ember = rows([binary] + threads)
    _, torch = rows(["/usr/bin/python3", os.path.join(here, "torch_quant.py")] + threads)
    venv = os.path.join(here, "..", ".venv-ort", "bin", "python")
    ort = rows([venv, os.path.join(here, "ort_quant.py")] + threads)[1] if os.path.exists(venv) else {}
    for h in head:
        print(h)
    print("| M | K | N | thr | ember fp32 | ember int8 | int8 speedup | torch fp32 | torch qnnpack | torch onednn "
          "| ORT fp32 | ORT int8 | ember int8 vs qnnpack | vs onednn | vs ORT int8 |")
    print("|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    nan = float("nan")
    for key in sorted(ember, key=lambda k: (k[3], k[1], k[0])):
        f32, i8 = ember[key]
        t = torch.get(key, [nan] * 3)
        o = ort.get(key, [nan] * 2)
        m, k, n, th = key
        print(f"| {m} | {k} | {n} | {th} | {f32:.1f} | {i8:.1f} | {f32 / i8:.2f}x | {t[0]:.1f} | {t[1]:.1f} | "
              f"{t[2]:.1f} | {o[0]:.1f} | {o[1]:.1f} | {t[1] / i8:.2f}x | {t[2] / i8:.2f}x | {o[1] / i8:.2f}x |")


if __name__ == "__main__":
    main()
