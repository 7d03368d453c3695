"""ember on CUDA vs PyTorch CUDA eager, on the GPU machine (tools/cuda_device_check.sh step 5).

    torch_bench.py --ember .device/bin/ember_run --zoo .device/zoo [--rounds 3]

For each architecture of the model zoo (tests/golden/model_zoo.py: mlp, mobilenet_v2,
transformer, bert) at batch 1 and 32: PyTorch eager on cuda (the same architecture,
model.eval(), torch.no_grad(), torch.cuda.synchronize() around the timed loop) and
`ember_run bench --device cuda` on the converted file, in alternating rounds; prints the
median latency of each and the ratio ember / PyTorch (targets: <= 0.5 at batch 1,
<= 1.0 at batch 32). Weights do not matter for latency: PyTorch's are fresh.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def architectures():
    from model_zoo import BertEncoder, Mlp  # noqa: E402 (copied beside this file)

    archs = {"mlp": (Mlp, lambda b: [torch.randn(b, 64)])}
    try:
        import torchvision
        archs["mobilenet_v2"] = (lambda: torchvision.models.mobilenet_v2(weights=None),
                                 lambda b: [torch.randn(b, 3, 224, 224)])
    except ImportError:
        print("mobilenet_v2: skipped (no torchvision here)")

    def transformer():
        layer = nn.TransformerEncoderLayer(d_model=256, nhead=4, dim_feedforward=1024, batch_first=True)
        return nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)

    archs["transformer"] = (transformer, lambda b: [torch.randn(b, 128, 256)])
    archs["bert_opset17"] = (BertEncoder, lambda b: [torch.randint(0, 1000, (b, 32)),
                                                      torch.ones(b, 32, dtype=torch.int64)])
    return archs


def torch_ms(model, inputs, iterations=50):
    with torch.no_grad():
        for _ in range(10):
            model(*inputs)
        torch.cuda.synchronize()
        times = []
        for _ in range(iterations):
            t0 = time.perf_counter()
            model(*inputs)
            torch.cuda.synchronize()
            times.append((time.perf_counter() - t0) * 1e3)
    return float(np.median(times))


def ember_ms(binary, model_file, names, inputs, tmp, iterations=50):
    args = [binary, "bench", model_file, "--device", "cuda", "--json", "--warmup", "10",
            "--iterations", str(iterations)]
    for name, x in zip(names, inputs):
        path = os.path.join(tmp, f"{name}.npy")
        np.save(path, x.numpy())
        args += ["--input", f"{name}={path}"]
    r = subprocess.run(args, capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        raise RuntimeError(r.stderr.strip().splitlines()[-1] if r.stderr.strip() else f"exit {r.returncode}")
    return float(json.loads(r.stdout)["latency_ms"]["median"])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ember", required=True)
    ap.add_argument("--zoo", required=True)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    manifest = {l.split()[0]: dict(f.split("=", 1) for f in l.split()[1:])
                for l in open(os.path.join(a.zoo, "manifest.txt"))}
    print(f"{'model':<14}{'batch':>6}{'torch ms':>10}{'ember ms':>10}{'ratio':>8}")
    worst = {1: 0.0, 32: 0.0}
    with tempfile.TemporaryDirectory() as tmp:
        for name, (build, make_inputs) in architectures().items():
            if name not in manifest:
                print(f"{name}: not in the zoo")
                continue
            torch.manual_seed(0)
            model = build().eval().cuda()
            names = manifest[name]["inputs"].split(",")
            model_file = os.path.join(a.zoo, f"{name}.ember")
            for batch in (1, 32):
                inputs = make_inputs(batch)
                t, e = [], []
                try:
                    for _ in range(a.rounds):  # alternating rounds
                        e.append(ember_ms(a.ember, model_file, names, inputs, tmp))
                        t.append(torch_ms(model, [x.cuda() for x in inputs]))
                except Exception as err:  # report and go on with the next case
                    print(f"{name:<14}{batch:>6}  FAILED: {err}")
                    continue
                tm, em = float(np.median(t)), float(np.median(e))
                worst[batch] = max(worst[batch], em / tm)
                print(f"{name:<14}{batch:>6}{tm:>10.3f}{em:>10.3f}{em / tm:>8.2f}")
    print(f"worst ratio: batch 1 {worst[1]:.2f} (target 0.5), batch 32 {worst[32]:.2f} (target 1.0)")


if __name__ == "__main__":
    main()
