# NMS and RoiAlign expectations from torchvision 0.14 (Debian's /usr/bin/python3).
import numpy as np, torch, torchvision
rng = np.random.default_rng(11)
def lit(v):
    s = "%.9g" % v
    return (s if ("." in s or "e" in s) else s + ".0") + "f"
def fl(a): return ", ".join(lit(v) for v in np.asarray(a, np.float32).ravel())
# NMS: B=2, N=10, C=2; boxes [y1, x1, y2, x2] (some corners swapped), scores round to 2 decimals, distinct
B, N, C = 2, 10, 2
yx = np.round(rng.uniform(0, 10, (B, N, 2)), 1)
hw = np.round(rng.uniform(1, 5, (B, N, 2)), 1)
boxes = np.concatenate([yx, yx + hw], -1).astype(np.float32)
boxes[0, 3] = boxes[0, 3][[2, 3, 0, 1]]  # flipped corners
scores = (rng.permutation(B * C * N).reshape(B, C, N) / 50.0 + 0.01).astype(np.float32)
print("boxes", fl(boxes)); print("scores", fl(scores))
def ref(boxes_xyxy, max_out, iou, sthr):
    sel = []
    for b in range(B):
        for c in range(C):
            s = torch.tensor(scores[b, c]); bx = torch.tensor(boxes_xyxy[b])
            idx = torch.nonzero(s > sthr).flatten()
            keep = torchvision.ops.nms(bx[idx], s[idx], iou)
            for k in idx[keep][:max_out].tolist(): sel.append((b, c, k))
    return sel
yxyx = boxes
xyxy = np.stack([np.minimum(yxyx[..., 1], yxyx[..., 3]), np.minimum(yxyx[..., 0], yxyx[..., 2]),
                 np.maximum(yxyx[..., 1], yxyx[..., 3]), np.maximum(yxyx[..., 0], yxyx[..., 2])], -1)
sel = ref(xyxy, 3, 0.3, 0.2)
print("nms corner", len(sel), sum(sel, ()))
# center_point_box: [xc, yc, w, h]
ctr = np.stack([(xyxy[..., 0] + xyxy[..., 2]) / 2, (xyxy[..., 1] + xyxy[..., 3]) / 2,
                xyxy[..., 2] - xyxy[..., 0], xyxy[..., 3] - xyxy[..., 1]], -1).astype(np.float32)
print("ctr", fl(ctr))
sel2 = ref(xyxy, 100, 0.5, -1.0)
print("nms center all", len(sel2), sum(sel2, ()))
# RoiAlign: x [2, 2, 6, 7], rois [3, 4] ([x1, y1, x2, y2]), batch [1, 0, 1]
x = np.round(rng.uniform(-2, 2, (2, 2, 6, 7)), 1).astype(np.float32)
rois = np.array([[0.5, 1.0, 5.5, 4.0], [1.2, 0.3, 3.1, 5.8], [-1.0, 2.0, 8.0, 7.5]], np.float32)
bi = np.array([1, 0, 1])
print("x", fl(x)); print("rois", fl(rois))
tr = torch.tensor(np.concatenate([bi[:, None].astype(np.float32), rois], 1))
for aligned in (True, False):
    for sr in (0, 2):
        y = torchvision.ops.roi_align(torch.tensor(x), tr, (3, 2), spatial_scale=0.5, sampling_ratio=sr if sr else -1, aligned=aligned)
        print("roi aligned=%d sr=%d" % (aligned, sr), fl(y.numpy()))
