"""A zoo of small trained MLP classifiers for generalisation prediction (Small-CNN-Zoo style).

:func:`make_mlp_zoo` trains ``n`` ReLU MLPs ``2 -> h -> h -> 2`` at once (full-batch SGD
with momentum, each network with its own hyper-parameters): a procedural 2-D task per
network (Gaussian blobs, XOR, circles or spirals, randomly rotated and scaled), a
log-uniform learning rate and weight decay, label noise in ``[0, 0.4]``, an initialisation
scale and a number of steps in ``[5, 400]``. The label of each network is its accuracy on
clean test points of its own task; predicting it from the weights is scored with Kendall
tau. The stored zoo has ``meta["kind"] = "mlp-zoo"`` and the hyper-parameters as targets.
"""

from __future__ import annotations

import math

import torch

from wsnets.inr_zoo import Zoo
from wsnets.weight_space import WeightSpace

TASKS = ("blobs", "xor", "circles", "spirals")


def task_points(
    kind: torch.Tensor, n: int, gen: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(x (B, n, 2), y (B, n))`` for task ids ``kind`` (indices into :data:`TASKS`)."""
    B = kind.shape[0]
    y = torch.randint(0, 2, (B, n), generator=gen)
    u = torch.rand(B, n, generator=gen)
    noise = 0.15 * torch.randn(B, n, 2, generator=gen)
    sign = (2 * y - 1).float()
    blobs = torch.stack([sign * 0.6, 0.2 * sign], -1)
    a = torch.randint(0, 2, (B, n), generator=gen).float() * 2 - 1
    xor = torch.stack([a * 0.6, a * sign * 0.6], -1)
    ang = 2 * math.pi * u
    r = 0.3 + 0.5 * y.float()
    circles = torch.stack([r * torch.cos(ang), r * torch.sin(ang)], -1)
    t = 3 * math.pi * u
    rs = 0.15 + 0.25 * t / math.pi
    sp = torch.stack([rs * torch.cos(t + math.pi * y), rs * torch.sin(t + math.pi * y)], -1)
    k = kind[:, None, None]
    x = torch.where(k == 0, blobs, torch.where(k == 1, xor, torch.where(k == 2, circles, sp)))
    return x + noise * torch.where(k == 3, 0.3, 1.0), y


def make_mlp_zoo(n: int = 500, hidden: int = 8, points: int = 200, seed: int = 0) -> Zoo:
    """Train ``n`` MLP classifiers with random hyper-parameters; label = test accuracy.

    Examples
    --------
    >>> z = make_mlp_zoo(8, seed=0)
    >>> z.params.arch, bool(((z.targets["accuracy"] >= 0) & (z.targets["accuracy"] <= 1)).all())
    ((2, 8, 8, 2), True)
    """
    gen = torch.Generator().manual_seed(seed + 11)
    kind = torch.randint(0, len(TASKS), (n,), generator=gen)
    theta = 2 * math.pi * torch.rand(n, generator=gen)
    rot = torch.stack(
        [torch.stack([theta.cos(), -theta.sin()], -1), torch.stack([theta.sin(), theta.cos()], -1)],
        -2,
    )
    x_tr, y_tr = task_points(kind, points, gen)
    x_te, y_te = task_points(kind, 4 * points, gen)
    x_tr, x_te = x_tr @ rot, x_te @ rot
    lr = 10 ** (-3 + 2.7 * torch.rand(n, generator=gen))
    wd = 10 ** (-5 + 4 * torch.rand(n, generator=gen))
    label_noise = 0.4 * torch.rand(n, generator=gen)
    flip = torch.rand(n, points, generator=gen) < label_noise[:, None]
    y_noisy = torch.where(flip, 1 - y_tr, y_tr)
    steps = torch.randint(5, 401, (n,), generator=gen)
    init = 0.3 + 1.7 * torch.rand(n, generator=gen)
    arch = [2, hidden, hidden, 2]
    ws = [
        torch.randn(n, o, i, 1, generator=gen) * init[:, None, None, None] / math.sqrt(i)
        for i, o in zip(arch[:-1], arch[1:], strict=True)
    ]
    bs = [torch.randn(n, o, 1, generator=gen) * 0.1 for o in arch[1:]]
    leaves = [t.requires_grad_(True) for t in ws + bs]
    mom = [torch.zeros_like(t) for t in leaves]
    L = len(ws)
    for step in range(int(steps.max())):
        v = WeightSpace(leaves[:L], leaves[L:])
        logits = v.render(x_tr, "relu")[..., 0]
        loss = (
            torch.nn.functional.cross_entropy(
                logits.reshape(-1, 2), y_noisy.reshape(-1), reduction="none"
            )
            .reshape(n, points)
            .mean(1)
        )
        grads = torch.autograd.grad(loss.sum(), leaves)
        active = (step < steps).float()
        with torch.no_grad():
            for t, g, m in zip(leaves, grads, mom, strict=True):
                shape = (n,) + (1,) * (t.dim() - 1)
                g = g + wd.reshape(shape) * t
                m.mul_(0.9).add_(g)
                t.sub_((lr * active).reshape(shape) * m)
    with torch.no_grad():
        params = WeightSpace([t.detach() for t in leaves[:L]], [t.detach() for t in leaves[L:]])
        pred = params.render(x_te, "relu")[..., 0].argmax(-1)
        acc = (pred == y_te).float().mean(1)
    targets = {
        "accuracy": acc,
        "lr": lr,
        "weight_decay": wd,
        "label_noise": label_noise,
        "steps": steps,
        "task": kind,
    }
    meta = {"kind": "mlp-zoo", "activation": "relu", "arch": arch, "points": points, "seed": seed}
    return Zoo(params, targets, meta)
