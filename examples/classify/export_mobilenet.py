"""Exports the main demo's model and its PyTorch reference.

    export_mobilenet.py OUT_DIR
writes OUT_DIR/mobilenet_v2.onnx (torchvision's MobileNetV2, random weights
from torch.manual_seed(0), BatchNorm statistics measured on random
batches, eval mode, ONNX opset 13, dynamic batch axis,
intermediate shapes inferred),
OUT_DIR/image.npy (a fixed, seeded input "image" [1, 3, 224, 224], normalized
like ImageNet data) and OUT_DIR/torch_logits.npy (PyTorch's output on it).
Run with Debian's /usr/bin/python3 (python3-torch, python3-torchvision).
"""
import os
import sys

import numpy as np
import onnx
import torch
import torchvision


def calibrate_batchnorm(model, batches=2):
    """BatchNorm running statistics measured on random batches (as after
    training), so that activations keep their scale through the random
    network: with the initial statistics (mean 0, variance 1) the logits
    shrink to about 1e-9."""
    for m in model.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            m.reset_running_stats()
            m.momentum = None  # a cumulative average over the batches
    model.train()
    with torch.no_grad():
        for _ in range(batches):
            model(torch.randn(8, 3, 224, 224))


def main(out_dir):
    os.makedirs(out_dir, exist_ok=True)
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    torch.manual_seed(0)
    model = torchvision.models.mobilenet_v2(weights=None)
    calibrate_batchnorm(model)
    model.eval()
    gen = torch.Generator().manual_seed(1)
    image = torch.rand(1, 3, 224, 224, generator=gen)
    mean = torch.tensor([0.485, 0.456, 0.406]).reshape(1, 3, 1, 1)
    std = torch.tensor([0.229, 0.224, 0.225]).reshape(1, 3, 1, 1)
    image = (image - mean) / std
    with torch.no_grad():
        logits = model(image)
    path = os.path.join(out_dir, "mobilenet_v2.onnx")
    torch.onnx.export(model, (image,), path, opset_version=13, input_names=["input"], output_names=["logits"],
                      dynamic_axes={"input": {0: "batch"}, "logits": {0: "batch"}})
    # Intermediate shapes (value_info) from ONNX's shape inference, as the converter's test models have.
    onnx.save(onnx.shape_inference.infer_shapes(onnx.load(path)), path)
    np.save(os.path.join(out_dir, "image.npy"), image.numpy())
    np.save(os.path.join(out_dir, "torch_logits.npy"), logits.numpy())
    print(f"exported torchvision mobilenet_v2 (random weights, seed 0) to {path}")


if __name__ == "__main__":
    main(sys.argv[1])
