"""Sample-complexity and error bounds.

Paper concept -> code:

1. clean compression theorem (Ashtiani et al. 2018, Thm 3.5):
   ``n = O(m log(1/delta) + (tau log m + t + log(1/delta)) / eps^2)``, here with the constants of
   its proof: ``r = ceil(log_3(2/delta))`` blocks of ``m`` samples give the candidates,
   ``M = (r m)^tau 2^t``, and the minimum-distance estimate needs ``n2`` with
   ``2 sqrt(log(2 M^2/delta) / (2 n2)) <= eps``: :func:`clean_sample_complexity`;
2. the noisy candidate count adds perturbation-quantisation,
   ``log M = tau log n1 + d tau log(2r/Delta + 1) + t``: :func:`noisy_sample_complexity`;
3. the noisy ell_2 bound (Plancherel with a band limit ``W``)
   ``||f_hat - f||_2^2 <= gamma(W)^-2 ||(f_hat - f) * g||_2^2 + (2 pi)^-d T_F(W)`` with
   ``||p - q||_2^2 <= 2 ||g||_inf TV(p, q)`` for ``g``-convolved densities, optimised over ``W``:
   :func:`noisy_l2_bound`;
4. ell_2 -> TV on a box ``B``: ``TV <= (sqrt(vol B) ||f_hat - f||_2 + mass outside B) / 2``:
   :func:`tv_from_l2`.

:func:`bounds_table` tabulates the compression sizes and both sample complexities for the
families of the experiments; :func:`noisy_compress.guarantee.guarantee_table` measures the
learner's own oracle inequality.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .families import CompressionSize, Family
from .noise import NoiseModel


def _check_unit(value: float, name: str) -> float:
    value = float(value)
    if not 0 < value < 1:
        raise ValueError(f"{name} must be in (0, 1); got {value}")
    return value


@dataclass(frozen=True)
class SampleComplexity:
    """Samples for candidates (``n1``), for selection (``n2``), their sum and ``log M``."""

    n1: int
    n2: int
    total: int
    log_candidates: float


def clean_sample_complexity(
    tau: int, t: float, m: int, eps: float, delta: float
) -> SampleComplexity:
    """Samples sufficient to learn a ``(tau, t, m)``-compressible class to TV ``eps`` (clean data).

    Examples
    --------
    >>> sc = clean_sample_complexity(2, 0.0, 36, 0.1, 0.1)
    >>> sc.n1, sc.n2
    (108, 4484)
    """
    eps, delta = _check_unit(eps, "eps"), _check_unit(delta, "delta")
    r = math.ceil(math.log(2 / delta) / math.log(3))
    n1 = r * m
    log_m = tau * math.log(n1) + t * math.log(2)
    # minimum distance: TV <= 3 OPT + 2 Delta; ask 2 Delta <= eps with K = M^2 sets, prob delta/2
    n2 = math.ceil(2 * (math.log(4 / delta) + 2 * log_m) / eps**2)
    return SampleComplexity(n1, n2, n1 + n2, log_m)


def noisy_sample_complexity(
    size: CompressionSize,
    d: int,
    eps: float,
    delta: float,
    radius: float,
    delta_q: float,
) -> SampleComplexity:
    """As :func:`clean_sample_complexity` with the perturbation-quantised candidate count.

    Examples
    --------
    >>> from noisy_compress.families import UniformBox
    >>> sc = noisy_sample_complexity(UniformBox(1).compression_size(0.1), 1, 0.1, 0.1, 1.0, 0.01)
    >>> sc.n2 > clean_sample_complexity(2, 0.0, 36, 0.1, 0.1).n2
    True
    """
    clean = clean_sample_complexity(size.tau, size.t, size.m, eps, delta)
    log_m = clean.log_candidates + d * size.tau * math.log(2 * radius / delta_q + 1)
    n2 = math.ceil(2 * (math.log(4 / delta) + 2 * log_m) / eps**2)
    return SampleComplexity(clean.n1, n2, clean.n1 + n2, log_m)


@dataclass(frozen=True)
class L2Bound:
    """The optimised noisy ell_2 bound and the band limit ``W`` that attains it."""

    l2: float
    W: float
    variance_term: float
    bias_term: float


def noisy_l2_bound(
    noise: NoiseModel,
    family: Family,
    tv_convolved: float,
    min_scale: float,
    W_grid: np.ndarray | None = None,
) -> L2Bound:
    """Bound ``||f_hat - f||_2`` from ``TV(f_hat * g, f * g) <= tv_convolved``.

    Examples
    --------
    >>> from noisy_compress.families import UniformBox
    >>> from noisy_compress.noise import GaussianNoise
    >>> b1 = noisy_l2_bound(GaussianNoise(0.1), UniformBox(1), 0.01, 0.5)
    >>> b2 = noisy_l2_bound(GaussianNoise(0.3), UniformBox(1), 0.01, 0.5)
    >>> b1.l2 < b2.l2  # more noise, weaker guarantee
    True
    """
    if tv_convolved < 0:
        raise ValueError("tv_convolved must be >= 0")
    if W_grid is None:
        W_grid = np.geomspace(0.1, 1e4, 400)
    d = family.d
    conv_l2_sq = 2.0 * noise.sup_density * tv_convolved if not noise.is_zero else math.inf
    best = None
    for W in W_grid:
        gamma = noise.gamma(float(W))
        if gamma <= 1e-150:  # phi_g vanishes (or underflows): no information there
            continue
        var = conv_l2_sq / gamma**2
        bias = (2 * math.pi) ** (-d) * family.fourier_tail(float(W), min_scale)
        total = var + bias
        if best is None or total < best[0]:
            best = (total, float(W), var, bias)
    if best is None or not math.isfinite(best[0]):
        return L2Bound(math.inf, math.nan, math.inf, math.inf)
    return L2Bound(math.sqrt(best[0]), best[1], best[2], best[3])


def tv_from_l2(l2: float, volume: float, outside_mass: float = 0.0) -> float:
    """``TV <= (sqrt(volume) * l2 + outside_mass) / 2`` (Cauchy-Schwarz on a box), capped at 1.

    Examples
    --------
    >>> tv_from_l2(0.1, 4.0)
    0.1
    """
    if l2 < 0 or volume <= 0 or outside_mass < 0:
        raise ValueError("l2 >= 0, volume > 0 and outside_mass >= 0 are required")
    return min(1.0, 0.5 * (math.sqrt(volume) * l2 + outside_mass))


BOUND_FAMILIES = (("uniform", 1, 1), ("uniform", 1, 2), ("gaussian", 1, 1), ("gaussian", 1, 2),
                  ("uniform", 2, 1), ("axis-gaussian", 2, 1), ("gaussian", 2, 1))  # fmt: skip


def bounds_table(families=BOUND_FAMILIES, eps: float = 0.1, delta: float = 0.1):
    """Compression size ``(tau, t, m)`` and the clean and noisy sample complexities per family.

    ``families``: ``(name, d, k)`` triples. The noisy bound uses the Gaussian ``sigma = 0.3``
    perturbation radius over 5000 points and the quantisation step ``Delta = 0.01``.
    """
    from icml26_shared.results import Table

    from .families import make_family
    from .noise import GaussianNoise

    table = Table(
        f"Compression sizes and sample-complexity bounds (eps = delta = {eps:g})",
        ["family", "tau", "t (bits)", "m", "clean n", "noisy n (sigma=0.3, Delta=0.01)"],
        notes="clean n: Ashtiani et al. (2018) Thm 3.5 with the constants of its proof; noisy n adds the "
        "perturbation-quantisation factor d*tau*log(2r/Delta + 1), r the sigma=0.3 radius over 5000 points.",
    )
    r = GaussianNoise(0.3).radius(5000, delta)
    for name, d, k in families:
        fam = make_family(name, d=d, k=k)
        size = fam.compression_size(eps)
        clean = clean_sample_complexity(size.tau, size.t, size.m, eps, delta)
        noisy = noisy_sample_complexity(size, d, eps, delta, r, 0.01)
        table.add_row(**{"family": repr(fam), "tau": size.tau, "t (bits)": round(size.t, 1),
                         "m": size.m, "clean n": clean.total,
                         "noisy n (sigma=0.3, Delta=0.01)": noisy.total})  # fmt: skip
    return table
