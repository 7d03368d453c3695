"""Thread count for the PyTorch side of a benchmark.

torch.set_num_threads does not reach the BLAS that Debian's PyTorch calls for
float32 products (OpenBLAS, through libblas.so.3): it keeps one thread per
core, so a "1 thread" PyTorch figure ran its matrix products on 2 cores
(64x1024 @ 1024x1024: 2.9 ms of CPU in 2.5 ms of wall time). set_threads(n)
caps both.
"""
import ctypes

import torch


def set_threads(n):
    torch.set_num_threads(n)
    try:
        blas = ctypes.CDLL("libblas.so.3")
        blas.openblas_set_num_threads(n)
    except (OSError, AttributeError):
        pass  # no BLAS library, or not OpenBLAS: torch.set_num_threads is the only control
