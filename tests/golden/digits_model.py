"""The digits proof model (tests/quant/models/digits_accuracy_test.cc).

Trains an MLP (64 -> 256 -> 128 -> 10, ReLU) in PyTorch on sklearn's digits
(8x8 images / 16, 1,797 samples; a fixed 80/20 split by a seeded permutation),
seed 0, Adam, 60 epochs of batches of 64, and writes into OUT_DIR:
  digits_mlp.onnx        fp32 export (opset 13, dynamic batch; input 'x', output 'logits')
  digits.test_x.npy      the test images [360, 64] float32
  digits.test_y.npy      their labels [360] int64
  digits.torch_acc.npy   torch's fp32 test accuracy [1] float64
  digits.calib.npz       np.savez(x=the first 128 training images): calibration inputs
  digits.calib_compressed.npz  the same with np.savez_compressed (refused by the converter)
Usage: /usr/bin/python3 digits_model.py OUT_DIR
"""
import os
import sys

import numpy as np
import torch
import torch.nn as nn
from sklearn.datasets import load_digits


def main(out):
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    d = load_digits()
    x = (d.data / 16.0).astype(np.float32)
    y = d.target.astype(np.int64)
    perm = np.random.RandomState(0).permutation(len(x))
    n_test = 360
    test, train = perm[:n_test], perm[n_test:]
    xtr, ytr = torch.from_numpy(x[train]), torch.from_numpy(y[train])
    model = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 128), nn.ReLU(), nn.Linear(128, 10))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(0)
    for _ in range(60):
        idx = torch.randperm(len(xtr), generator=g)
        for i in range(0, len(idx), 64):
            b = idx[i:i + 64]
            opt.zero_grad()
            nn.functional.cross_entropy(model(xtr[b]), ytr[b]).backward()
            opt.step()
    model.eval()
    with torch.no_grad():
        acc = (model(torch.from_numpy(x[test])).argmax(1).numpy() == y[test]).mean()
    torch.onnx.export(model, torch.zeros(1, 64), os.path.join(out, "digits_mlp.onnx"), opset_version=13,
                      input_names=["x"], output_names=["logits"], dynamic_axes={"x": {0: "batch"}, "logits": {0: "batch"}})
    np.save(os.path.join(out, "digits.test_x.npy"), x[test])
    np.save(os.path.join(out, "digits.test_y.npy"), y[test])
    np.save(os.path.join(out, "digits.torch_acc.npy"), np.array([acc], dtype=np.float64))
    np.savez(os.path.join(out, "digits.calib.npz"), x=x[train[:128]])
    np.savez_compressed(os.path.join(out, "digits.calib_compressed.npz"), x=x[train[:128]])
    print("torch fp32 test accuracy", acc)


if __name__ == "__main__":
    main(sys.argv[1])
