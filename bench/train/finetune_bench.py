"""`ember finetune` against PyTorch's identical loop: time per step and peak RSS.

Models (exported by torch.onnx.export, converted by `ember convert`):
  mlp    64 -> 256 -> ReLU -> 128 -> ReLU -> 10
  wide   256 -> 1024 -> ReLU -> 1024 -> ReLU -> 10
Cases: head (the last Linear trained) and all (every weight), SGD momentum 0.9,
cross-entropy, batch 64 in file order over 2,048 random samples, 4 epochs
(--epochs).
Each round runs ember's CLI and a PyTorch process (same data, same steps) one
after the other; ROUNDS rounds alternate which goes first; the table gives the
median per-round ratio ember/PyTorch (< 1: ember faster / smaller).
With --eager (bench/train/train_bench), each round also times the same step
written with ember's eager API (train_bench's finetune_* cases: same layers,
batch and optimizer, one fixed batch) and the table adds `ember finetune` /
eager, issue 14's "at most 1.1x ember's own eager step".
  bazel build //:ember //bench/train:train_bench
  /usr/bin/python3 bench/train/finetune_bench.py [--threads N] [--rounds 3] [--eager bazel-bin/bench/train/train_bench]
Measure on a quiet machine (no build running).
"""
import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from torch_threads import set_threads  # noqa: E402

BATCH, N = 64, 2048
MODELS = {"mlp": (64, 256, 128), "wide": (256, 1024, 1024)}


def make(dims):
    i, h1, h2 = dims
    return nn.Sequential(nn.Linear(i, h1), nn.ReLU(), nn.Linear(h1, h2), nn.ReLU(), nn.Linear(h2, 10))


def torch_child(onnx_path, data_path, case, threads, epochs):
    """Runs PyTorch's loop in this process; prints JSON (seconds, steps, peak RSS)."""
    import onnx
    from onnx import numpy_helper
    set_threads(threads)
    w = {i.name: torch.from_numpy(numpy_helper.to_array(i).copy()) for i in onnx.load(onnx_path).graph.initializer}
    d = np.load(data_path)
    x, y = torch.from_numpy(d["x"]), torch.from_numpy(d["y"])
    model = make((x.shape[1], w["2.weight"].shape[1], w["2.weight"].shape[0]))
    model.load_state_dict({k: w[k] for k in model.state_dict()})
    params = list(model[4].parameters()) if case == "head" else list(model.parameters())
    if case == "head":
        for p in model.parameters():
            p.requires_grad_(False)
        for p in params:
            p.requires_grad_(True)
    opt = torch.optim.SGD(params, lr=0.01, momentum=0.9)
    start, steps = time.perf_counter(), 0
    for _ in range(epochs):
        for i in range(0, len(x), BATCH):
            opt.zero_grad()
            F.cross_entropy(model(x[i:i + BATCH]), y[i:i + BATCH]).backward()
            opt.step()
            steps += 1
    seconds = time.perf_counter() - start
    rss = peak_rss_bytes()
    print(json.dumps({"seconds": seconds, "steps": steps, "peak_rss_bytes": rss}))


def peak_rss_bytes():
    """VmHWM (reset by exec; ru_maxrss keeps the parent's peak across exec on Linux)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def run_json(cmd):
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def eager_ms(binary, name, case, threads):
    """train_bench's eager twin of one case: milliseconds per step."""
    out = subprocess.run([binary, f"--benchmark_filter=^finetune_{name}_{case}/threads:{threads}/",
                          "--benchmark_format=json"], check=True, capture_output=True, text=True).stdout
    b = json.loads(out)["benchmarks"][0]
    assert b["time_unit"] == "us", b["time_unit"]
    return b["real_time"] / 1000


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ember", default="bazel-bin/converter/cli/ember_cli")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--epochs", type=int, default=4, help="epochs of 32 steps per timed run")
    ap.add_argument("--eager", help="bench/train/train_bench binary: adds the eager-step column")
    ap.add_argument("--child", nargs=3)
    a = ap.parse_args()
    if a.child:
        torch_child(*a.child, a.threads, a.epochs)
        return
    tmp = tempfile.mkdtemp()
    rows = []
    for name, dims in MODELS.items():
        torch.manual_seed(0)
        model = make(dims).eval()
        onnx_path, ember_path = os.path.join(tmp, name + ".onnx"), os.path.join(tmp, name + ".ember")
        torch.onnx.export(model, torch.zeros(1, dims[0]), onnx_path, opset_version=13, input_names=["x"],
                          output_names=["y"], dynamic_axes={"x": {0: "b"}, "y": {0: "b"}})
        subprocess.run([a.ember, "convert", onnx_path, "-o", ember_path], check=True, capture_output=True)
        g = np.random.default_rng(0)
        data = os.path.join(tmp, name + ".npz")
        np.savez(data, x=g.standard_normal((N, dims[0])).astype(np.float32), y=g.integers(0, 10, N).astype(np.int64))
        for case in ["head", "all"]:
            ember_cmd = [a.ember, "finetune", ember_path, "--data", data, "--target", "y", "--lr", "0.01",
                         "--momentum", "0.9", "--batch-size", str(BATCH), "--epochs", str(a.epochs), "--no-shuffle",
                         "--threads", str(a.threads), "--json", "--train", "4.*" if case == "head" else "*"]
            torch_cmd = [sys.executable, __file__, "--threads", str(a.threads), "--epochs", str(a.epochs), "--child",
                         onnx_path, data, case]
            t_ratio, m_ratio, e_ms, t_ms, e_mb, t_mb, g_ms, g_ratio = [], [], [], [], [], [], [], []
            for r in range(a.rounds):
                order = [ember_cmd, torch_cmd] if r % 2 == 0 else [torch_cmd, ember_cmd]
                res = {id(c): run_json(c) for c in order}
                e, t = res[id(ember_cmd)], res[id(torch_cmd)]
                e_ms.append(1000 * e["seconds"] / e["steps"])
                t_ms.append(1000 * t["seconds"] / t["steps"])
                e_mb.append(e["peak_rss_bytes"] / 2**20)
                t_mb.append(t["peak_rss_bytes"] / 2**20)
                t_ratio.append(e_ms[-1] / t_ms[-1])
                m_ratio.append(e_mb[-1] / t_mb[-1])
                if a.eager:
                    g_ms.append(eager_ms(a.eager, name, case, a.threads))
                    g_ratio.append(e_ms[-1] / g_ms[-1])
            med = statistics.median
            row = (name, case, med(e_ms), med(t_ms), med(t_ratio), med(e_mb), med(t_mb), med(m_ratio))
            rows.append(row + ((med(g_ms), med(g_ratio)) if a.eager else ()))
    print(f"ember finetune vs PyTorch, {a.threads} thread(s), batch {BATCH}, {a.epochs} epochs, {a.rounds} alternating "
          "rounds (medians)")
    head = "| model | trained | ember ms/step | PyTorch ms/step | time ratio | ember peak RSS MiB | PyTorch MiB | RSS ratio |"
    fmt = "| %s | %s | %.3f | %.3f | %.2f | %.1f | %.1f | %.2f |"
    if a.eager:
        head += " eager ms/step | finetune / eager |"
        fmt += " %.3f | %.2f |"
    print(head)
    print("|---" * head.count(" |") + "|")
    for r in rows:
        print(fmt % r)


if __name__ == "__main__":
    main()
