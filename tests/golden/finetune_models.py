"""Fine-tuning conformance (tests/train/finetune_test.cc): small models exported
to ONNX, a data set as .npz, and PyTorch's own fine-tuning runs of the same
models on the same batches (taken in file order, x[i:i+B], last batch partial),
so ember's trainer can be checked step for step.

Writes into OUT_DIR:
  mlp.onnx          fc1 (8->16) + ReLU + fc2 (16->4), opset 13, dynamic batch
  mlp_sparse.onnx   the same with the 60 % smallest-magnitude weights of fc1 and fc2 set to zero
  cnn.onnx          Conv(1->4, 3x3, pad 1) + BatchNorm + ReLU + Flatten + fc (144->3), eval mode
  rnn.onnx          LSTM(4->5) + GRU(5->5) (batch first) + fc (5->3) on the last step, opset 14,
                    dynamic batch and length (one Recurrence op each)
  data.npz          x [10, 8] float32, y [10] int64 in [0, 4), t [10, 4] float32,
                    img [10, 1, 6, 6] float32, cls [10] int64 in [0, 3), seq [10, 3, 4] float32
  NAME.losses.npy   per-step losses (float64) of scenario NAME
  NAME.out.npy      the fine-tuned model's outputs on the whole data set
Scenarios:
  head_sgd          mlp, fc2.* only, SGD lr 0.1 momentum 0.9, cross-entropy, batch 4, 2 epochs
  all_adam          mlp, every weight, Adam lr 0.01, cross-entropy, batch 4, 2 epochs
  all_adamw_clip    mlp, every weight, AdamW lr 0.02 wd 0.05, clip_grad_norm 0.5,
                    StepLR(1, 0.5) per epoch, mse against t, batch 3, 3 epochs
  cnn_sgd           cnn with BatchNorm folded (torch.nn.utils.fusion.fuse_conv_bn_eval),
                    every weight, SGD lr 0.05, cross-entropy, batch 5, 2 epochs
  lora_int8         mlp with fc1 dynamically quantized (quantize_dynamic, per tensor) and a
                    rank-2 LoRA adapter (alpha 4) on it, only the adapter trained: Adam lr 0.01,
                    cross-entropy, batch 4, 2 epochs; lora_int8.A.npy: A's initial values
  rnn_sgd           rnn, every weight, SGD lr 0.1 momentum 0.9, cross-entropy against cls, batch 4,
                    2 epochs
  sparse_sgd        mlp_sparse stored as sparse COO: fc1's nonzero weights and bias trained (its
                    zeros stay zero), fc2 frozen but for its bias (the gradient flows through
                    it), SGD lr 0.1 momentum 0.9, cross-entropy, batch 4, 2 epochs
Usage: /usr/bin/python3 finetune_models.py OUT_DIR
"""
import copy
import os
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils.fusion import fuse_conv_bn_eval


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(8, 16)
        self.fc2 = nn.Linear(16, 4)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


class CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.fc = nn.Linear(144, 3)

    def forward(self, x):
        return self.fc(torch.flatten(torch.relu(self.bn(self.conv(x))), 1))


class LoraInt8(nn.Module):
    def __init__(self, mlp, a):
        super().__init__()
        self.q = torch.ao.quantization.quantize_dynamic(nn.Sequential(mlp.fc1), {nn.Linear}, dtype=torch.qint8)[0]
        self.a = nn.Parameter(a.clone())
        self.b = nn.Parameter(torch.zeros(16, 2))
        self.fc2 = mlp.fc2

    def forward(self, x):
        return self.fc2(torch.relu(self.q(x) + 2.0 * ((x @ self.a.T) @ self.b.T)))


class MaskedMLP(nn.Module):
    """mlp with its weights multiplied by fixed 0/1 masks: what a sparse weight trains as."""

    def __init__(self, mlp, m1, m2):
        super().__init__()
        self.fc1, self.fc2, self.m1, self.m2 = mlp.fc1, mlp.fc2, m1, m2

    def forward(self, x):
        h = torch.relu(F.linear(x, self.fc1.weight * self.m1, self.fc1.bias))
        return F.linear(h, self.fc2.weight * self.m2, self.fc2.bias)


class RNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(4, 5, batch_first=True)
        self.gru = nn.GRU(5, 5, batch_first=True)
        self.fc = nn.Linear(5, 3)

    def forward(self, x):
        return self.fc(self.gru(self.lstm(x)[0])[0][:, -1])


def prune(w, fraction):
    """The 0/1 mask keeping the (1 - fraction) largest-magnitude entries of w."""
    k = int(round(fraction * w.numel()))
    threshold = w.abs().flatten().sort().values[k - 1]
    return (w.abs() > threshold).float()


def export(model, example, path):
    model.eval()
    torch.onnx.export(model, example, path, opset_version=13, input_names=["x"], output_names=["y"],
                      dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}})


