"""Models for the dynamic int8 proof tests (and cnn: cnn.onnx, cnn.x.npy, cnn.fp32.npy) (tests/quant/quant_models_test.cc).

Writes into OUT_DIR, for each model NAME in (mlp, encoder):
  NAME.onnx            fp32 export (torch.onnx.export, opset 13)
  NAME.x.npy           the input
  NAME.fp32.npy        torch's fp32 output
  NAME.int8_pt.npy     torch.ao.quantization.quantize_dynamic, per tensor (default qconfig)
  NAME.int8_pc.npy     the same with per_channel_dynamic_qconfig
Engine: qnnpack (full uint8 activation range, as ember's default).
The encoder writes its Linears out (no nn.MultiheadAttention, whose projections
quantize_dynamic leaves in fp32), so both sides quantize the same layers.
Usage: /usr/bin/python3 quant_models.py OUT_DIR
"""
import os
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class Mlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2, self.fc3 = nn.Linear(256, 512), nn.Linear(512, 512), nn.Linear(512, 10)

    def forward(self, x):
        return self.fc3(torch.relu(self.fc2(torch.relu(self.fc1(x)))))


class Encoder(nn.Module):
    def __init__(self, d=64, heads=4, ff=128, layers=2):
        super().__init__()
        self.heads, self.dh = heads, d // heads
        self.layers = nn.ModuleList()
        for _ in range(layers):
            self.layers.append(nn.ModuleDict({
                "q": nn.Linear(d, d), "k": nn.Linear(d, d), "v": nn.Linear(d, d), "o": nn.Linear(d, d),
                "ln1": nn.LayerNorm(d), "ff1": nn.Linear(d, ff), "ff2": nn.Linear(ff, d), "ln2": nn.LayerNorm(d)}))

    def split(self, x):
        return x.view(x.size(0), x.size(1), self.heads, self.dh).permute(0, 2, 1, 3)

    def forward(self, h):
        for l in self.layers:
            q, k, v = self.split(l["q"](h)), self.split(l["k"](h)), self.split(l["v"](h))
            a = torch.softmax(torch.matmul(q, k.transpose(-1, -2)) / (self.dh ** 0.5), dim=-1)
            ctx = torch.matmul(a, v).permute(0, 2, 1, 3).reshape(h.size(0), h.size(1), -1)
            h = l["ln1"](h + l["o"](ctx))
            h = l["ln2"](h + l["ff2"](F.gelu(l["ff1"](h))))
        return h


class Cnn(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1, self.c2 = nn.Conv2d(3, 16, 3, padding=1), nn.Conv2d(16, 32, 3, stride=2, padding=1)
        self.fc = nn.Linear(32 * 8 * 8, 10)

    def forward(self, x):
        return self.fc(torch.flatten(torch.relu(self.c2(torch.relu(self.c1(x)))), 1))


def main(out):
    os.makedirs(out, exist_ok=True)
    torch.backends.quantized.engine = "qnnpack"
    torch.manual_seed(0)
    models = {"mlp": (Mlp().eval(), torch.randn(8, 256)),
              "encoder": (Encoder().eval(), torch.randn(2, 16, 64))}
    # Trained layers have rows of very different norms (per-output-channel
    # scales matter); freshly initialized ones do not: scale each row.
    with torch.no_grad():
        for model, _ in models.values():
            for m in model.modules():
                if isinstance(m, nn.Linear):
                    m.weight.mul_(torch.exp(torch.randn(m.out_features, 1) * 0.75))
    # A CNN for --quantize-ops Conv (torch's quantize_dynamic has no Conv by
    # default: only its fp32 output is recorded).
    torch.manual_seed(1)
    cnn, xc = Cnn().eval(), torch.randn(2, 3, 16, 16)
    torch.onnx.export(cnn, (xc,), os.path.join(out, "cnn.onnx"), opset_version=13, input_names=["x"],
                      output_names=["y"])
    with torch.no_grad():
        np.save(os.path.join(out, "cnn.x.npy"), xc.numpy())
        np.save(os.path.join(out, "cnn.fp32.npy"), cnn(xc).numpy())
    for name, (model, x) in models.items():
        torch.onnx.export(model, (x,), os.path.join(out, name + ".onnx"), opset_version=13,
                          input_names=["x"], output_names=["y"])
        pt = torch.ao.quantization.quantize_dynamic(model, {nn.Linear}, dtype=torch.qint8)
        pc = torch.ao.quantization.quantize_dynamic(
            model, {nn.Linear: torch.ao.quantization.per_channel_dynamic_qconfig}, dtype=torch.qint8)
        with torch.no_grad():
            for tag, y in (("x", x), ("fp32", model(x)), ("int8_pt", pt(x)), ("int8_pc", pc(x))):
                np.save(os.path.join(out, f"{name}.{tag}.npy"), y.numpy().astype(np.float32))


if __name__ == "__main__":
    main(sys.argv[1])
