"""Golden records for torch.nn.functional.interpolate and conv_transpose1d/2d/3d."""
import torch
import torch.nn.functional as F


def cases(emit):
    g = torch.Generator().manual_seed(11)

    def randn(*shape, dtype=torch.float32):
        return torch.randn(*shape, generator=g).to(dtype)

    # interpolate: records spatial.interp.<i>.{x,size,scale,out} and .mode (text);
    # .align: [-1] none, [0] False, [1] True; empty size / scale: not given.
    interps = [
        ((1, 2, 4, 5), None, [2.0], "nearest", None),
        ((2, 3, 5, 4), [7, 3], None, "nearest", None),
        ((1, 2, 6, 5), None, [0.5, 1.5], "nearest", None),
        ((1, 2, 5, 4), [8, 9], None, "nearest-exact", None),
        ((1, 2, 4, 5), None, [2.0], "bilinear", False),
        ((2, 3, 5, 4), [7, 3], None, "bilinear", False),
        ((1, 2, 5, 6), None, [1.7, 0.6], "bilinear", False),
        ((1, 2, 4, 5), [7, 9], None, "bilinear", True),
        ((1, 2, 4, 5), None, [2.0], "bilinear", True),
        ((1, 2, 5, 6), [9, 4], None, "bicubic", False),
        ((1, 2, 5, 6), None, [1.5, 2.0], "bicubic", True),
        ((2, 3, 7), [12], None, "linear", False),
        ((2, 3, 7), None, [0.6], "linear", True),
        ((1, 2, 3, 4, 5), [5, 3, 7], None, "trilinear", False),
        ((1, 2, 3, 4, 5), None, [2.0], "nearest", None),
        ((1, 3, 7, 9), [3, 4], None, "area", None),
        ((2, 3, 5), None, [2.5], "nearest", None),
    ]
    for i, (shape, size, scale, mode, align) in enumerate(interps):
        x = randn(*shape)
        emit.tensor(f"spatial.interp.{i}.x", x)
        emit.tensor(f"spatial.interp.{i}.size", torch.tensor(size or [], dtype=torch.int64))
        emit.tensor(f"spatial.interp.{i}.scale", torch.tensor(scale or [], dtype=torch.float64))
        emit.tensor(f"spatial.interp.{i}.align", torch.tensor([-1 if align is None else int(align)]))
        emit.text(f"spatial.interp.{i}.mode", mode)
        sf = None if scale is None else (scale[0] if len(scale) == 1 else scale)
        emit.tensor(f"spatial.interp.{i}.out", F.interpolate(x, size=size, scale_factor=sf, mode=mode, align_corners=align))

    # conv_transpose: records spatial.convt.<i>.{x,w,b,args,out}; args = dims groups
    # then per dim stride, padding, output_padding, dilation; b empty: no bias.
    convts = [
        (2, (1, 3, 5, 4), 4, (3, 3), (2, 2), (1, 1), (1, 1), (1, 1), 1, True),
        (2, (2, 8, 4, 4), 5, (2, 2), (2, 2), (0, 0), (0, 0), (1, 1), 1, False),
        (2, (1, 4, 5, 6), 3, (3, 2), (1, 3), (2, 0), (0, 2), (2, 1), 2, True),
        (2, (1, 6, 3, 3), 1, (3, 3), (2, 2), (1, 1), (1, 0), (1, 1), 6, True),
        (2, (3, 4, 4), 2, (4, 4), (2, 2), (1, 1), (0, 0), (1, 1), 1, True),  # unbatched
        (1, (2, 3, 7), 2, (4,), (3,), (1,), (2,), (1,), 1, True),
        (3, (1, 2, 3, 2, 3), 2, (2, 3, 2), (2, 1, 2), (0, 1, 1), (1, 0, 0), (1, 1, 1), 1, True),
    ]
    for i, (dims, xs, cog, k, s, p, op, d, groups, bias) in enumerate(convts):
        x = randn(*xs)
        cin = xs[-dims - 1]
        w = randn(cin, cog, *k)
        b = randn(cog * groups) if bias else None
        fn = {1: F.conv_transpose1d, 2: F.conv_transpose2d, 3: F.conv_transpose3d}[dims]
        emit.tensor(f"spatial.convt.{i}.x", x)
        emit.tensor(f"spatial.convt.{i}.w", w)
        emit.tensor(f"spatial.convt.{i}.b", b if bias else torch.zeros(0))
        emit.tensor(f"spatial.convt.{i}.args", torch.tensor([dims, groups, *s, *p, *op, *d]))
        emit.tensor(f"spatial.convt.{i}.out", fn(x, w, b, s, p, op, groups, d))

    # grid_sample: records spatial.grid.<i>.{x,grid,out}, .mode and .padding (text), .align [0|1].
    grids = [
        ((2, 3, 5, 6), (2, 4, 7), "bilinear", "zeros", False),
        ((2, 3, 5, 6), (2, 4, 7), "bilinear", "border", False),
        ((2, 3, 5, 6), (2, 4, 7), "bilinear", "reflection", False),
        ((1, 2, 5, 6), (1, 4, 7), "bilinear", "zeros", True),
        ((1, 2, 5, 6), (1, 4, 7), "bilinear", "reflection", True),
        ((1, 2, 5, 6), (1, 4, 7), "nearest", "zeros", False),
        ((1, 2, 5, 6), (1, 4, 7), "nearest", "border", True),
        ((1, 2, 5, 6), (1, 4, 7), "bicubic", "zeros", False),
        ((1, 2, 5, 6), (1, 4, 7), "bicubic", "zeros", True),
        ((1, 2, 3, 4, 5), (1, 2, 3, 4), "bilinear", "zeros", False),
        ((1, 2, 3, 4, 5), (1, 2, 3, 4), "nearest", "border", True),
    ]
    for i, (xs, gs, mode, pad, align) in enumerate(grids):
        x = randn(*xs)
        grid = torch.rand(*gs, len(xs) - 2, generator=g) * 2.4 - 1.2
        emit.tensor(f"spatial.grid.{i}.x", x)
        emit.tensor(f"spatial.grid.{i}.grid", grid)
        emit.text(f"spatial.grid.{i}.mode", mode)
        emit.text(f"spatial.grid.{i}.padding", pad)
        emit.tensor(f"spatial.grid.{i}.align", torch.tensor([int(align)]))
        emit.tensor(f"spatial.grid.{i}.out", F.grid_sample(x, grid, mode=mode, padding_mode=pad, align_corners=align))
