"""Representation diagnostics of the paper as torchmetrics metrics.

1. dormant-neuron ratio (Sokar et al., 2023): unit score
   ``s_i = mean|h_i| / mean_j mean|h_j|``; a unit is dormant when ``s_i <= tau``
   (``tau = 0``: exactly dead, the released code; ``tau = 0.025``: Sokar's)
   -> :func:`dormant_ratio`, :class:`DormantNeuronRatio`
2. effective rank ``srank_delta`` (Kumar et al., 2021): the smallest ``k`` with
   ``sum_{i<=k} sigma_i / sum_i sigma_i >= 1 - delta`` -> :func:`srank`, :class:`SRank`
3. entropy effective rank (Roy & Vetterli, 2007): ``exp(H(sigma / sum sigma))``
   -> :func:`entropy_rank`, :class:`EffectiveRankEntropy`
4. feature norm ``mean_i ||phi_i||`` -> :class:`FeatureNorm`
5. isotropy gap ``|| Cov / (tr Cov / D) - I ||_F`` (0 for isotropic features)
   -> :func:`isotropy_gap`, :class:`IsotropyGap`; the share of ``gap^2`` carried by the top
   eigenvalue (a spike) -> :func:`isotropy_gap_top_share`
6. the SIGReg statistic with fixed seeded slices -> :class:`EPStatistic`
"""

from __future__ import annotations

import torch
from torch import nn
from torchmetrics import Metric


def _check_2d(x: torch.Tensor, name: str = "activations") -> torch.Tensor:
    if not isinstance(x, torch.Tensor) or x.ndim != 2:
        shape = tuple(x.shape) if isinstance(x, torch.Tensor) else type(x).__name__
        raise ValueError(f"{name} must be a (N, H) tensor, got {shape}")
    if not bool(torch.isfinite(x).all()):
        raise ValueError(f"{name} contain NaN or Inf values")
    return x.detach().double()


def _check_tau(tau: float) -> float:
    if not tau >= 0:
        raise ValueError(f"dormancy threshold tau must be >= 0, got {tau}")
    return float(tau)


def _check_delta(delta: float) -> float:
    if not 0 < delta < 1:
        raise ValueError(f"srank delta must be in (0, 1), got {delta}")
    return float(delta)


def dormant_ratio(h: torch.Tensor, tau: float = 0.0) -> float:
    """Fraction of units of ``h`` (N, H) whose normalised mean |activation| is ``<= tau``.

    >>> h = torch.ones(8, 4); h[:, :1] = 0
    >>> dormant_ratio(h)
    0.25
    """
    h = _check_2d(h)
    return _dormant_from_means(h.abs().mean(0), _check_tau(tau))


def _dormant_from_means(mean_abs: torch.Tensor, tau: float) -> float:
    avg = mean_abs.mean()
    if float(avg) == 0.0:
        return 1.0  # the whole layer is dead
    score = mean_abs / avg
    return float((score <= tau).double().mean())


def singular_values(x: torch.Tensor) -> torch.Tensor:
    """Singular values of a feature matrix (N, D), float64, descending."""
    return torch.linalg.svdvals(_check_2d(x, "features"))


def srank(x: torch.Tensor, delta: float = 0.01) -> int:
    """Kumar et al.'s effective rank of a feature matrix.

    >>> srank(torch.diag(torch.tensor([1.0, 1.0, 1.0, 0.0])))
    3
    """
    delta = _check_delta(delta)
    s = singular_values(x)
    total = float(s.sum())
    if total == 0.0:
        return 0
    cum = torch.cumsum(s, 0) / total
    return int(torch.searchsorted(cum, torch.tensor(1 - delta, dtype=cum.dtype) - 1e-12)) + 1


def entropy_rank(x: torch.Tensor) -> float:
    """``exp`` of the entropy of the normalised singular values (1 to D)."""
    s = singular_values(x)
    total = float(s.sum())
    if total == 0.0:
        return 0.0
    p = s / total
    p = p[p > 0]
    return float(torch.exp(-(p * p.log()).sum()))


def isotropy_gap(x: torch.Tensor) -> float:
    """``|| Cov / (tr Cov / D) - I ||_F``: 0 for isotropic features, large when collapsed."""
    x = _check_2d(x, "features")
    xc = x - x.mean(0)
    cov = xc.T @ xc / max(x.shape[0] - 1, 1)
    return _gap_from_cov(cov)


