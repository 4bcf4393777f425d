"""The noisy compression learner: perturbation-quantised candidates + a tournament on ``f_hat * g``.

Algorithm (reconstruction of the paper's learner from its abstract and the research notes):

1. split the noisy sample ``y`` into ``S1`` (candidates) and ``S2`` (selection);
2. candidates ``J(perturbation-quantised tuple of S1, codes)``
   (:func:`noisy_compress.candidates.enumerate_candidates`);
3. select among the *convolved* candidates ``f_j * g`` on ``S2`` with a Scheffe tournament,
   minimum distance or knockout (:mod:`noisy_compress.tournament`); convolution contracts TV, so
   ``TV(f_hat * g, f * g) <= C OPT + C' Delta`` with ``Delta <= sqrt(log(2K/delta) / 2|S2|)``;
4. report the clean estimate ``f_hat`` and the certified bounds: the convolved-TV oracle
   inequality and, through :func:`noisy_compress.bounds.noisy_l2_bound`, an ell_2 / TV bound on
   the clean density.

With zero noise (``GaussianNoise(0)``) the radius is 0, the candidates are decodings of quantised
sample points and the selection compares unconvolved candidates: the clean learner of Ashtiani et
al. (2018).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .bounds import L2Bound, noisy_l2_bound
from .candidates import CandidateSet, enumerate_candidates
from .convolution import NoClosedFormError, has_closed_form
from .densities import Density, as_points
from .families import Family
from .noise import NoiseModel
from .partition import CellPartition, PointPartition
from .tournament import Selection, deviation_bound, select


@dataclass
class LearnResult:
    """What :func:`learn` returns: the clean estimate, the selection and the certified bounds."""

    density: Density
    n_candidates: int
    predicted_candidates: float
    selection: Selection
    deviation: float  # high-probability bound on Delta over the sets used
    tv_convolved_bound: str  # "TV(f_hat*g, f*g) <= C*OPT + x"
    l2: L2Bound | None
    radius: float
    delta_q: float
    candidates: CandidateSet = field(repr=False)

    @property
    def wins(self) -> np.ndarray:
        return self.selection.scores

    def summary(self) -> str:
        lines = [
            f"estimate: {self.density!r}",
            f"candidates: {self.n_candidates} ({self.candidates.strategy}; "
            f"predicted distinct decodings {self.predicted_candidates:.3g})",
            f"selection: {self.selection.method}; Delta <= {self.deviation:.4f}",
            f"certified: {self.tv_convolved_bound}",
        ]
        if self.l2 is not None and math.isfinite(self.l2.l2):
            lines.append(
                f"clean l2 bound (if OPT = 0): {self.l2.l2:.4g} at band limit W = {self.l2.W:.3g}"
            )
        return "\n".join(lines)


def _check_unit(value: float, name: str) -> float:
    value = float(value)
    if not 0 < value < 1:
        raise ValueError(f"{name} must be in (0, 1); got {value}")
    return value


def learn(
    family: Family,
    y: np.ndarray,
    noise: NoiseModel,
    eps: float = 0.05,
    delta: float = 0.1,
    split: float = 0.5,
    strategy: str = "auto",
    selection: str = "auto",
    max_candidates: int = 300,
    delta_q: float | None = None,
    radius: float | None = None,
    n_cells: int = 512,
    n_mc: int = 20_000,
    numerical: bool = False,
    search_rounds: int = 25,
    min_scale: float | None = None,
    seed: int = 0,
) -> LearnResult:
    """Learn a member of ``family`` from noisy samples ``y = x + z``, ``z ~ noise``.

    Parameters
    ----------
    family, y, noise:
        The compressible family, noisy samples ``(n, d)`` and the known noise law.
    eps, delta:
        Accuracy (sets the code grids) and confidence, both in ``(0, 1)``.
    split:
        Fraction of ``y`` used for candidates (the rest selects).
    strategy:
        Candidate enumeration: ``all``, ``sample``, ``search`` or ``auto`` (``all`` when the
        predicted count fits under ``max_candidates``, else ``search``).
    selection:
        ``scheffe``, ``min_distance``, ``knockout`` or ``auto``.
    delta_q, radius:
        Quantisation step (default ``eps * std(S1) / 2``) and perturbation radius (default the
        noise's high-probability radius over ``|S1|`` points).
    n_cells, n_mc:
        Atoms of the Scheffe sets: grid cells in ``d <= 2`` (:class:`CellPartition`), else the
        hold-out points plus ``n_mc`` Monte-Carlo points (:class:`PointPartition`).
    numerical:
        Allow Monte-Carlo convolutions where there is no closed form.

    Examples
    --------
    >>> from noisy_compress.families import UniformBox
    >>> from noisy_compress.noise import GaussianNoise
    >>> rng = np.random.default_rng(0)
    >>> y = rng.uniform(0, 1, (2000, 1)) + rng.normal(0, 0.1, (2000, 1))
    >>> res = learn(UniformBox(1), y, GaussianNoise(0.1), eps=0.1, max_candidates=150)
    >>> lo, hi = res.density.lo[0], res.density.hi[0]
    >>> bool(abs(lo) < 0.08 and abs(hi - 1) < 0.08)
    True
    """
    eps, delta = _check_unit(eps, "eps"), _check_unit(delta, "delta")
    split = _check_unit(split, "split")
    if family.d != noise.d:
        raise ValueError(f"family has dimension {family.d} but noise has dimension {noise.d}")
    y = as_points(y, family.d, "samples")
    noise.check_identifiable()
    rng = np.random.default_rng(seed)
    y = y[rng.permutation(len(y))]
    n1 = int(round(split * len(y)))
    y1, y2 = y[:n1], y[n1:]
    if n1 < family.tau or len(y2) < family.tau:
        raise ValueError(
            f"need at least {2 * family.tau} samples: tau = {family.tau} for the compression set "
            f"of {family!r} and as many for selection; got n = {len(y)}"
        )
    if max_candidates < 1:
        raise ValueError(f"max_candidates must be >= 1; got {max_candidates}")
    if delta_q is None:
        delta_q = float(eps * np.median(y1.std(axis=0)) / 2) or eps
    if delta_q <= 0 or not math.isfinite(delta_q):
        raise ValueError(f"quantisation step delta_q must be > 0; got {delta_q}")
    if radius is None:
        radius = 0.0 if noise.is_zero else noise.radius(n1, delta)
    if radius < 0:
        raise ValueError(f"radius must be >= 0; got {radius}")

    probe = family.sample_member(np.random.default_rng(0))
    if not numerical and not has_closed_form(probe, noise):
        raise NoClosedFormError(
            f"no closed-form convolution of {family!r} with {noise!r}; enable the numerical "
            "(Monte Carlo) fallback (numerical=True / --numerical true)"
        )

    if strategy == "auto":
        from .candidates import predicted_count

        q_unique = len(np.unique(np.round(y1 / delta_q), axis=0))
        R = int(radius / delta_q) if radius > 0 else 0
        pred = predicted_count(family, q_unique * (2 * R + 1) ** family.d, eps)
        strategy = "all" if pred <= max_candidates else "search"
    cands = enumerate_candidates(
        family,
        y1,
        noise,
        eps,
        delta_q,
        radius,
        strategy,
        max_candidates,
        rng,
        numerical,
        search_rounds,
    )
    part = (
        CellPartition.cover(y2, n_cells)
        if family.d <= 2
        else PointPartition(y2, n_mc=n_mc, seed=seed)
    )
    P = part.masses(cands.densities, noise, numerical)
    h = part.frequencies(y2)
    sel = select(P, h, selection, seed=seed)
    dev = deviation_bound(len(y2), sel.n_sets, delta)
    c_opt, c_dev = sel.constants
    ref = "best survivor" if sel.method == "knockout" else "best candidate"
    certified = f"TV(f_hat*g, f*g) <= {c_opt:g}*OPT({ref}) + {c_dev * dev:.4f}"
    l2 = None
    if not noise.is_zero and math.isfinite(noise.sup_density):
        scale = min_scale if min_scale is not None else float(np.median(y1.std(axis=0)) / 4)
        l2 = noisy_l2_bound(noise, family, c_dev * dev, scale)
    return LearnResult(
        cands.densities[sel.winner],
        len(cands),
        cands.predicted,
        sel,
        dev,
        certified,
        l2,
        float(radius),
        float(delta_q),
        cands,
    )
