"""Golden records for losses (values and gradients), optimizers, LR schedulers and clipping."""
import warnings

import torch
import torch.nn.functional as F

REDUCTIONS = ("none", "mean", "sum")


def emit_loss(emit, name, fn, inputs, grads_of):
    """Records fn(*inputs) and, after out.sum().backward(), the grads of inputs[i] for i in grads_of."""
    leaves = [t.detach().clone().requires_grad_(i in grads_of) for i, t in enumerate(inputs)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = fn(*leaves)
    emit.tensor(f"{name}.out", out)
    out.sum().backward()
    for i in grads_of:
        emit.tensor(f"{name}.g{i}", leaves[i].grad)


def loss_cases(emit):
    torch.manual_seed(10)
    x = torch.randn(3, 4)
    t = torch.randn(3, 4)
    t[1, 2] = x[1, 2]  # a zero difference (abs' gradient is 0 there)
    emit.tensor("loss.x", x)
    emit.tensor("loss.t", t)
    emit.tensor("loss.t4", t[0])
    for r in REDUCTIONS:
        emit_loss(emit, f"loss.mse.{r}", lambda a, b: F.mse_loss(a, b, reduction=r), [x, t], [0, 1])
        emit_loss(emit, f"loss.l1.{r}", lambda a, b: F.l1_loss(a, b, reduction=r), [x, t], [0, 1])
        emit_loss(emit, f"loss.mse_b.{r}", lambda a, b: F.mse_loss(a, b, reduction=r), [x, t[0]], [0, 1])
    emit_loss(emit, "loss.mse.f64", lambda a, b: F.mse_loss(a, b), [x.double(), t.double()], [0])

    # nll_loss on log-probabilities.
    logits = torch.randn(6, 4)
    target = torch.tensor([0, 3, -100, 1, 2, 3])
    weight = torch.tensor([0.5, 2.0, 1.0, 0.25])
    emit.tensor("loss.logits", logits)
    emit.tensor("loss.target", target)
    emit.tensor("loss.weight", weight)
    lp = F.log_softmax(logits, 1)
    emit.tensor("loss.logp", lp)
    for r in REDUCTIONS:
        emit_loss(emit, f"loss.nll.{r}", lambda a: F.nll_loss(a, target, reduction=r), [lp], [0])
        emit_loss(emit, f"loss.nll.w.{r}", lambda a: F.nll_loss(a, target, weight, reduction=r), [lp], [0])
        emit_loss(emit, f"loss.nll.ii3.{r}", lambda a: F.nll_loss(a, target.clamp(min=0), weight,
                                                                  ignore_index=3, reduction=r), [lp], [0])
    emit_loss(emit, "loss.nll.1d", lambda a: F.nll_loss(a, torch.tensor(2)), [lp[0]], [0])
    emit_loss(emit, "loss.nll.1d.none", lambda a: F.nll_loss(a, torch.tensor(1), reduction="none"), [lp[1]], [0])
    lp3 = F.log_softmax(torch.randn(2, 3, 5), 1)
    t3 = torch.tensor([[0, 2, 1, -100, 2], [1, 1, 0, 2, 0]])
    emit.tensor("loss.lp3", lp3)
    emit.tensor("loss.t3", t3)
    for r in REDUCTIONS:
        emit_loss(emit, f"loss.nll3.{r}", lambda a: F.nll_loss(a, t3, torch.tensor([1.0, 3.0, 0.5]), reduction=r),
                  [lp3], [0])
    lp4 = F.log_softmax(torch.randn(2, 3, 2, 3), 1)
    t4 = torch.randint(0, 3, (2, 2, 3))
    emit.tensor("loss.lp4", lp4)
    emit.tensor("loss.t4d", t4)
    emit_loss(emit, "loss.nll4.mean", lambda a: F.nll_loss(a, t4), [lp4], [0])
    emit_loss(emit, "loss.nll4.none", lambda a: F.nll_loss(a, t4, reduction="none"), [lp4], [0])
    emit_loss(emit, "loss.nll.f64", lambda a: F.nll_loss(a, target, weight.double()), [lp.double()], [0])

    # cross_entropy: weights, ignore_index, label smoothing, spatial, 1-D, probabilities.
    for r in REDUCTIONS:
        for ls in (0.0, 0.2):
            emit_loss(emit, f"loss.ce.{r}.ls{ls}", lambda a: F.cross_entropy(a, target, reduction=r,
                                                                             label_smoothing=ls), [logits], [0])
            emit_loss(emit, f"loss.ce.w.{r}.ls{ls}", lambda a: F.cross_entropy(a, target, weight, reduction=r,
                                                                               label_smoothing=ls), [logits], [0])
            emit_loss(emit, f"loss.ce.ii1.{r}.ls{ls}",
                      lambda a: F.cross_entropy(a, target.clamp(min=0), weight, ignore_index=1, reduction=r,
                                                label_smoothing=ls), [logits], [0])
    emit_loss(emit, "loss.ce.ls1", lambda a: F.cross_entropy(a, target, label_smoothing=1.0), [logits], [0])
    x3 = torch.randn(2, 3, 5)
    emit.tensor("loss.x3", x3)
    w3 = torch.tensor([1.0, 3.0, 0.5])
    for r in REDUCTIONS:
        emit_loss(emit, f"loss.ce3.{r}", lambda a: F.cross_entropy(a, t3, w3, reduction=r, label_smoothing=0.1),
                  [x3], [0])
    emit_loss(emit, "loss.ce.1d", lambda a: F.cross_entropy(a, torch.tensor(3)), [logits[0]], [0])
    emit_loss(emit, "loss.ce.1d.ls", lambda a: F.cross_entropy(a, torch.tensor(3), label_smoothing=0.3),
              [logits[0]], [0])
    probs = torch.softmax(torch.randn(6, 4), 1)
    emit.tensor("loss.probs", probs)
    for r in REDUCTIONS:
        emit_loss(emit, f"loss.ce_p.{r}", lambda a, b: F.cross_entropy(a, b, reduction=r), [logits, probs], [0, 1])
        emit_loss(emit, f"loss.ce_p.w.{r}", lambda a: F.cross_entropy(a, probs, weight, reduction=r,
                                                                      label_smoothing=0.25), [logits], [0])
    emit_loss(emit, "loss.ce.f64", lambda a: F.cross_entropy(a, target, weight.double(), label_smoothing=0.1),
              [logits.double()], [0])
    emit_loss(emit, "loss.ce.big", lambda a: F.cross_entropy(a, torch.tensor([0, 1])),
              [torch.tensor([[1000.0, -1000.0, 0.0], [-500.0, 20.0, 700.0]])], [0])

    # binary_cross_entropy_with_logits, including large logits.
    bx = torch.randn(4, 3) * 3
    bx[0, 0], bx[1, 1], bx[2, 2] = 60.0, -80.0, 0.0
    bt = torch.rand(4, 3)
    bt[3] = torch.tensor([0.0, 1.0, 1.0])
    bw = torch.tensor([0.5, 1.5, 2.0])
    bpw = torch.tensor([3.0, 0.5, 1.0])
    emit.tensor("loss.bx", bx)
    emit.tensor("loss.bt", bt)
    emit.tensor("loss.bw", bw)
    emit.tensor("loss.bpw", bpw)
    for r in REDUCTIONS:
        emit_loss(emit, f"loss.bce.{r}", lambda a, b: F.binary_cross_entropy_with_logits(a, b, reduction=r),
                  [bx, bt], [0, 1])
        emit_loss(emit, f"loss.bce.w.{r}", lambda a: F.binary_cross_entropy_with_logits(a, bt, bw, reduction=r),
                  [bx], [0])
        emit_loss(emit, f"loss.bce.pw.{r}",
                  lambda a, b: F.binary_cross_entropy_with_logits(a, b, pos_weight=bpw, reduction=r), [bx, bt],
                  [0, 1])
        emit_loss(emit, f"loss.bce.wpw.{r}",
                  lambda a: F.binary_cross_entropy_with_logits(a, bt, bw, pos_weight=bpw, reduction=r), [bx], [0])
    emit_loss(emit, "loss.bce.f64", lambda a: F.binary_cross_entropy_with_logits(a, bt.double(), pos_weight=bpw.double()),
              [bx.double()], [0])


OPTIMIZERS = {
    "sgd": lambda ps: torch.optim.SGD(ps, lr=0.1),
    "sgd_mom": lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.9),
    "sgd_damp": lambda ps: torch.optim.SGD(ps, lr=0.05, momentum=0.8, dampening=0.3),
    "sgd_nest": lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.9, nesterov=True),
    "sgd_wd": lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.5, weight_decay=0.01),
    "adam": lambda ps: torch.optim.Adam(ps, lr=0.01, foreach=False),
    "adam_ams": lambda ps: torch.optim.Adam(ps, lr=0.02, betas=(0.8, 0.95), amsgrad=True, foreach=False),
    "adam_wd": lambda ps: torch.optim.Adam(ps, lr=0.01, eps=1e-6, weight_decay=0.1, foreach=False),
    "adamw": lambda ps: torch.optim.AdamW(ps, lr=0.01, foreach=False),
    "adamw_ams": lambda ps: torch.optim.AdamW(ps, lr=0.03, weight_decay=0.05, amsgrad=True, foreach=False),
}
STEPS = 10
SKIP_P2 = 3  # the step at which p2 has no gradient


