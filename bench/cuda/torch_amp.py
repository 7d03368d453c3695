"""PyTorch's torch.amp training loop on CUDA, recorded for ember's comparison
(tools/cuda_device_check.sh step 2; tests/cuda/torch_amp_test.cc reads it).

    torch_amp.py OUTDIR

For float16 and bfloat16: an MLP (Linear 8->32, ReLU, Linear 32->4) trained 20
steps with SGD (lr 0.1, momentum 0.9) under torch.autocast("cuda", dtype) and a
GradScaler (init_scale 2**24, so the first float16 steps overflow and are
skipped; growth_interval 3, so the scale also grows). Writes OUTDIR/<dtype>.*.npy:
init_{w0,b0,w1,b1}, x, target (int64), losses [20] (the float32 loss of each
step), scales [20] (get_scale() after each update) and final_{w0,b0,w1,b1}.
"""
import os
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


def main(out):
    os.makedirs(out, exist_ok=True)
    dev = torch.device("cuda")
    torch.backends.cuda.matmul.allow_tf32 = False
    for name, dtype in (("float16", torch.float16), ("bfloat16", torch.bfloat16)):
        torch.manual_seed(40)
        model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 4))
        x = torch.randn(16, 8)
        target = torch.randint(0, 4, (16,))
        save = lambda key, t: np.save(os.path.join(out, f"{name}.{key}.npy"), t.detach().cpu().numpy())
        params = ("w0", "b0", "w1", "b1")
        for key, p in zip(params, model.parameters()):
            save(f"init_{key}", p)
        save("x", x)
        save("target", target)
        model.to(dev)
        x, target = x.to(dev), target.to(dev)
        opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        scaler = torch.amp.GradScaler("cuda", init_scale=2.0**24, growth_interval=3)
        losses, scales = [], []
        for _ in range(20):
            opt.zero_grad()
            with torch.autocast("cuda", dtype=dtype):
                loss = F.cross_entropy(model(x), target)
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
            losses.append(loss.item())
            scales.append(scaler.get_scale())
        save("losses", torch.tensor(losses, dtype=torch.float32))
        save("scales", torch.tensor(scales, dtype=torch.float64))
        for key, p in zip(params, model.parameters()):
            save(f"final_{key}", p)
        print(f"torch.amp {name}: losses {losses[0]:.5f} -> {losses[-1]:.5f}, final scale {scales[-1]:g}")


if __name__ == "__main__":
    main(sys.argv[1])
