"""PyTorch side of the op benchmark (same ops and shapes as ops_bench.cc).
Prints JSON {"<name>/threads:<n>": microseconds per call}."""
import json
import os
import sys
import timeit

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from torch_threads import set_threads  # noqa: E402


def cases():
    r = torch.randn
    a1, b1 = r(1 << 20), r(1 << 20)
    m, v = r(1000, 1000), r(1000)
    s = r(256, 1000)
    ln, w, b = r(256, 768), r(768), r(768)
    g1, g2 = r(256, 256), r(256, 256)
    x, cw = r(1, 64, 56, 56), r(64, 64, 3, 3)
    q, k = r(8, 128, 12, 32).permute(0, 2, 1, 3), r(8, 128, 12, 32).permute(0, 2, 3, 1)
    att = r(12, 128, 128)
    hidden = r(128, 1536) * 3
    masked = att.clone()
    masked[:, :, 100:] = -10000.0  # BERT's padding mask: exp underflows to 0
    p, pv = r(8, 12, 128, 128), r(8, 128, 12, 32).permute(0, 2, 1, 3)
    sq, sk, sv = (r(8, 128, 12, 32).permute(0, 2, 1, 3) for _ in range(3))
    smask = torch.zeros(8, 1, 1, 128)
    smask[..., 100:] = -10000.0
    cl = torch.channels_last
    a40, b40 = r(1, 40, 28, 28), r(1, 40, 28, 28)
    a40c, b40c = a40.contiguous(memory_format=cl), b40.contiguous(memory_format=cl)
    x120, s120 = r(1, 120, 28, 28), r(1, 120, 1, 1)
    x120c = x120.contiguous(memory_format=cl)
    x72, x960 = r(1, 72, 56, 56), r(1, 960, 7, 7)
    x72c, x960c = x72.contiguous(memory_format=cl), x960.contiguous(memory_format=cl)
    x3, x32, x96 = r(1, 3, 224, 224), r(1, 32, 112, 112), r(1, 96, 56, 56)
    x96c = x96.contiguous(memory_format=cl)
    x21 = r(1, 21, 28, 28)
    x16c, w16 = r(1, 16, 112, 112).contiguous(memory_format=cl), r(16, 1, 3, 3)
    x32c, w32 = x32.contiguous(memory_format=cl), r(32, 1, 3, 3)
    p16, p64 = r(16, 16, 1, 1), r(64, 16, 1, 1)
    d64, b64, c64 = r(64, 1, 3, 3), r(64), r(64)

    def pair():  # MobileNetV3's first expansion and depthwise convolution (ember: one conv2d_pair op)
        return F.relu(F.conv2d(F.relu(F.conv2d(x16c, p64, b64)), d64, c64, 2, 1, 1, 64))
    return {
        "add_1M": lambda: a1 + b1,
        "mul_scalar_1M": lambda: a1 * 1.5,
        "relu_1M": lambda: torch.relu(a1),
        "exp_1M": lambda: torch.exp(a1),
        "add_bcast_1000x1000": lambda: m + v,
        "transpose_copy_1000x1000": lambda: m.t().contiguous(),
        "sum_dim1_1000x1000": lambda: m.sum(1),
        "softmax_256x1000": lambda: torch.softmax(s, 1),
        "softmax_12x128x128": lambda: torch.softmax(att, 2),
        "softmax_masked_12x128x128": lambda: torch.softmax(masked, 2),
        "layer_norm_256x768": lambda: F.layer_norm(ln, (768,), w, b),
        "gelu_128x1536": lambda: F.gelu(hidden),
        "matmul_256": lambda: g1 @ g2,
        "matmul_attn_qk_8x12x128x32": lambda: q @ k,
        "matmul_attn_pv_8x12x128x128": lambda: p @ pv,
        # torch 1.13 has no F.scaled_dot_product_attention: its math path.
        "sdpa_8x12x128x32_mask": lambda: torch.softmax(sq @ sk.transpose(-2, -1) + smask, -1) @ sv,
        "conv2d_64x56x56_3x3": lambda: F.conv2d(x, cw, None, 1, 1),
        "dw3x3_16x112x112_cl": lambda: F.conv2d(x16c, w16, None, 1, 1, 1, 16),
        "dw3x3_32x112x112_cl": lambda: F.conv2d(x32c, w32, None, 1, 1, 1, 32),
        "pw1x1_16to16x112x112_cl": lambda: F.conv2d(x16c, p16),
        "pw1x1_16to64x112x112_cl": lambda: F.conv2d(x16c, p64),
        "pair_16to64x112x112_dw_s2_cl": pair,
        "unpaired_16to64x112x112_dw_s2_cl": pair,
        "max_pool2d_64x56x56": lambda: F.max_pool2d(x, 3, 2, 1),
        "add_40x28x28": lambda: a40 + b40,
        "add_40x28x28_cl": lambda: a40c + b40c,
        "mul_se_120x28x28": lambda: x120 * s120,
        "mul_se_120x28x28_cl": lambda: x120c * s120,
        "hardswish_72x56x56": lambda: F.hardswish(x72),
        "hardswish_72x56x56_cl": lambda: F.hardswish(x72c),
        "adaptive_avg_pool_960x7x7": lambda: F.adaptive_avg_pool2d(x960, 1),
        "adaptive_avg_pool_960x7x7_cl": lambda: F.adaptive_avg_pool2d(x960c, 1),
        "adaptive_avg_pool_72x56x56": lambda: F.adaptive_avg_pool2d(x72, 1),
        "adaptive_avg_pool_72x56x56_cl": lambda: F.adaptive_avg_pool2d(x72c, 1),
        "clone_3x224x224": lambda: x3.clone(),
        "to_channels_last_3x224x224": lambda: x3.contiguous(memory_format=cl),
        "to_channels_last_32x112x112": lambda: x32.contiguous(memory_format=cl),
        "clone_96x56x56": lambda: x96.clone(),
        "to_channels_last_96x56x56": lambda: x96.contiguous(memory_format=cl),
        "from_channels_last_96x56x56": lambda: x96c.contiguous(),
        "upsample_bilinear_21x28x28_x8": lambda: F.interpolate(x21, size=(224, 224), mode="bilinear",
                                                               align_corners=False),
    }


def main():
    torch.manual_seed(0)
    out = {}
    with torch.no_grad():
        for threads in (1, 2):
            set_threads(threads)
            for name, fn in cases().items():
                fn()
                timer = timeit.Timer(fn)
                n, _ = timer.autorange()
                best = min(timer.repeat(repeat=5, number=n)) / n
                out[f"{name}/threads:{threads}"] = best * 1e6
    json.dump(out, sys.stdout, indent=1)


if __name__ == "__main__":
    main()
