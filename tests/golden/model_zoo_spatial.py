"""The spatial ops' conformance models for model_zoo.py (converter/lower_spatial.cc),
exported by torch.onnx.export with torch's outputs as the references:
op_spatial_fpn (opset 11): an FPN-like block as PaddleOCR's DB detector has
it — Conv, ConvTranspose (stride 2), nearest x2 Resize (constant scales), a
bilinear Resize to a fixed size with dynamic H and W (sizes computed at run
time); op_upsample_opset9: nearest Upsample (opset 9); op_grid_sample
(opset 16): GridSample bilinear / border, nearest / zeros, bicubic /
zeros with align_corners."""
import torch
import torch.nn as nn
import torch.nn.functional as F


def spatial_models(zoo, only, export_torch, fn_module):
    def want(n):
        return only is None or n in only

    torch.manual_seed(404)
    if want("op_spatial_fpn"):
        def fpn(m, x):
            c = torch.relu(m.conv(x))
            up = m.deconv(c) + m.proj(F.interpolate(c, scale_factor=2.0, mode="nearest"))
            return up, F.interpolate(x, size=(11, 6), mode="bilinear", align_corners=False)

        m = fn_module(fpn, conv=nn.Conv2d(4, 8, 3, 2, 1), deconv=nn.ConvTranspose2d(8, 4, 4, 2, 1),
                      proj=nn.Conv2d(8, 4, 1))
        export_torch(zoo, "op_spatial_fpn", m, [torch.randn(1, 4, 8, 10)], opset=11,
                     dynamic={"input": {0: "batch", 2: "h", 3: "w"}})
    if want("op_upsample_opset9"):
        m = fn_module(lambda m, x: F.interpolate(x, scale_factor=2.0, mode="nearest"))
        export_torch(zoo, "op_upsample_opset9", m, [torch.randn(1, 3, 4, 5)], opset=9)
    if want("op_grid_sample"):
        def sample(m, x, grid):
            return (F.grid_sample(x, grid, mode="bilinear", padding_mode="border", align_corners=False),
                    F.grid_sample(x, grid, mode="nearest", padding_mode="zeros", align_corners=False),
                    F.grid_sample(x, grid, mode="bicubic", padding_mode="zeros", align_corners=True))

        grid = torch.rand(2, 5, 7, 2) * 2.4 - 1.2
        export_torch(zoo, "op_grid_sample", fn_module(sample), [torch.randn(2, 3, 6, 8), grid], opset=16)
