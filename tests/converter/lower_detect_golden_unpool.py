import numpy as np, torch
def lit(v):
    s = "%.9g" % v
    return (s if ("." in s or "e" in s) else s + ".0") + "f"
def fl(a): return ", ".join(lit(v) for v in np.asarray(a, np.float32).ravel())
rng = np.random.default_rng(3)
x = torch.tensor(np.round(rng.uniform(-2, 2, (1, 1, 5, 5)), 1).astype(np.float32))
y, i = torch.nn.functional.max_pool2d(x, 3, 2, 1, return_indices=True)
u = torch.nn.functional.max_unpool2d(y, i, 3, 2, 1, output_size=(5, 5))
print("upx", fl(y.numpy())); print("upi", ", ".join(str(v) for v in i.numpy().ravel())); print("upy", fl(u.numpy()))
u6 = torch.nn.functional.max_unpool2d(y, i, 3, 2, 1, output_size=(6, 6))
print("upy6", fl(u6.numpy()))
# Col2Im vs torch's fold: image 6x5, block 2x3, dilation (2, 1), padding (1, 1), stride (2, 1); C = 2
blocks_h = (6 + 2 - 2 * 1 - 1) // 2 + 1
blocks_w = (5 + 2 - 1 * 2 - 1) // 1 + 1
L = blocks_h * blocks_w
cx = torch.tensor(np.round(rng.uniform(-2, 2, (1, 2 * 6, L)), 1).astype(np.float32))
f = torch.nn.functional.fold(cx, (6, 5), (2, 3), dilation=(2, 1), padding=(1, 1), stride=(2, 1))
print("cL", L); print("cx", fl(cx.numpy())); print("cy", fl(f.numpy()))
