"""Non-equivariant baselines: a flat MLP on the parameter vector, and canonicalise-then-MLP.

* :class:`FlatMLP`: an MLP on ``flatten(v)``; not invariant. Permutation augmentation (a
  random ``tau`` per network per training step) is applied by the task modules when
  ``augment=True`` (see :mod:`wsnets.tasks`).
* :class:`CanonicalMLP`: sorts each hidden layer by bias first (the continuous
  canonicalisation under general position, the construction behind the paper's
  universality proofs), then a flat MLP. Exactly invariant when biases are distinct; the
  equivariant head predicts in the canonical order and maps back with ``tau^{-1}``.
* :class:`StatNN` (Unterthiner et al., 2020): per-block statistics of the parameters (mean,
  standard deviation, quantiles 0/25/50/75/100%) then an MLP. Invariant to *every*
  permutation of a block's entries, so a strong cheap anchor and a learnability check for a
  zoo; it has no equivariant head.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from wsnets.dws import WeightSpaceNet, check_head, invariant_head
from wsnets.weight_space import WeightSpace


class FlatMLP(WeightSpaceNet):
    """MLP on the flattened parameters.

    Parameters
    ----------
    arch:
        Architecture of the input MLPs.
    hidden:
        Width of the MLP.
    depth:
        Number of hidden layers.
    head, out_dim:
        ``"invariant"`` -> ``(B, out_dim)``; ``"equivariant"`` -> a weight space with
        ``out_dim`` channels (a free linear read-out, not equivariant).

    Examples
    --------
    >>> net = FlatMLP([2, 4, 4, 1], hidden=8, head="invariant", out_dim=3)
    >>> net(WeightSpace.random([2, 4, 4, 1], batch=2)).shape
    torch.Size([2, 3])
    """

    def __init__(
        self,
        arch: Sequence[int],
        hidden: int = 64,
        depth: int = 2,
        head: str = "invariant",
        out_dim: int = 1,
    ) -> None:
        super().__init__()
        check_head(head, out_dim)
        self.arch, self.head, self.out_dim = tuple(arch), head, out_dim
        n = sum(o * i + o for i, o in zip(self.arch[:-1], self.arch[1:], strict=True))
        layers: list[nn.Module] = []
        width = n
        for _ in range(depth):
            layers += [nn.Linear(width, hidden), nn.ReLU()]
            width = hidden
        final = n * out_dim if head == "equivariant" else out_dim
        layers.append(nn.Linear(width, final))
        self.net = nn.Sequential(*layers)

    def forward(self, v: WeightSpace):
        out = self.net(self._check(v).flatten())
        if self.head == "equivariant":
            flat = out.reshape(v.batch, -1, self.out_dim)
            return _unflatten_channels(flat, self.arch)
        return out


def _unflatten_channels(flat: torch.Tensor, arch: Sequence[int]) -> WeightSpace:
    """``(B, n, C)`` (parameter order of :meth:`WeightSpace.flatten`, per channel) -> space."""
    B, _, C = flat.shape
    ws, bs, pos = [], [], 0
    for i, o in zip(arch[:-1], arch[1:], strict=True):
        ws.append(flat[:, pos : pos + o * i].reshape(B, o, i, C))
        pos += o * i
        bs.append(flat[:, pos : pos + o].reshape(B, o, C))
        pos += o
    return WeightSpace(ws, bs)


class CanonicalMLP(FlatMLP):
    """Sort hidden neurons by bias, then :class:`FlatMLP` (invariant under general position).

    Examples
    --------
    >>> torch.manual_seed(0) and None
    >>> net = CanonicalMLP([2, 4, 4, 1], hidden=8, out_dim=3)
    >>> v = WeightSpace.random([2, 4, 4, 1], batch=2)
    >>> tau = v.random_permutation(torch.Generator().manual_seed(0))
    >>> bool(torch.allclose(net(v), net(v.permute(tau)), atol=1e-6))
    True
    """

    def forward(self, v: WeightSpace):
        v = self._check(v)
        tau = v.canonical_permutation()
        out = super().forward(v.permute(tau))
        if self.head == "equivariant":
            return out.permute([torch.argsort(t, dim=1) for t in tau])
        return out


QUANTILES = (0.0, 0.25, 0.5, 0.75, 1.0)


def block_statistics(v: WeightSpace) -> torch.Tensor:
    """``(B, 7 * 2L * C)``: mean, std and the :data:`QUANTILES` of every block and channel."""
    feats = []
    q = torch.tensor(QUANTILES, dtype=v.weights[0].dtype, device=v.weights[0].device)
    for w, b in zip(v.weights, v.biases, strict=True):
        for t in (w, b):
            x = t.reshape(t.shape[0], -1, t.shape[-1])
            feats += [x.mean(1), x.std(1, correction=0)]
            feats += list(torch.quantile(x, q, dim=1).unbind(0))
    return torch.cat(feats, dim=1)


class StatNN(WeightSpaceNet):
    """Per-block weight statistics + MLP (invariant head only).

    Examples
    --------
    >>> torch.manual_seed(0) and None
    >>> net = StatNN([2, 4, 4, 1], hidden=8, out_dim=3).eval()
    >>> v = WeightSpace.random([2, 4, 4, 1], batch=2)
    >>> tau = v.random_permutation(torch.Generator().manual_seed(0))
    >>> bool(torch.allclose(net(v), net(v.permute(tau)), atol=1e-6))
    True
    """

    def __init__(
        self,
        arch: Sequence[int],
        hidden: int = 64,
        depth: int = 2,
        head: str = "invariant",
        out_dim: int = 1,
    ) -> None:
        super().__init__()
        check_head(head, out_dim)
        if head != "invariant":
            raise ValueError("StatNN has only an invariant head (statistics cannot be edited)")
        self.arch, self.head, self.out_dim = tuple(arch), head, out_dim
        n_feats = len(QUANTILES) + 2
        self.out = invariant_head(n_feats * 2 * (len(self.arch) - 1), hidden, out_dim)

    def forward(self, v: WeightSpace):
        return self.out(block_statistics(self._check(v)))
