"""Adaptive blend of the standard and the drift-corrected (Qronos-style) WaterSIC target.

Paper: Lifar, Savkin, Ordentlich, Polyanskiy, "WaterSIC", ICML 2026 (arXiv:2603.04956); the
authors' paper-reproduction commands (``--qronos_adapt``) quantize the q/k/v projections of each
block with the moments

    Sigma_xhat(eps)   = (1 - eps) Sigma_xhat   + eps Sigma_x
    Sigma_x,xhat(eps) = (1 - eps) Sigma_x,xhat + eps Sigma_x

(``eps = 0``: the drift-corrected target that minimises E||W x - What xhat||^2, ``eps = 1``: the
standard target W L of the full-precision input) and choose ``eps`` in [0, 1] by a
golden-section search that minimises the relative MSE of the *next* layer's input (the
attention output entering o_proj) against the full-precision model.

* :func:`blend_moments` -- the moments at ``eps``;
* :func:`golden_section` -- the search: f(0), f(1), then ``steps`` golden-section steps on
  [0, 1] and the midpoint of the last bracket; the best of the three candidates is returned;
* :func:`relative_mse` -- sum ||a - ahat||^2 / sum ||a||^2 over calibration batches.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

#: Golden-section steps on eps (``coord_adapt_q_eps_steps`` default of the authors' code).
BLEND_STEPS = 10
#: 1/phi = (sqrt 5 - 1)/2, the golden-section ratio.
INV_PHI = (math.sqrt(5.0) - 1.0) / 2.0


def blend_moments(
    sigma: torch.Tensor, sigma_hat: torch.Tensor, sigma_cross: torch.Tensor, eps: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(Sigma_xhat(eps), Sigma_x,xhat(eps))``; ``eps = 1`` gives ``(Sigma_x, Sigma_x)``.

    >>> S, Sh, Sc = torch.eye(2), 2 * torch.eye(2), 3 * torch.eye(2)
    >>> [float(m[0, 0]) for m in blend_moments(S, Sh, Sc, 0.25)]
    [1.75, 2.5]
    """
    if not 0.0 <= eps <= 1.0:
        raise ValueError(f"blend eps must be in [0, 1], got {eps}")
    return (1 - eps) * sigma_hat + eps * sigma, (1 - eps) * sigma_cross + eps * sigma


@dataclass
class BlendSearch:
    """Outcome of :func:`golden_section`: the chosen ``eps``, its value and every evaluation."""

    eps: float
    value: float
    evaluations: list[tuple[float, float]]


def golden_section(f: Callable[[float], float], steps: int = BLEND_STEPS) -> BlendSearch:
    """Minimise ``f`` on [0, 1]: the ends, ``steps`` golden-section steps, the last midpoint.

    ``steps`` = 0 compares only the two ends. Returns the best of f(0), f(1) and the midpoint.

    >>> r = golden_section(lambda e: (e - 0.3) ** 2, steps=20)
    >>> abs(r.eps - 0.3) < 1e-3
    True
    """
    evals: list[tuple[float, float]] = []

    def g(e: float) -> float:
        v = float(f(e))
        evals.append((e, v))
        return v

    cands = [(0.0, g(0.0)), (1.0, g(1.0))]
    if steps > 0:
        lo, hi = 0.0, 1.0
        m1, m2 = hi - INV_PHI * (hi - lo), lo + INV_PHI * (hi - lo)
        f1, f2 = g(m1), g(m2)
        for _ in range(steps - 1):
            if f1 <= f2:
                hi, m2, f2 = m2, m1, f1
                m1 = hi - INV_PHI * (hi - lo)
                f1 = g(m1)
            else:
                lo, m1, f1 = m1, m2, f2
                m2 = lo + INV_PHI * (hi - lo)
                f2 = g(m2)
        mid = 0.5 * (lo + hi)
        cands.append((mid, g(mid)))
    eps, value = min(cands, key=lambda c: c[1])
    return BlendSearch(eps, value, evals)


def relative_mse(reference: Sequence[torch.Tensor], estimate: Sequence[torch.Tensor]) -> float:
    """``sum ||a - ahat||^2 / sum ||a||^2`` over paired batches (float64).

    >>> relative_mse([torch.ones(2, 2)], [torch.zeros(2, 2)])
    1.0
    """
    num = sum(
        float((a.double() - b.double()).pow(2).sum())
        for a, b in zip(reference, estimate, strict=True)
    )
    den = sum(float(a.double().pow(2).sum()) for a in reference)
    return num / den if den > 0 else float("nan")
