"""Golden records for 2-D pooling and embedding."""
import torch
import torch.nn.functional as F


def cases(emit):
    g = torch.Generator().manual_seed(5)

    def randn(*shape, dtype=torch.float32):
        return torch.randn(*shape, generator=g).to(dtype)

    # max_pool2d: records pool.max.<i>.{x,args,out,indices}; args = kH kW sH sW pH pW dH dW ceil
    maxes = [
        ((1, 2, 5, 5), torch.float32, (2, 2), (2, 2), (0, 0), (1, 1), False),
        ((2, 3, 7, 6), torch.float32, (3, 2), (2, 1), (1, 1), (1, 1), False),
        ((2, 3, 7, 6), torch.float32, (3, 3), (2, 2), (1, 0), (1, 1), True),
        ((1, 2, 8, 9), torch.float32, (3, 2), (1, 3), (1, 1), (2, 3), False),
        ((1, 2, 8, 9), torch.float64, (2, 3), (3, 2), (1, 1), (2, 1), True),
        ((3, 5, 5), torch.float32, (3, 3), (1, 1), (1, 1), (1, 1), False),
        ((2, 4, 5, 5), torch.bfloat16, (2, 2), (1, 1), (0, 1), (1, 1), True),
        ((1, 1, 4, 4), torch.float32, (2, 2), (1, 1), (0, 0), (2, 2), True),
        ((1, 1, 5, 5), torch.float32, (3, 3), (2, 2), (1, 1), (1, 1), True),
        ((0, 2, 5, 5), torch.float32, (2, 2), (2, 2), (0, 0), (1, 1), False),
    ]
    for i, (shape, dtype, k, s, p, d, ceil) in enumerate(maxes):
        x = randn(*shape, dtype=dtype)
        if i == 0:
            x[0, 1, 1, 1] = float("nan")
            x[0, 0, 4, 4] = float("inf")
        emit.tensor(f"pool.max.{i}.x", x)
        emit.tensor(f"pool.max.{i}.args", torch.tensor([*k, *s, *p, *d, int(ceil)]))
        emit.tensor(f"pool.max.{i}.out", F.max_pool2d(x, k, s, p, d, ceil))
        emit.tensor(f"pool.max.{i}.indices", F.max_pool2d(x, k, s, p, d, ceil, return_indices=True)[1])

    # avg_pool2d: args = kH kW sH sW pH pW ceil count_include_pad divisor(0: none)
    avgs = [
        ((1, 2, 5, 5), torch.float32, (2, 2), (2, 2), (0, 0), False, True, None),
        ((2, 3, 7, 6), torch.float32, (3, 2), (2, 1), (1, 1), False, True, None),
        ((2, 3, 7, 6), torch.float32, (3, 2), (2, 1), (1, 1), False, False, None),
        ((2, 3, 7, 6), torch.float32, (3, 3), (2, 2), (1, 1), True, True, None),
        ((2, 3, 7, 6), torch.float32, (3, 3), (2, 2), (1, 1), True, False, None),
        ((1, 2, 6, 5), torch.float64, (3, 2), (1, 2), (1, 0), True, True, 5),
        ((3, 5, 5), torch.float32, (3, 3), (1, 1), (1, 1), False, False, None),
        ((2, 4, 5, 5), torch.bfloat16, (2, 2), (1, 1), (0, 1), False, True, None),
        ((1, 2, 5, 4), torch.int64, (3, 3), (2, 2), (1, 1), True, True, None),
        ((1, 2, 5, 4), torch.int64, (2, 2), (1, 1), (1, 0), False, False, 3),
        ((0, 2, 5, 5), torch.float32, (2, 2), (2, 2), (0, 0), False, True, None),
    ]
    for i, (shape, dtype, k, s, p, ceil, cip, div) in enumerate(avgs):
        if dtype == torch.int64:
            x = torch.randint(-100, 100, shape, generator=g)
        else:
            x = randn(*shape, dtype=dtype)
        emit.tensor(f"pool.avg.{i}.x", x)
        emit.tensor(f"pool.avg.{i}.args", torch.tensor([*k, *s, *p, int(ceil), int(cip), div or 0]))
        emit.tensor(f"pool.avg.{i}.out", F.avg_pool2d(x, k, s, p, ceil, cip, div))

    # adaptive_avg_pool2d: args = oH oW
    adaptives = [
        ((1, 2, 5, 5), torch.float32, (2, 2)),
        ((2, 3, 7, 6), torch.float32, (3, 4)),
        ((2, 3, 7, 6), torch.float32, (7, 6)),
        ((2, 3, 5, 4), torch.float32, (9, 7)),
        ((1, 2, 6, 5), torch.float64, (1, 1)),
        ((3, 5, 5), torch.float32, (3, 2)),
        ((2, 4, 5, 5), torch.bfloat16, (2, 3)),
        ((1, 2, 5, 5), torch.float32, (0, 3)),
        ((0, 2, 5, 5), torch.float32, (2, 2)),
    ]
    for i, (shape, dtype, o) in enumerate(adaptives):
        x = randn(*shape, dtype=dtype)
        emit.tensor(f"pool.adaptive.{i}.x", x)
        emit.tensor(f"pool.adaptive.{i}.args", torch.tensor(list(o)))
        emit.tensor(f"pool.adaptive.{i}.out", F.adaptive_avg_pool2d(x, o))

    # embedding
    w = randn(7, 4)
    idx = torch.tensor([[0, 6, 2], [2, 5, 1]])
    emit.tensor("embedding.w", w)
    emit.tensor("embedding.idx", idx)
    emit.tensor("embedding.out", F.embedding(idx, w))
    emit.tensor("embedding.out_scalar", F.embedding(torch.tensor(3), w))
    wh = randn(5, 3, dtype=torch.float16)
    emit.tensor("embedding.wh", wh)
    emit.tensor("embedding.out_h", F.embedding(torch.tensor([4, 0, 4], dtype=torch.int32), wh))
