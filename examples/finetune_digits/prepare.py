"""The fine-tuning demo's PyTorch side (examples/finetune_digits).

1. Trains an MLP (64 -> 128 -> 64 -> 10, ReLU) on sklearn's digits 0-4 only
   (8x8 images / 16; a fixed 80/20 split by a seeded permutation), exports it
   to ONNX (digits_0_4.onnx: input 'x', output 'logits', dynamic batch).
2. Writes the digits 5-9 as data sets: train_5_9.npz, test_5_9.npz (x, y).
3. Runs PyTorch's own fine-tuning of the last layer on 5-9, exactly as
   `ember finetune --no-shuffle` will (SGD lr 0.02 momentum 0.9, batch 16,
   20 epochs, cross-entropy; a rate at which float32 and float64 runs agree), twice:
     fp32: the exported model as it is;
     int8: its two hidden layers through torch.ao.quantization.quantize_dynamic
           (what `ember convert --quantize dynamic-int8` computes), the head fp32.
   and writes the test accuracies on 5-9 before and after to torch_results.txt:
     fp32 BEFORE AFTER
     int8 BEFORE AFTER
Usage: /usr/bin/python3 prepare.py OUT_DIR
"""
import copy
import os
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from sklearn.datasets import load_digits

EPOCHS, BATCH, LR, MOMENTUM = 20, 16, 0.02, 0.9


def accuracy(model, x, y):
    with torch.no_grad():
        return float((model(x).argmax(1) == y).float().mean()) * 100.0


def finetune_head(model, x, y):
    head = model[4]
    opt = torch.optim.SGD(head.parameters(), lr=LR, momentum=MOMENTUM)
    for _ in range(EPOCHS):
        for i in range(0, len(x), BATCH):
            opt.zero_grad()
            F.cross_entropy(model(x[i:i + BATCH]), y[i:i + BATCH]).backward()
            opt.step()


def main(out):
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    d = load_digits()
    x = (d.data / 16.0).astype(np.float32)
    y = d.target.astype(np.int64)
    perm = np.random.RandomState(0).permutation(len(x))
    n_test = len(x) // 5
    test, train = perm[:n_test], perm[n_test:]
    old = lambda idx: idx[y[idx] < 5]
    new = lambda idx: idx[y[idx] >= 5]

    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 64), nn.ReLU(), nn.Linear(64, 10))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    xo, yo = torch.from_numpy(x[old(train)]), torch.from_numpy(y[old(train)])
    g = torch.Generator().manual_seed(0)
    for _ in range(40):
        idx = torch.randperm(len(xo), generator=g)
        for i in range(0, len(idx), 64):
            b = idx[i:i + 64]
            opt.zero_grad()
            F.cross_entropy(model(xo[b]), yo[b]).backward()
            opt.step()
    model.eval()
    torch.onnx.export(model, torch.zeros(1, 64), os.path.join(out, "digits_0_4.onnx"), opset_version=13,
                      input_names=["x"], output_names=["logits"],
                      dynamic_axes={"x": {0: "batch"}, "logits": {0: "batch"}})
    np.savez(os.path.join(out, "train_5_9.npz"), x=x[new(train)], y=y[new(train)])
    np.savez(os.path.join(out, "test_5_9.npz"), x=x[new(test)], y=y[new(test)])

    xn, yn = torch.from_numpy(x[new(train)]), torch.from_numpy(y[new(train)])
    xt, yt = torch.from_numpy(x[new(test)]), torch.from_numpy(y[new(test)])
    lines = []
    fp32 = copy.deepcopy(model)
    before = accuracy(fp32, xt, yt)
    finetune_head(fp32, xn, yn)
    lines.append("fp32 %.4f %.4f" % (before, accuracy(fp32, xt, yt)))
    int8 = copy.deepcopy(model)
    int8[0] = torch.ao.quantization.quantize_dynamic(nn.Sequential(int8[0]), {nn.Linear}, dtype=torch.qint8)[0]
    int8[2] = torch.ao.quantization.quantize_dynamic(nn.Sequential(int8[2]), {nn.Linear}, dtype=torch.qint8)[0]
    before = accuracy(int8, xt, yt)
    finetune_head(int8, xn, yn)
    lines.append("int8 %.4f %.4f" % (before, accuracy(int8, xt, yt)))
    with open(os.path.join(out, "torch_results.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main(sys.argv[1])
