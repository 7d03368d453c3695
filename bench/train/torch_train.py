"""PyTorch side of the training-step benchmark (see train_bench.cc). Prints
JSON {"<case>/threads:<n>": microseconds per step}."""
import json
import os
import sys
import timeit

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from torch_threads import set_threads  # noqa: E402


def mlp():
    return nn.Sequential(nn.Flatten(), nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))


def cnn():
    return nn.Sequential(nn.Conv2d(1, 16, 3, 1, 1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(16, 32, 3, 1, 1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                         nn.Linear(128, 10))


def main():
    out = {}
    for threads in (1, 2):
        set_threads(threads)
        for name, build in (("mlp_step_b64", mlp), ("cnn_step_b64", cnn)):
            torch.manual_seed(0)
            model = build()
            opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
            x = torch.rand(64, 1, 8, 8)
            y = torch.randint(0, 10, (64,))

            def step():
                opt.zero_grad()
                F.cross_entropy(model(x), y).backward()
                opt.step()

            step()
            timer = timeit.Timer(step)
            n, _ = timer.autorange()
            out[f"{name}/threads:{threads}"] = min(timer.repeat(repeat=5, number=n)) / n * 1e6
    json.dump(out, sys.stdout, indent=1)


if __name__ == "__main__":
    main()