def optim_cases(emit):
    torch.manual_seed(11)
    p1 = torch.randn(3, 4)
    p2 = torch.randn(5)
    emit.tensor("optim.p1", p1)
    emit.tensor("optim.p2", p2)
    g1 = [torch.randn(3, 4) * (0.1 + 2 * torch.rand(1)) for _ in range(STEPS)]
    g2 = [torch.randn(5) * (0.1 + 2 * torch.rand(1)) for _ in range(STEPS)]
    for k in range(STEPS):
        emit.tensor(f"optim.g1.{k}", g1[k])
        emit.tensor(f"optim.g2.{k}", g2[k])
    for name, make in OPTIMIZERS.items():
        a = p1.clone().requires_grad_()
        b = p2.clone().requires_grad_()
        opt = make([a, b])
        for k in range(STEPS):
            a.grad = g1[k].clone()
            b.grad = None if k == SKIP_P2 else g2[k].clone()
            opt.step()
            emit.tensor(f"optim.{name}.p1.{k}", a)
            emit.tensor(f"optim.{name}.p2.{k}", b)

    # Schedulers: lr after construction and after each of 25 steps.
    def lrs(make_sched):
        p = torch.zeros(1, requires_grad=True)
        opt = torch.optim.SGD([p], lr=0.1)
        sched = make_sched(opt)
        out = [sched.get_last_lr()[0]]
        for _ in range(25):
            opt.step()
            sched.step()
            out.append(sched.get_last_lr()[0])
        return torch.tensor(out, dtype=torch.float64)

    emit.tensor("optim.steplr", lrs(lambda o: torch.optim.lr_scheduler.StepLR(o, 3, gamma=0.5)))
    emit.tensor("optim.steplr.default", lrs(lambda o: torch.optim.lr_scheduler.StepLR(o, 4)))
    emit.tensor("optim.cos", lrs(lambda o: torch.optim.lr_scheduler.CosineAnnealingLR(o, 10, eta_min=0.001)))
    emit.tensor("optim.cos.t7", lrs(lambda o: torch.optim.lr_scheduler.CosineAnnealingLR(o, 7)))

    # Clipping.
    c1 = torch.randn(3, 4)
    c2 = torch.randn(5) * 3
    emit.tensor("optim.c1", c1)
    emit.tensor("optim.c2", c2)
    for name, max_norm, norm_type in (("l2", 1.0, 2.0), ("inf", 0.5, float("inf")), ("l1", 2.0, 1.0),
                                      ("big", 1000.0, 2.0)):
        a = torch.zeros(3, 4, requires_grad=True)
        b = torch.zeros(5, requires_grad=True)
        none = torch.zeros(2, requires_grad=True)
        a.grad, b.grad = c1.clone(), c2.clone()
        total = torch.nn.utils.clip_grad_norm_([a, none, b], max_norm, norm_type)
        emit.tensor(f"optim.clip.{name}.total", total)
        emit.tensor(f"optim.clip.{name}.g1", a.grad)
        emit.tensor(f"optim.clip.{name}.g2", b.grad)
    a = torch.zeros(5, requires_grad=True)
    a.grad = c2.clone()
    total = torch.nn.utils.clip_grad_norm_([a], 1.0, float("inf"))
    emit.tensor("optim.clip.inf1.total", total)
    emit.tensor("optim.clip.inf1.g", a.grad)
    a = torch.zeros(5, requires_grad=True)
    a.grad = c2.clone()
    torch.nn.utils.clip_grad_value_([a], 0.75)
    emit.tensor("optim.clipv.g", a.grad)


def cases(emit):
    loss_cases(emit)
    optim_cases(emit)