def run(model, params, x, target, loss_fn, opt, batch, epochs, clip=None, sched=None):
    losses = []
    n = x.shape[0]
    for _ in range(epochs):
        for i in range(0, n, batch):
            opt.zero_grad()
            loss = loss_fn(model(x[i:i + batch]), target[i:i + batch])
            loss.backward()
            if clip is not None:
                torch.nn.utils.clip_grad_norm_(params, clip)
            opt.step()
            losses.append(loss.item())
        if sched is not None:
            sched.step()
    with torch.no_grad():
        return np.array(losses, dtype=np.float64), model(x).numpy()


def main(out):
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    mlp = MLP()
    cnn = CNN()
    with torch.no_grad():  # non-trivial running statistics to fold
        cnn.bn.running_mean.copy_(torch.tensor([0.1, -0.2, 0.3, 0.0]))
        cnn.bn.running_var.copy_(torch.tensor([0.5, 1.5, 2.0, 0.8]))
        cnn.bn.weight.copy_(torch.tensor([1.2, 0.7, -0.5, 1.0]))
        cnn.bn.bias.copy_(torch.tensor([0.05, -0.1, 0.2, 0.0]))
    g = torch.Generator().manual_seed(1)
    x = torch.randn(10, 8, generator=g)
    y = torch.randint(0, 4, (10,), generator=g)
    t = torch.randn(10, 4, generator=g)
    img = torch.randn(10, 1, 6, 6, generator=g)
    cls = torch.randint(0, 3, (10,), generator=g)
    seq = torch.randn(10, 3, 4, generator=g)
    export(mlp, x[:1], os.path.join(out, "mlp.onnx"))
    export(cnn, img[:1], os.path.join(out, "cnn.onnx"))
    np.savez(os.path.join(out, "data.npz"), x=x.numpy(), y=y.numpy(), t=t.numpy(), img=img.numpy(),
             cls=cls.numpy(), seq=seq.numpy())

    def save(name, result):
        np.save(os.path.join(out, name + ".losses.npy"), result[0])
        np.save(os.path.join(out, name + ".out.npy"), result[1])

    m = copy.deepcopy(mlp)
    params = list(m.fc2.parameters())
    save("head_sgd", run(m, params, x, y, F.cross_entropy, torch.optim.SGD(params, lr=0.1, momentum=0.9), 4, 2))
    m = copy.deepcopy(mlp)
    params = list(m.parameters())
    save("all_adam", run(m, params, x, y, F.cross_entropy, torch.optim.Adam(params, lr=0.01), 4, 2))
    m = copy.deepcopy(mlp)
    params = list(m.parameters())
    opt = torch.optim.AdamW(params, lr=0.02, weight_decay=0.05)
    save("all_adamw_clip", run(m, params, x, t, F.mse_loss, opt, 3, 3, clip=0.5,
                               sched=torch.optim.lr_scheduler.StepLR(opt, 1, 0.5)))
    c = copy.deepcopy(cnn).eval()
    fused = nn.Sequential(fuse_conv_bn_eval(c.conv, c.bn), nn.ReLU(), nn.Flatten(), c.fc)
    params = list(fused.parameters())
    save("cnn_sgd", run(fused, params, img, cls, F.cross_entropy, torch.optim.SGD(params, lr=0.05), 5, 2))
    torch.manual_seed(5)
    a = nn.init.kaiming_uniform_(torch.empty(2, 8), a=5 ** 0.5)
    np.save(os.path.join(out, "lora_int8.A.npy"), a.numpy())
    lq = LoraInt8(copy.deepcopy(mlp), a)
    params = [lq.a, lq.b]
    save("lora_int8", run(lq, params, x, y, F.cross_entropy, torch.optim.Adam(params, lr=0.01), 4, 2))

    torch.manual_seed(7)
    rnn = RNN()
    rnn.eval()
    torch.onnx.export(rnn, seq[:1], os.path.join(out, "rnn.onnx"), opset_version=14, input_names=["x"],
                      output_names=["y"], dynamic_axes={"x": {0: "batch", 1: "steps"}, "y": {0: "batch"}})
    params = list(rnn.parameters())
    save("rnn_sgd", run(rnn, params, seq, cls, F.cross_entropy, torch.optim.SGD(params, lr=0.1, momentum=0.9), 4, 2))

    sp = copy.deepcopy(mlp)
    m1, m2 = prune(sp.fc1.weight, 0.6), prune(sp.fc2.weight, 0.6)
    with torch.no_grad():
        sp.fc1.weight.mul_(m1)
        sp.fc2.weight.mul_(m2)
    export(sp, x[:1], os.path.join(out, "mlp_sparse.onnx"))
    ms = MaskedMLP(sp, m1, m2)
    params = [sp.fc1.weight, sp.fc1.bias, sp.fc2.bias]
    sp.fc2.weight.requires_grad_(False)
    save("sparse_sgd", run(ms, params, x, y, F.cross_entropy, torch.optim.SGD(params, lr=0.1, momentum=0.9), 4, 2))


if __name__ == "__main__":
    main(sys.argv[1])
