"""Every converted zoo model on cuda against PyTorch's outputs (tools/cuda_device_check.sh step 3).

    zoo_check.py --ember .device/bin/ember_run --zoo .device/zoo --out .device/out [--jobs 4]

For each manifest line (tests/golden/model_zoo.py) and precision fp32, fp16, bf16:
`ember_run run --device cuda --precision P`, then the outputs against the recorded
PyTorch outputs: fp32 within the manifest's rtol/atol (default 1e-4), fp16 and bf16
within 1e-2 (atol scaled by the output's largest magnitude when above 1); integer
outputs exactly. Exit status 1 if any run fails or mismatches.
"""
import argparse
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import numpy as np


def check(ember, zoo, out_dir, name, kv, precision):
    ins = []
    for k, input_name in enumerate(kv["inputs"].split(",") if kv.get("inputs") else []):
        ins += ["--input", f"{input_name}={zoo}/{name}.in{k}.npy"]
    out = os.path.join(out_dir, f"{name}.{precision}")
    try:
        r = subprocess.run([ember, "run", f"{zoo}/{name}.ember", *ins, "--device", "cuda", "--precision", precision,
                            "-d", out], capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        return False, f"{name} {precision}: FAILED: over 60 s"
    if r.returncode != 0:
        last = r.stderr.strip().splitlines()[-1] if r.stderr.strip() else f"exit {r.returncode}"
        return False, f"{name} {precision}: FAILED: {last}"
    if precision == "fp32":
        rtol, atol = float(kv.get("rtol", 1e-4)), float(kv.get("atol", 1e-4))
    else:
        rtol, atol = 1e-2, 1e-2
    worst, ok = 0.0, True
    for k, output in enumerate(kv["outputs"].split(",")):
        want = np.load(f"{zoo}/{name}.out{k}.npy")
        got = np.load(os.path.join(out, f"{output}.npy"))
        if want.dtype.kind == "f":
            scale = 1.0 if precision == "fp32" else max(1.0, float(np.abs(want).max(initial=0)))
            worst = max(worst, float(np.abs(got.astype(np.float64) - want).max(initial=0)))
            ok &= got.shape == want.shape and bool(np.allclose(got, want, rtol=rtol, atol=atol * scale))
        else:
            ok &= bool(np.array_equal(got, want))
    return ok, f"{name} {precision}: {'ok' if ok else 'MISMATCH'} (max abs diff {worst:.3g})"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ember", required=True)
    ap.add_argument("--zoo", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--jobs", type=int, default=4)
    a = ap.parse_args()
    jobs = []
    with open(os.path.join(a.zoo, "manifest.txt")) as f:
        for line in f:
            name, *fields = line.split()
            kv = dict(field.split("=", 1) for field in fields if "=" in field)
            jobs += [(name, kv, p) for p in ("fp32", "fp16", "bf16")]
    with ThreadPoolExecutor(a.jobs) as pool:
        results = list(pool.map(lambda j: check(a.ember, a.zoo, a.out, *j), jobs))
    bad = 0
    for ok, line in results:
        print(("  " if ok else "! ") + line, flush=True)
        bad += not ok
    print(f"zoo: {len(jobs) // 3} models x 3 precisions, {bad} failed")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
