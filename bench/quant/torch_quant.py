"""PyTorch side of bench/quant: fp32 nn.Linear and torch.ao.quantization.quantize_dynamic
Linear (engines qnnpack and onednn) on the cases of quant_bench.cc.
Prints "M K N threads fp32_us qnnpack_us onednn_us" (median of runs).
Usage: /usr/bin/python3 torch_quant.py [threads ...]
"""
import os
import sys

import torch

from timing import median_us

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from torch_threads import set_threads  # noqa: E402


def main(threads):
    torch.manual_seed(0)
    for th in threads:
        set_threads(th)
        for k, n in ((768, 3072), (3072, 768)):
            lin = torch.nn.Linear(k, n).eval()
            q = {}
            for eng in ("qnnpack", "onednn"):
                torch.backends.quantized.engine = eng
                q[eng] = torch.ao.quantization.quantize_dynamic(torch.nn.Sequential(lin), {torch.nn.Linear},
                                                                dtype=torch.qint8)
            for m in (1, 16, 128):
                x = torch.randn(m, k)
                with torch.no_grad():
                    f32 = median_us(lambda: lin(x))
                    r = []
                    for eng in ("qnnpack", "onednn"):
                        torch.backends.quantized.engine = eng
                        r.append(median_us(lambda: q[eng](x)))
                print(f"{m} {k} {n} {th} {f32:.1f} {r[0]:.1f} {r[1]:.1f}", flush=True)


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]] or [1])
