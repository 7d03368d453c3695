"""The timing loop torch_quant.py and ort_quant.py share: after one warm-up
call, at least 7 and up to 200 calls within about 0.4 s; the median in µs."""
import time


def median_us(f):
    f()
    t = []
    start = time.perf_counter()
    while len(t) < 7 or (len(t) < 200 and time.perf_counter() - start < 0.4):
        a = time.perf_counter()
        f()
        t.append((time.perf_counter() - a) * 1e6)
    t.sort()
    return t[len(t) // 2]
