#!/usr/bin/env python3
"""Per-model latency of the ember executor on Vulkan vs on the CPU (and, with
--torch, PyTorch on the GPU when torch.cuda is available, else on the CPU).

Each measurement is one `ember bench --json` process (batch 1, random inputs).
Vulkan runs use --allow-fallback, so models whose nodes lack Vulkan kernels
still run; the table shows how many nodes fell back (their time is CPU time
plus the transfers around them). Used by models.sh (lavapipe) and
gpu_check.sh (a real GPU).

    models.py --dir DIR --ember EMBER [--models a,b] [--torch] [--iterations N]
"""
import argparse
import json
import os
import subprocess
import sys
import time


def ember_bench(ember, model, device, precision, iterations, warmup, env):
    cmd = [ember, "bench", model, "--json", "--iterations", str(iterations), "--warmup", str(warmup),
           "--device", device]
    if device != "cpu":
        cmd += ["--allow-fallback", "--precision", precision]
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if r.returncode != 0:
        return None, (r.stderr.strip().splitlines() or ["exit %d" % r.returncode])[-1]
    return json.loads(r.stdout), None


def torch_model(name):
    """The same architectures model_zoo.py exports (random weights: latency only)."""
    import torch
    from torch import nn
    if name == "mlp":
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "golden"))
        import model_zoo  # noqa: E402
        return model_zoo.Mlp(), [torch.randn(1, 64)]
    if name in ("mobilenet_v2", "resnet18"):
        import torchvision
        return getattr(torchvision.models, name)(weights=None), [torch.randn(1, 3, 224, 224)]
    if name == "transformer":
        layer = nn.TransformerEncoderLayer(d_model=256, nhead=4, dim_feedforward=1024, batch_first=True)
        return nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False), [torch.randn(1, 128, 256)]
    return None, None


def torch_bench(name, iterations, warmup):
    import torch
    module, example = torch_model(name)
    if module is None:
        return None, "no torch model for %s" % name
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    module = module.eval().to(dev)
    xs = [x.to(dev) for x in example]
    times = []
    with torch.no_grad():
        for i in range(warmup + iterations):
            if dev == "cuda":
                torch.cuda.synchronize()
            t0 = time.perf_counter()
            module(*xs)
            if dev == "cuda":
                torch.cuda.synchronize()
            if i >= warmup:
                times.append((time.perf_counter() - t0) * 1e3)
    times.sort()
    name = torch.cuda.get_device_name(0) if dev == "cuda" else "cpu"
    return {"device": name, "median": times[len(times) // 2]}, None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", required=True, help="directory with NAME.ember")
    ap.add_argument("--ember", required=True)
    ap.add_argument("--models", default="mlp,mobilenet_v2,resnet18,transformer")
    ap.add_argument("--iterations", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--fp16", action="store_true", help="also Vulkan with --precision fp16")
    ap.add_argument("--torch", action="store_true", help="also PyTorch (cuda when available)")
    args = ap.parse_args()
    env = dict(os.environ)
    rows = []
    for name in args.models.split(","):
        model = os.path.join(args.dir, name + ".ember")
        row = {"model": name}
        cpu, err = ember_bench(args.ember, model, "cpu", "fp32", args.iterations, args.warmup, env)
        row["cpu"] = cpu["latency_ms"]["median"] if cpu else None
        row["cpu_err"] = err
        vk, err = ember_bench(args.ember, model, "vulkan", "fp32", args.iterations, args.warmup, env)
        row["vk"] = vk["latency_ms"]["median"] if vk else None
        row["fallback"] = "%d/%d" % (vk["fallback_nodes"], vk["nodes"]) if vk else "-"
        row["vk_err"] = err
        if args.fp16:
            vk16, err16 = ember_bench(args.ember, model, "vulkan", "fp16", args.iterations, args.warmup, env)
            row["vk16"] = vk16["latency_ms"]["median"] if vk16 else None
            row["fallback16"] = "%d/%d" % (vk16["fallback_nodes"], vk16["nodes"]) if vk16 else "-"
            row["vk16_err"] = err16
        if args.torch:
            try:
                t, terr = torch_bench(name, args.iterations, args.warmup)
            except Exception as e:  # noqa: BLE001 - report, keep going
                t, terr = None, "%s: %s" % (type(e).__name__, e)
            row["torch"] = t["median"] if t else None
            row["torch_dev"] = t["device"] if t else "-"
            row["torch_err"] = terr
        rows.append(row)

    def ms(v):
        return "-" if v is None else "%.3f" % v

    head = ["model", "ember cpu ms", "ember vulkan ms", "fallback nodes", "vulkan/cpu"]
    if args.fp16:
        head += ["vulkan fp16 ms", "fallback fp16"]
    if args.torch:
        head += ["torch ms", "torch device"]
    print("| " + " | ".join(head) + " |")
    print("|" + "|".join("---" for _ in head) + "|")
    for r in rows:
        ratio = "%.2f" % (r["vk"] / r["cpu"]) if r["vk"] and r["cpu"] else "-"
        cells = [r["model"], ms(r["cpu"]), ms(r["vk"]), r["fallback"], ratio]
        if args.fp16:
            cells += [ms(r["vk16"]), r["fallback16"]]
        if args.torch:
            cells += [ms(r["torch"]), r["torch_dev"]]
        print("| " + " | ".join(cells) + " |")
    for r in rows:
        for k in ("cpu_err", "vk_err", "vk16_err", "torch_err"):
            if r.get(k):
                print("%s %s: %s" % (r["model"], k[:-4], r[k]))


if __name__ == "__main__":
    main()
