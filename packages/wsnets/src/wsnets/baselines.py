"""Non-equivariant baselines: a flat MLP on the parameter vector, and canonicalise-then-MLP.

* :class:`FlatMLP`: an MLP on ``flatten(v)``; not invariant. Permutation augmentation (a
  random ``tau`` per network per training step) is applied by the task modules when
  ``augment=True`` (see :mod:`wsnets.lightning`).
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
        in_channels: int = 1,
    ) -> None:
        super().__init__()
        check_head(head, out_dim)
        self.arch, self.head, self.out_dim = tuple(arch), head, out_dim
        n = sum(o * i + o for i, o in zip(self.arch[:-1], self.arch[1:], strict=True))
        layers: list[nn.Module] = []
        width = n * in_channels
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
        in_channels: int = 1,
    ) -> None:
        super().__init__()
        check_head(head, out_dim)
        if head != "invariant":
            raise ValueError("StatNN has only an invariant head (statistics cannot be edited)")
        self.arch, self.head, self.out_dim = tuple(arch), head, out_dim
        n_feats = len(QUANTILES) + 2
        self.out = invariant_head(n_feats * 2 * (len(self.arch) - 1) * in_channels, hidden, out_dim)

    def forward(self, v: WeightSpace):
        return self.out(block_statistics(self._check(v)))


def learnability(zoo, seed: int = 0) -> dict[str, float]:
    """Is the label learnable from the weights? Linear probes on a seeded 70/30 split.

    Test accuracy of scikit-learn ``LogisticRegression`` (C = 0.5, standardised features) on
    :func:`block_statistics` (``"statnn"``) and on the raw flattened parameters (``"flat"``) of
    a digits zoo (its ``label`` target).
    """
    import numpy as np
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    y = zoo.targets["label"].numpy()
    perm = np.random.default_rng(seed).permutation(len(y))
    te, tr = perm[: int(0.3 * len(y))], perm[int(0.3 * len(y)) :]
    out = {}
    for key, X in (
        ("statnn", block_statistics(zoo.params).numpy()),
        ("flat", zoo.params.flatten().numpy()),
    ):
        clf = make_pipeline(StandardScaler(), LogisticRegression(max_iter=3000, C=0.5))
        out[key] = float(clf.fit(X[tr], y[tr]).score(X[te], y[te]))
    return out


def learnability_table(zoos: dict, seed: int = 0):
    """:func:`learnability` of each ``{initialisation name: digits zoo}``, against chance 0.1."""
    from icml26_shared.results import Table

    n = len(next(iter(zoos.values())))
    table = Table(
        "Is the digit class learnable from the weights? (logistic regression, same digits)",
        ["zoo initialisation", "StatNN features + logistic regression acc",
         "flat weights + logistic regression acc", "chance"],
        notes=(
            f"{n} digit SIRENs, seeded 70/30 split, scikit-learn LogisticRegression "
            "(C=0.5) on standardised features. 'shared' = every INR fitted from one "
            "initialisation, then a random hidden-neuron permutation per INR (the function is "
            "unchanged, the G_A symmetry of the data is kept)."
        ),
    )  # fmt: skip
    for key, zoo in zoos.items():
        acc = learnability(zoo, seed)
        table.add_row(**{"zoo initialisation": key,
                         "StatNN features + logistic regression acc": acc["statnn"],
                         "flat weights + logistic regression acc": acc["flat"],
                         "chance": 0.1})  # fmt: skip
    return table
