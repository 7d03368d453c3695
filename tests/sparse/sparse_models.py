"""Writes the sparse converter test's inputs into OUT_DIR (Debian's /usr/bin/python3, torch 1.13):
  mlp_sparse.onnx      a Linear-dominated MLP 256 -> 512 -> 512 -> 10 (dynamic batch, opset 13)
  mlp_input.npy        a [4, 256] float32 input
  mlp_pruned_out.npy   torch's output after l1_unstructured(amount=0.9) on every Linear weight
"""
import os
import sys

import numpy as np
import onnx
import torch
import torch.nn.utils.prune as prune
from torch import nn

out_dir = sys.argv[1]
os.makedirs(out_dir, exist_ok=True)
torch.manual_seed(5)
model = nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10)).eval()
x = torch.randn(4, 256)
path = os.path.join(out_dir, "mlp_sparse.onnx")
torch.onnx.export(model, (x,), path, opset_version=13, input_names=["input"], output_names=["output"],
                  dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}}, do_constant_folding=False)
onnx.save(onnx.shape_inference.infer_shapes(onnx.load(path)), path)
for m in model:
    if isinstance(m, nn.Linear):
        prune.l1_unstructured(m, "weight", amount=0.9)
with torch.no_grad():
    y = model(x)
np.save(os.path.join(out_dir, "mlp_input.npy"), x.numpy())
np.save(os.path.join(out_dir, "mlp_pruned_out.npy"), y.numpy())
