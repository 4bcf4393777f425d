"""Plasticity baselines run in the same harness as SIGReg.

1. ReDo (Sokar et al., 2023): units whose score ``s_i <= tau`` are recycled: incoming
   weights re-initialised, outgoing weights zeroed -> :func:`redo_reset`
2. Shrink & Perturb (Ash & Adams, 2020): ``theta <- alpha theta + beta theta_fresh``
   -> :func:`shrink_perturb`
3. L2-init (Kumar et al., 2023): ``L += c ||theta - theta_0||^2`` -> :class:`L2Init`
4. LayerNorm: the ``layer_norm`` switch of :class:`sigreg.encoder.Trunk`.
"""

from __future__ import annotations

import copy

import torch
from torch import nn


@torch.no_grad()
def redo_reset(
    linears: list[nn.Linear],
    activations: list[torch.Tensor],
    next_layer: nn.Linear,
    tau: float = 0.025,
) -> int:
    """Recycle dormant units of consecutive Linear layers; return how many were reset.

    ``activations[k]`` (N, H_k) are the post-activation outputs of ``linears[k]``;
    the outgoing weights of unit ``i`` of layer ``k`` live in ``linears[k + 1]`` (or in
    ``next_layer`` after the last one).

    >>> a, b = nn.Linear(2, 3), nn.Linear(3, 1)
    >>> h = torch.ones(4, 3); h[:, 0] = 0
    >>> redo_reset([a], [h], b), float(b.weight[0, 0])
    (1, 0.0)
    """
    if tau < 0:
        raise ValueError(f"ReDo threshold tau must be >= 0, got {tau}")
    total = 0
    outs = [*linears[1:], next_layer]
    for lin, act, nxt in zip(linears, activations, outs, strict=True):
        mean_abs = act.abs().mean(0)
        avg = mean_abs.mean()
        score = mean_abs / avg if float(avg) > 0 else torch.zeros_like(mean_abs)
        dead = score <= tau
        n = int(dead.sum())
        if n == 0:
            continue
        fresh = nn.Linear(lin.in_features, lin.out_features).to(lin.weight.device)
        lin.weight[dead] = fresh.weight[dead].to(lin.weight.dtype)
        lin.bias[dead] = fresh.bias[dead].to(lin.bias.dtype)
        nxt.weight[:, dead] = 0.0
        total += n
    return total


@torch.no_grad()
def shrink_perturb(model: nn.Module, shrink: float = 0.4, perturb: float = 0.1) -> None:
    """``theta <- shrink * theta + perturb * theta_fresh`` (fresh = re-initialised copy).

    >>> m = nn.Linear(3, 3); w = m.weight.clone(); shrink_perturb(m, 0.5, 0.0)
    >>> bool(torch.allclose(m.weight, 0.5 * w))
    True
    """
    if not 0 <= shrink <= 1 or perturb < 0:
        raise ValueError("shrink must be in [0, 1] and perturb >= 0")
    fresh = copy.deepcopy(model)
    for mod in fresh.modules():
        if hasattr(mod, "reset_parameters") and mod is not fresh:
            mod.reset_parameters()
    for p, q in zip(model.parameters(), fresh.parameters(), strict=True):
        p.mul_(shrink).add_(perturb * q)


class L2Init(nn.Module):
    """Penalty ``coef * sum ||theta - theta_0||^2`` towards the initial parameters.

    Examples:
        >>> m = nn.Linear(2, 2); pen = L2Init(m, coef=1.0)
        >>> float(pen(m))
        0.0
    """

    def __init__(self, model: nn.Module, coef: float = 1e-3) -> None:
        super().__init__()
        if coef < 0:
            raise ValueError(f"L2-init coefficient must be >= 0, got {coef}")
        self.coef = float(coef)
        self.n_params = 0
        for i, p in enumerate(model.parameters()):
            self.register_buffer(f"init_{i}", p.detach().clone())
            self.n_params = i + 1

    def forward(self, model: nn.Module) -> torch.Tensor:
        params = list(model.parameters())
        if len(params) != self.n_params:
            raise ValueError("L2Init: the model's parameters changed since construction")
        inits = [getattr(self, f"init_{i}") for i in range(self.n_params)]
        total = sum(((p - p0) ** 2).sum() for p, p0 in zip(params, inits, strict=True))
        return self.coef * total