def isotropy_gap_top_share(x: torch.Tensor) -> float:
    """Share of ``isotropy_gap(x)**2`` carried by the largest covariance eigenvalue.

    ``gap^2 = sum_i (lambda_i / mean(lambda) - 1)^2`` over the eigenvalues of ``Cov``, so one
    dominant direction (a spike) can make the gap large while every other direction is
    isotropic; this is the term ``(lambda_1 / mean(lambda) - 1)^2 / gap^2``. A sliced
    statistic such as SIGReg sees such a spike only through ``(a . v)^2 ~ 1 / D`` of each
    random slice ``a``, so it can fall while the gap rises.

    >>> x = torch.randn(4000, 32, generator=torch.Generator().manual_seed(0))
    >>> x[:, 0] *= 20  # one spiked direction
    >>> isotropy_gap_top_share(x) > 0.95
    True
    """
    x = _check_2d(x, "features")
    xc = (x - x.mean(0)).double()
    ev = torch.linalg.eigvalsh(xc.T @ xc / max(x.shape[0] - 1, 1))
    mean = float(ev.mean())
    if mean <= 0.0:
        return 0.0
    terms = (ev / mean - 1.0) ** 2
    total = float(terms.sum())
    return float(terms[-1] / total) if total > 0 else 0.0


def _gap_from_cov(cov: torch.Tensor) -> float:
    d = cov.shape[0]
    tr = float(torch.trace(cov))
    if tr == 0.0:
        return float(torch.linalg.norm(torch.eye(d, dtype=cov.dtype)))
    return float(torch.linalg.norm(cov / (tr / d) - torch.eye(d, dtype=cov.dtype)))


class DormantNeuronRatio(Metric):
    """Dormant-unit fraction of a layer's activations, accumulated over batches.

    Args:
        tau: Threshold on the normalised score (0: dead units; 0.025: Sokar et al.).

    Examples:
        >>> m = DormantNeuronRatio(tau=0.0)
        >>> h = torch.rand(16, 10) + 0.1; h[:, :3] = 0
        >>> m.update(h); float(m.compute())
        0.3
    """

    full_state_update = False

    def __init__(self, tau: float = 0.0, **kwargs) -> None:
        super().__init__(**kwargs)
        self.tau = _check_tau(tau)
        self.add_state("abs_sum", default=torch.zeros(0, dtype=torch.float64), dist_reduce_fx=None)
        self.add_state("count", default=torch.zeros((), dtype=torch.float64), dist_reduce_fx="sum")

    def update(self, h: torch.Tensor) -> None:
        h = _check_2d(h)
        s = h.abs().sum(0)
        if self.abs_sum.numel() == 0:
            self.abs_sum = s
        elif self.abs_sum.shape != s.shape:
            raise ValueError(f"layer width changed from {self.abs_sum.numel()} to {s.numel()}")
        else:
            self.abs_sum = self.abs_sum + s
        self.count = self.count + h.shape[0]

    def compute(self) -> torch.Tensor:
        abs_sum = self.abs_sum
        if abs_sum.ndim == 2:  # gathered across ranks
            abs_sum = abs_sum.sum(0)
        if abs_sum.numel() == 0:
            raise ValueError("DormantNeuronRatio.compute() called before update()")
        return torch.tensor(
            _dormant_from_means(abs_sum / self.count, self.tau), dtype=torch.float64
        )


class _FeatureBank(Metric):
    full_state_update = False

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.add_state("features", default=[], dist_reduce_fx="cat")

    def update(self, x: torch.Tensor) -> None:
        self.features.append(_check_2d(x, "features"))

    def _stacked(self) -> torch.Tensor:
        feats = self.features
        if isinstance(feats, list):
            if not feats:
                raise ValueError(f"{type(self).__name__}.compute() called before update()")
            feats = torch.cat(feats)
        return feats


class SRank(_FeatureBank):
    """``srank_delta`` of the accumulated feature matrix (Kumar et al., 2021).

    Examples:
        >>> m = SRank(delta=0.01)
        >>> m.update(torch.eye(6)[:, :4] @ torch.diag(torch.tensor([3.0, 2.0, 1.0, 0.0])))
        >>> int(m.compute())
        3
    """

    def __init__(self, delta: float = 0.01, **kwargs) -> None:
        super().__init__(**kwargs)
        self.delta = _check_delta(delta)

    def compute(self) -> torch.Tensor:
        return torch.tensor(srank(self._stacked(), self.delta))


