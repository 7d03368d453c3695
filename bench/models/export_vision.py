"""Exports the two torchvision models bench/models/run.sh adds for issue 12
(random weights: nothing can be downloaded here): MobileNetV3-Large
(HardSwish, HardSigmoid, squeeze-and-excitation) and LR-ASPP on a
MobileNetV3-Large backbone, a segmentation head with bilinear Resize to the
input size (the dense-prediction kind of model). Opset 13, batch 1, 224x224.
BatchNorm statistics from random data (model_zoo.calibrate_bn), so
activations stay O(1).
    export_vision.py OUT_DIR
writes OUT_DIR/<name>.onnx, <name>.input.npy and torch's <name>.out.npy for
name in mobilenet_v3, lraspp.
"""
import os
import sys

import numpy as np
import torch
import torchvision

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "golden"))
from model_zoo import calibrate_bn  # noqa: E402


class Out(torch.nn.Module):
    """The tensor of a segmentation model's {"out": ...} dict."""

    def __init__(self, net):
        super().__init__()
        self.net = net

    def forward(self, x):
        y = self.net(x)
        return y["out"] if isinstance(y, dict) else y


def main():
    out = sys.argv[1]
    torch.manual_seed(21)
    models = {
        "mobilenet_v3": torchvision.models.mobilenet_v3_large(weights=None),
        "lraspp": torchvision.models.segmentation.lraspp_mobilenet_v3_large(weights=None, weights_backbone=None),
    }
    for name, net in models.items():
        net = Out(net)
        calibrate_bn(net, (2, 3, 224, 224))
        net.eval()
        x = torch.randn(1, 3, 224, 224)
        with torch.no_grad():
            ref = net(x)
        torch.onnx.export(net, (x,), os.path.join(out, f"{name}.onnx"), opset_version=13,
                          input_names=["input"], output_names=["output"])
        np.save(os.path.join(out, f"{name}.input.npy"), x.numpy())
        np.save(os.path.join(out, f"{name}.out.npy"), ref.numpy())


if __name__ == "__main__":
    main()
