"""Golden records for indexing, selection, scans and reordering (gather,
scatter, index_select, masked_fill, take_along_dim, topk, sort, nonzero,
cumsum, cumprod, flip, roll, repeat, tile, tril, triu) and their gradients."""
import torch


def cases(emit):
    g = torch.Generator().manual_seed(23)

    def randn(*shape, dtype=torch.float32):
        return torch.randn(*shape, generator=g).to(dtype)

    x = randn(3, 4)
    emit.tensor("index.x", x)
    gi = torch.tensor([[2, 0, 1, 1], [0, 2, 2, 0]])
    emit.tensor("index.gather.index", gi)
    emit.tensor("index.gather.dim0", torch.gather(x, 0, gi))
    gi1 = torch.tensor([[3, 0], [1, 1], [0, 2]])
    emit.tensor("index.gather.index1", gi1)
    emit.tensor("index.gather.dim1", torch.gather(x, 1, gi1))
    emit.tensor("index.gather.dim0_t", torch.gather(x.t(), 0, gi1.t()))
    # scatter: src, value, add, multiply; scatter_add with duplicate indices.
    src = randn(2, 4)
    emit.tensor("index.scatter.src", src)
    si = torch.tensor([[1, 0, 2, 1], [0, 1, 2, 0]])
    emit.tensor("index.scatter.index", si)
    emit.tensor("index.scatter.src0", torch.scatter(x, 0, torch.tensor([[1, 0, 2, 1]]), src[:1]))
    emit.tensor("index.scatter.value", torch.scatter(x, 1, torch.tensor([[0], [3], [1]]), 2.5))
    emit.tensor("index.scatter.add", torch.scatter(x, 0, si, src, reduce="add"))
    emit.tensor("index.scatter.multiply", torch.scatter(x, 0, si, src, reduce="multiply"))
    emit.tensor("index.scatter_add", torch.scatter_add(x, 0, si, src))
    xi = torch.randint(-5, 5, (3, 4), generator=g)
    emit.tensor("index.xi", xi)
    emit.tensor("index.scatter_add_int", torch.scatter_add(xi, 0, si, torch.ones(2, 4, dtype=torch.int64)))
    # index_select: int64 and int32 indices, repeats, every dim.
    emit.tensor("index.index_select.dim0", torch.index_select(x, 0, torch.tensor([2, 0, 2])))
    emit.tensor("index.index_select.dim1", torch.index_select(x, -1, torch.tensor([3, 1], dtype=torch.int32)))
    # masked_fill: broadcast mask, int tensor with a float value, 0-d tensor value.
    mask = torch.tensor([True, False, True, False])
    emit.tensor("index.mask", mask)
    emit.tensor("index.masked_fill", x.masked_fill(mask, -1.25))
    emit.tensor("index.masked_fill_int", xi.masked_fill(mask, 2.7))
    emit.tensor("index.masked_fill_tensor", x.masked_fill(mask.reshape(4, 1)[:3].reshape(3, 1), torch.tensor(7.0)))
    # take_along_dim: broadcast indices, no dim.
    ti = torch.argsort(x, 1)[:, :2]
    emit.tensor("index.take.index", ti)
    emit.tensor("index.take.dim1", torch.take_along_dim(x, ti, 1))
    emit.tensor("index.take.bcast", torch.take_along_dim(x, torch.tensor([[2], [0], [1]]), 1))
    emit.tensor("index.take.flat", torch.take_along_dim(x, torch.tensor([11, 0, 5])))

    # topk / sort / argsort: ties in q (stable sort: the lower index first).
    q = torch.tensor([[3.0, 1.0, 3.0, 2.0, 1.0], [0.0, 5.0, float("nan"), -1.0, 5.0]])
    emit.tensor("sort.q", q)
    v, i = torch.topk(q, 3)
    emit.tensor("sort.topk.values", v)
    emit.tensor("sort.topk.indices", i)
    v, i = torch.topk(q, 2, dim=0, largest=False)
    emit.tensor("sort.topk_small.values", v)
    emit.tensor("sort.topk_small.indices", i)
    v, i = torch.sort(q, stable=True)
    emit.tensor("sort.sort.values", v)
    emit.tensor("sort.sort.indices", i)
    v, i = torch.sort(q, dim=1, descending=True, stable=True)
    emit.tensor("sort.sort_desc.values", v)
    emit.tensor("sort.sort_desc.indices", i)
    emit.tensor("sort.xi_sorted_dim0", torch.sort(xi, dim=0, stable=True)[1])
    nz = torch.tensor([[0.0, 1.5, 0.0], [2.0, 0.0, -3.0]])
    emit.tensor("sort.nz", nz)
    emit.tensor("sort.nonzero", torch.nonzero(nz))
    emit.tensor("sort.nonzero_bool", torch.nonzero(torch.tensor([False, True, True])))
    # cumsum / cumprod: int32 and bool accumulate into int64.
    emit.tensor("scan.cumsum.dim1", torch.cumsum(x, 1))
    emit.tensor("scan.cumsum.dim0", torch.cumsum(x, 0))
    xi32 = xi.to(torch.int32)
    emit.tensor("scan.xi32", xi32)
    emit.tensor("scan.cumsum.int32", torch.cumsum(xi32, -1))
    emit.tensor("scan.cumsum.bool", torch.cumsum(mask, 0))
    emit.tensor("scan.cumsum.f64", torch.cumsum(x, 1, dtype=torch.float64))
    emit.tensor("scan.cumprod.dim1", torch.cumprod(x, 1))
    emit.tensor("scan.cumprod.int32", torch.cumprod(xi32, 0))

    # flip, roll, repeat, tile, tril, triu
    y = randn(2, 3, 4)
    emit.tensor("reorder.y", y)
    emit.tensor("reorder.flip_0_2", torch.flip(y, [0, 2]))
    emit.tensor("reorder.flip_neg1", torch.flip(y, [-1]))
    emit.tensor("reorder.roll_flat", torch.roll(y, 5))
    emit.tensor("reorder.roll_dims", torch.roll(y, (1, -5), (1, 2)))
    emit.tensor("reorder.repeat", y[0].repeat(2, 1, 3))
    emit.tensor("reorder.tile", torch.tile(y, (2,)))
    emit.tensor("reorder.tile_more", torch.tile(y[0], (2, 1, 2)))
    emit.tensor("reorder.tril", torch.tril(y))
    emit.tensor("reorder.tril_m1", torch.tril(y, -1))
    emit.tensor("reorder.triu_1", torch.triu(y, 1))
    emit.tensor("reorder.triu_int", torch.triu(xi, -1))

    # Gradients of sum(out * w) for the differentiable ops (float64).
    xd = x.double().requires_grad_()
    sd = src.double().requires_grad_()

    def grads(name, out, inputs):
        w = torch.linspace(-1.0, 2.0, out.numel(), dtype=torch.float64).reshape(out.shape)
        gs = torch.autograd.grad((out * w).sum(), inputs)
        for k, gr in enumerate(gs):
            emit.tensor(f"grad.{name}.{k}", gr)

    grads("gather", torch.gather(xd, 0, gi), [xd])
    grads("scatter", torch.scatter(xd, 0, si, sd), [xd, sd])
    grads("scatter_add", torch.scatter_add(xd, 0, si, sd), [xd, sd])
    grads("index_select", torch.index_select(xd, 1, torch.tensor([3, 1, 3])), [xd])
    grads("masked_fill", xd.masked_fill(mask, 3.0), [xd])
    grads("cumsum", torch.cumsum(xd, 1), [xd])
    grads("cumprod", torch.cumprod(xd, 0), [xd])
    grads("topk", torch.topk(xd, 2, 1)[0], [xd])
    grads("flip", torch.flip(xd, [1]), [xd])
    grads("roll", torch.roll(xd, (2,), (1,)), [xd])
    grads("repeat", xd.repeat(2, 1, 2), [xd])
    grads("tril", torch.tril(xd, 1), [xd])
    grads("triu", torch.triu(xd), [xd])