class EffectiveRankEntropy(_FeatureBank):
    """Entropy effective rank ``exp(H(p))`` of the accumulated features.

    Examples:
        >>> m = EffectiveRankEntropy(); m.update(torch.eye(5)); round(float(m.compute()), 6)
        5.0
    """

    def compute(self) -> torch.Tensor:
        return torch.tensor(entropy_rank(self._stacked()))


class IsotropyGap(_FeatureBank):
    """``||Cov/(tr Cov/D) - I||_F`` of the accumulated features.

    Examples:
        >>> m = IsotropyGap(); m.update(torch.randn(4000, 4, generator=torch.Generator().manual_seed(0)))
        >>> float(m.compute()) < 0.2
        True
    """

    def compute(self) -> torch.Tensor:
        return torch.tensor(isotropy_gap(self._stacked()))


class EPStatistic(_FeatureBank):
    """SIGReg statistic of the accumulated features with fixed, seeded slices.

    Examples:
        >>> m = EPStatistic(seed=0); m.update(torch.zeros(64, 8)); float(m.compute()) > 0.1
        True
    """

    def __init__(self, preset: str = "isogaussian-drl", seed: int = 0, **kwargs) -> None:
        super().__init__(**kwargs)
        from sigreg.sigreg_loss import _check_preset

        _check_preset(preset)
        self.preset = preset
        self.seed = int(seed)

    def compute(self) -> torch.Tensor:
        from sigreg.sigreg_loss import sigreg

        x = self._stacked()
        g = torch.Generator().manual_seed(self.seed)
        return sigreg(x, preset=self.preset, generator=g).detach()


class FeatureNorm(Metric):
    """Mean Euclidean norm of the feature vectors.

    Examples:
        >>> m = FeatureNorm(); m.update(torch.full((4, 4), 0.5)); float(m.compute())
        1.0
    """

    full_state_update = False

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.add_state("total", default=torch.zeros((), dtype=torch.float64), dist_reduce_fx="sum")
        self.add_state("count", default=torch.zeros((), dtype=torch.float64), dist_reduce_fx="sum")

    def update(self, x: torch.Tensor) -> None:
        x = _check_2d(x, "features")
        self.total = self.total + x.norm(dim=1).sum()
        self.count = self.count + x.shape[0]

    def compute(self) -> torch.Tensor:
        return self.total / self.count


class ActivationRecorder:
    """Record the outputs of chosen sub-modules with forward hooks (for dormancy).

    Examples:
        >>> net = nn.Sequential(nn.Linear(3, 4), nn.ReLU())
        >>> with ActivationRecorder(net, [nn.ReLU]) as rec:
        ...     _ = net(torch.randn(5, 3))
        >>> [tuple(a.shape) for a in rec.outputs.values()]
        [(5, 4)]
    """

    def __init__(self, model: nn.Module, types: tuple | list = (nn.ReLU,)) -> None:
        self.model = model
        self.types = tuple(types)
        self.outputs: dict[str, torch.Tensor] = {}
        self._handles: list = []

    def __enter__(self) -> ActivationRecorder:
        for name, mod in self.model.named_modules():
            if isinstance(mod, self.types):
                self._handles.append(mod.register_forward_hook(self._hook(name)))
        return self

    def _hook(self, name: str):
        def hook(_mod, _inp, out):
            self.outputs[name] = out.detach().reshape(out.shape[0], -1)

        return hook

    def __exit__(self, *exc) -> None:
        for h in self._handles:
            h.remove()
        self._handles.clear()


def representation_report(
    features: torch.Tensor, activations: dict[str, torch.Tensor], seed: int = 0
) -> dict[str, float]:
    """All diagnostics of one batch: dormant % (tau 0 and 0.025), srank, rank, norm, gap, EP."""
    from sigreg.sigreg_loss import sigreg

    acts = list(activations.values())
    dormant0 = sum(dormant_ratio(a, 0.0) * a.shape[1] for a in acts) / sum(a.shape[1] for a in acts)
    dormant = sum(dormant_ratio(a, 0.025) * a.shape[1] for a in acts) / sum(
        a.shape[1] for a in acts
    )
    g = torch.Generator().manual_seed(seed)
    return {
        "dormant_tau0": dormant0,
        "dormant_tau0.025": dormant,
        "srank": float(srank(features)),
        "entropy_rank": entropy_rank(features),
        "feature_norm": float(features.double().norm(dim=1).mean()),
        "isotropy_gap": isotropy_gap(features),
        "gap_top_share": isotropy_gap_top_share(features),
        "sigreg_stat": float(sigreg(features.detach().float(), generator=g)),
    }
