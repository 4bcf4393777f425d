"""Anchor: the linear stationary-diffusion model fitted by the kernel deviation from stationarity.

Reference: Lorch, Krause & Schölkopf, "Causal Modeling with Stationary Diffusions",
AISTATS 2024 (arXiv:2310.17405), whose PyPI package ``stadion`` is the anchor the issue
names. ``stadion`` 1.0.2 requires TensorFlow and ``tensorflow_datasets`` and imports
``jax.tree_map``, which current JAX no longer has, so it cannot be locked into this
workspace; this module is a PyTorch re-implementation of its linear SDE estimator, written
from the paper's definitions and the package's documented defaults.

Model (the paper's linear SDE with shift-scale interventions):
``dx = (A x + b + s_e) dt + diag(c * r_e) dW`` where ``A`` has its diagonal fixed to -1
(the speed-scaling gauge), ``s_e`` and ``log r_e`` are per-environment parameters on the
intervened variables only (zero elsewhere).

- :func:`kds_pair_term`: ``L_y L_x k(x, y)`` for the RBF kernel and a linear drift with
  constant diagonal diffusion, in closed form (``L`` is the SDE's generator,
  ``L g = f . grad g + 1/2 tr(S hess g)``); the KDS is the expectation of this term over
  independent pairs from the data (paper, Eq. 6 and Prop. 3)
- :func:`kds_loss`: its linear-time estimator (consecutive disjoint pairs) or the
  U-statistic over all pairs of a batch
- :func:`fit_stationary_diffusion`: Adam on minibatches from one environment at a time,
  with the group-lasso sparsity penalty on incoming and outgoing drift weights

Defaults follow the package's documented ``fit`` defaults: bandwidth 5, linear estimator,
learning rate 3e-3, 10,000 steps, batch size 128, sparsity weight 1e-3.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import torch

from ou_ident.baselines import pseudo_samples
from ou_ident.moment_equations import EnvironmentMoments
from ou_ident.ou_process import OUParams

__all__ = ["StationaryDiffusionFit", "fit_stationary_diffusion", "kds_loss", "kds_pair_term"]


def kds_pair_term(
    x: torch.Tensor,
    y: torch.Tensor,
    A: torch.Tensor,
    b: torch.Tensor,
    s: torch.Tensor,
    bandwidth: float,
) -> torch.Tensor:
    """``L_y L_x k(x_m, y_m)`` for rows ``m``: ``x, y`` ``(m, d)``; ``A`` ``(d, d)``; ``b, s`` ``(d,)``.

    ``k(x, y) = exp(-|x - y|^2 / (2 h^2))``, drift ``f(z) = A z + b``, diffusion
    ``S = diag(s)`` (``s`` = squared noise scales). Returns ``(m,)``.
    """
    c = 1.0 / bandwidth**2
    r = x - y  # (m, d)
    u = x @ A.T + b  # f(x), (m, d)
    v = y @ A.T + b  # f(y)
    k = torch.exp(-0.5 * c * (r * r).sum(1))  # (m,)
    # L_x k = k * phi
    phi = -c * (u * r).sum(1) + 0.5 * (s * (c * c * r * r - c)).sum(1)
    # d/dy_j (L_x k) = k * h_j
    h = c * r * phi[:, None] + c * u - c * c * s * r
    second = c * r * h - c * phi[:, None] + c * c * r * u - c**3 * s * r * r + c * c * s
    return k * ((v * h).sum(1) + 0.5 * (s * second).sum(1))


def kds_loss(X, A, b, s, bandwidth: float = 5.0, estimator: str = "linear") -> torch.Tensor:
    """KDS estimate on one environment's rows ``X`` ``(n, d)``.

    ``estimator="linear"`` averages the term over disjoint consecutive pairs (linear cost);
    ``"u-statistic"`` over all ordered pairs ``i != j``.
    """
    n, d = X.shape
    if estimator == "linear":
        m = n // 2
        return kds_pair_term(X[:m], X[m : 2 * m], A, b, s, bandwidth).mean()
    if estimator == "u-statistic":
        i, j = torch.triu_indices(n, n, offset=1)
        return kds_pair_term(X[i], X[j], A, b, s, bandwidth).mean()  # symmetric term
    raise ValueError(f"unknown KDS estimator {estimator!r}; choose 'linear' or 'u-statistic'")


@dataclass
class StationaryDiffusionFit:
    """Fitted linear stationary-diffusion model.

    ``params`` holds the observational SDE as :class:`OUParams` (``D = c^2``), ``shifts``
    and ``log_scales`` the per-environment intervention parameters ``(E, p)``.
    """

    params: OUParams
    shifts: np.ndarray
    log_scales: np.ndarray
    losses: list[float] = field(default_factory=list)
    method: str = "stationary diffusion (KDS)"

    @property
    def A(self) -> np.ndarray:
        return self.params.A


def _sparsity(A: torch.Tensor) -> torch.Tensor:
    """Group lasso on incoming (per entry) and outgoing (per column) off-diagonal weights."""
    d = A.shape[0]
    off = A * (1 - torch.eye(d, dtype=A.dtype))
    incoming = off.abs().sum(1).mean()
    outgoing = off.norm(dim=0).sum() / d
    return incoming + outgoing


def fit_stationary_diffusion(
    data: Sequence[EnvironmentMoments],
    bandwidth: float = 5.0,
    estimator: str = "linear",
    learning_rate: float = 3e-3,
    steps: int = 10_000,
    batch_size: int = 128,
    reg: float = 1e-3,
    n_max: int = 10_000,
    seed: int = 0,
) -> StationaryDiffusionFit:
    """Fit the linear SDE to every environment by minimising the KDS with Adam.

    Raw samples are :func:`~ou_ident.baselines.pseudo_samples` with each environment's exact
    moments (``min(n_e, n_max)`` rows), as for the GIES anchor. Each step draws one
    environment and ``batch_size`` of its rows. Intervention shifts on the targets are
    warm-started with the mean difference to the observational environment.

    Examples
    --------
    >>> from ou_ident.synthetic import make_problem
    >>> prob = make_problem(3, "shift", seed=0)
    >>> fit = fit_stationary_diffusion(prob.moments(None), steps=200, n_max=500)
    >>> fit.A.shape, bool(np.allclose(np.diag(fit.A), -1.0))
    ((3, 3), True)
    """
    if steps < 1 or batch_size < 2:
        raise ValueError(f"need steps >= 1 and batch_size >= 2, got {steps} and {batch_size}")
    if bandwidth <= 0:
        raise ValueError(f"bandwidth must be positive, got {bandwidth}")
    p = data[0].p
    X = [
        torch.as_tensor(
            pseudo_samples(d.mean, d.cov, int(min(d.n or n_max, n_max)), seed + k),
            dtype=torch.float64,
        )
        for k, d in enumerate(data)
    ]
    targets = torch.zeros(len(data), p, dtype=torch.float64)
    for e, d in enumerate(data):
        targets[e, list(d.environment.targets)] = 1.0
    obs = next((e for e, d in enumerate(data) if d.environment.is_observational), 0)

    gen = torch.Generator().manual_seed(seed)
    off = 1 - torch.eye(p, dtype=torch.float64)
    W = (1e-6 * torch.randn(p, p, generator=gen, dtype=torch.float64)).requires_grad_(True)
    b = (1e-6 * torch.randn(p, generator=gen, dtype=torch.float64)).requires_grad_(True)
    log_c = torch.full((p,), -2.0, dtype=torch.float64, requires_grad=True)
    shift0 = torch.stack([(x.mean(0) - X[obs].mean(0)) for x in X]) * targets
    shift = shift0.clone().requires_grad_(True)
    log_r = torch.zeros(len(data), p, dtype=torch.float64, requires_grad=True)
    opt = torch.optim.Adam([W, b, log_c, shift, log_r], lr=learning_rate)

    def drift() -> torch.Tensor:
        return W * off - torch.eye(p, dtype=torch.float64)  # diagonal fixed to -1

    losses = []
    for _ in range(steps):
        e = int(torch.randint(len(X), (1,), generator=gen))
        rows = torch.randint(len(X[e]), (batch_size,), generator=gen)
        A = drift()
        s = torch.exp(2 * (log_c + log_r[e] * targets[e]))
        loss = kds_loss(X[e][rows], A, b + shift[e] * targets[e], s, bandwidth, estimator)
        objective = loss + reg * _sparsity(A) / p
        opt.zero_grad()
        objective.backward()
        opt.step()
        losses.append(float(loss.detach()))
    with torch.no_grad():
        A = drift().numpy()
        D = torch.exp(2 * log_c).numpy()
        params = OUParams(A, b.detach().numpy().copy(), D)
        sh = (shift * targets).numpy()
        lr_ = (log_r * targets).numpy()
    return StationaryDiffusionFit(params, sh, lr_, losses)
