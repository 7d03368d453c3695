"""Training conformance: a small MLP and a small CNN with fixed initial weights
and a fixed sequence of batches, trained 25 steps with SGD (momentum, weight
decay) and with AdamW plus clip_grad_norm_. Records the initial weights, the
batches, the loss and gradient norm of every step and the final weights, so
ember's training loop can be checked against PyTorch step for step."""
import torch
import torch.nn as nn
import torch.nn.functional as F

STEPS = 25


def mlp():
    return nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 10))


def cnn():
    # No conv bias before BatchNorm: its gradient is zero up to rounding, and
    # AdamW would turn that rounding noise into steps.
    return nn.Sequential(
        nn.Conv2d(1, 4, 3, padding=1, bias=False), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(4, 8, 3), nn.ReLU(), nn.Flatten(), nn.Linear(32, 10))


def batches(prefix, shape, emit, seed):
    g = torch.Generator().manual_seed(seed)
    out = []
    for step in range(STEPS):
        x = torch.randn(*shape, generator=g)
        y = torch.randint(0, 10, (shape[0],), generator=g)
        emit.tensor(f"{prefix}.x.{step}", x)
        emit.tensor(f"{prefix}.y.{step}", y)
        out.append((x, y))
    return out


def train(model, data, make_opt, clip):
    opt = make_opt(model.parameters())
    losses, norms = [], []
    model.train()
    for x, y in data:
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        if clip:
            norms.append(float(torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)))
        opt.step()
        losses.append(float(loss))
    return losses, norms


def run(name, build, shape, emit, seed):
    torch.manual_seed(seed)
    init = build().state_dict()
    for k, v in init.items():
        emit.tensor(f"train.{name}.init.{k}", v)
    data = batches(f"train.{name}", shape, emit, seed + 1)
    runs = {
        "sgd": (lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9, weight_decay=1e-4), False),
        "adamw": (lambda p: torch.optim.AdamW(p, lr=1e-2, weight_decay=1e-2), True),
    }
    for opt_name, (make_opt, clip) in runs.items():
        model = build()
        model.load_state_dict(init)
        losses, norms = train(model, data, make_opt, clip)
        emit.tensor(f"train.{name}.{opt_name}.loss", torch.tensor(losses, dtype=torch.float64))
        if clip:
            emit.tensor(f"train.{name}.{opt_name}.norm", torch.tensor(norms, dtype=torch.float64))
        for k, v in model.state_dict().items():
            emit.tensor(f"train.{name}.{opt_name}.final.{k}", v)


def cases(emit):
    run("mlp", mlp, (8, 16), emit, 10)
    run("cnn", cnn, (8, 1, 8, 8), emit, 20)
