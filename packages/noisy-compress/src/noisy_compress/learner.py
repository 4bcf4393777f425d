"""The noisy compression learner: perturbation-quantised candidates + a tournament on ``f_hat * g``.

Algorithm (reconstruction of the paper's learner from its abstract and the research notes):

1. split the noisy sample ``y`` into ``S1`` (candidates) and ``S2`` (selection);
2. candidates ``J(perturbation-quantised tuple of S1, codes)``: by default (``strategy="seeded"``)
   the grid neighbourhood of the encoded convolved-likelihood fit on ``S1``
   (:func:`noisy_compress.likelihood.convolved_mle`,
   :func:`noisy_compress.candidates.seeded_candidates`) plus a quarter of stochastic exploration
   (:func:`noisy_compress.candidates.enumerate_candidates`); the budget grows like ``log n``
   (:func:`noisy_compress.candidates.search_budget`) and the code precision shrinks with ``n``,
   ``eps_n = sqrt(ln n / n)`` (:func:`code_precision`), the rate of the selection step;
3. select among the *convolved* candidates ``f_j * g`` on ``S2`` with a Scheffe tournament,
   minimum distance or knockout (:mod:`noisy_compress.tournament`); convolution contracts TV, so
   ``TV(f_hat * g, f * g) <= C OPT + C' Delta``, with ``Delta`` the Hoeffding / empirical-Bernstein
   deviation over the sets used (:func:`noisy_compress.tournament.deviation_bound`);
4. report the clean estimate ``f_hat`` and the guarantee: the oracle inequality above, plus, in
   1-D where the atoms' masses are exact, the bound on what binning hides
   (:meth:`noisy_compress.partition.CellPartition.binning_gap`), so that it holds for the true TV
   of the convolved laws; and, through :func:`noisy_compress.bounds.noisy_l2_bound`, an ell_2
   bound on the clean density (often vacuous under Gaussian noise: it is severely ill-posed).

With zero noise (``GaussianNoise(0)``) the radius is 0, the candidates are decodings of quantised
sample points and the selection compares unconvolved candidates: the clean learner of Ashtiani et
al. (2018).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .bounds import L2Bound, noisy_l2_bound
from .candidates import CandidateSet, enumerate_candidates, search_budget, seeded_candidates
from .convolution import NoClosedFormError, has_closed_form
from .densities import Density, as_points
from .families import Family
from .noise import NoiseModel
from .partition import CellPartition, PointPartition
from .tournament import Selection, deviation_bound, select


@dataclass
class LearnResult:
    """What :func:`learn` returns: the clean estimate, the selection and its guarantee.

    ``bound`` is the additive term ``x`` of the oracle inequality
    ``TV(f_hat * g, f * g) <= C * OPT + x`` (w.p. ``>= 1 - delta`` over ``S2``; ``OPT`` the TV of
    the best candidate to the truth, both convolved with the noise): ``C' Delta`` plus, when
    ``binning_gap`` is finite, the binning gap (then it bounds the true TV of the convolved laws;
    otherwise the TV between the laws binned on the tournament's atoms).
    """

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
    eps: float = 0.05
    bound: float = math.nan
    binning_gap: float = math.nan
    seed_density: Density | None = None

    @property
    def wins(self) -> np.ndarray:
        return self.selection.scores

    def summary(self) -> str:
        lines = [
            f"estimate: {self.density!r}",
            f"candidates: {self.n_candidates} ({self.candidates.strategy}; code precision eps = "
            f"{self.eps:.3g}, grid step {self.delta_q:.3g}; predicted distinct decodings "
            f"{self.predicted_candidates:.3g})",
            f"selection: {self.selection.method}; Delta <= {self.deviation:.4f}",
            f"guarantee (w.p. >= 1 - delta, on the noisy law): {self.tv_convolved_bound}",
        ]
        if self.l2 is not None and math.isfinite(self.l2.l2):
            lines.append(
                f"clean l2 bound (if OPT = 0): {self.l2.l2:.4g} at band limit W = {self.l2.W:.3g}"
            )
        return "\n".join(lines)

    def to_dict(self) -> dict:
        """JSON-ready summary: the fitted density's parameters and the guarantee."""
        return {
            "density": self.density.params(),
            "n_candidates": self.n_candidates,
            "strategy": self.candidates.strategy,
            "selection": self.selection.method,
            "eps": self.eps,
            "grid_step": self.delta_q,
            "radius": self.radius,
            "deviation": self.deviation,
            "binning_gap": self.binning_gap,
            "bound": self.bound,
            "guarantee": self.tv_convolved_bound,
            "clean_l2_bound": None if self.l2 is None else self.l2.l2,
            "seed_density": None if self.seed_density is None else self.seed_density.params(),
        }


def _check_unit(value: float, name: str) -> float:
    value = float(value)
    if not 0 < value < 1:
        raise ValueError(f"{name} must be in (0, 1); got {value}")
    return value


def code_precision(n: int) -> float:
    """Default code precision ``eps_n = sqrt(ln n / n)``, clipped to ``[0.002, 0.2]``.

    The candidates' quantisation error is ``O(eps)`` and the selection error
    ``O(sqrt(log M / n))``; with ``M`` polynomial in ``n`` both are ``O(sqrt(log n / n))``.

    Examples
    --------
    >>> round(code_precision(1000), 4), round(code_precision(8000), 4)
    (0.0831, 0.0335)
    """
    return float(min(0.2, max(0.002, math.sqrt(math.log(max(n, 2)) / max(n, 2)))))


def learn(
    family: Family,
    y: np.ndarray,
    noise: NoiseModel,
    eps: float | None = None,
    delta: float = 0.1,
    split: float = 0.5,
    strategy: str = "auto",
    selection: str = "auto",
    max_candidates: int | None = None,
    delta_q: float | None = None,
    radius: float | None = None,
    n_cells: int = 1024,
    n_mc: int = 20_000,
    numerical: bool = False,
    search_rounds: int | None = None,
    min_scale: float | None = None,
    seed: int = 0,
    budget_per_log: float = 32.0,
) -> LearnResult:
    """Learn a member of ``family`` from noisy samples ``y = x + z``, ``z ~ noise``.

    Parameters
    ----------
    family, y, noise:
        The compressible family, noisy samples ``(n, d)`` (or ``(n,)`` in 1-D) and the known
        noise law.
    eps:
        Code precision in ``(0, 1)`` (sets the code grids and the quantisation step); default
        ``eps_n = sqrt(ln n / n)`` (:func:`code_precision`).
    delta:
        Confidence in ``(0, 1)``.
    split:
        Fraction of ``y`` used for candidates (the rest selects).
    strategy:
        Candidate generation: ``all``, ``sample``, ``search``, ``seeded`` or ``auto`` (``all``
        when the predicted count fits under ``max_candidates``, else ``seeded``).
    selection:
        ``scheffe``, ``min_distance``, ``knockout`` or ``auto``.
    max_candidates:
        Candidate budget; default ``ceil(budget_per_log * ln n)`` (:func:`search_budget`).
    delta_q, radius:
        Quantisation step (default ``eps * std(S1) / 2``) and perturbation radius (default the
        noise's high-probability radius over ``|S1|`` points).
    n_cells, n_mc:
        Atoms of the Scheffe sets: grid cells in ``d <= 2`` (:class:`CellPartition`), else the
        hold-out points plus ``n_mc`` Monte-Carlo points (:class:`PointPartition`).
    numerical:
        Allow Monte-Carlo convolutions where there is no closed form.
    search_rounds:
        Rounds of the stochastic exploration (default ``ceil(2 ln n)``).

    Examples
    --------
    >>> from noisy_compress.families import UniformBox
    >>> from noisy_compress.noise import GaussianNoise
    >>> rng = np.random.default_rng(0)
    >>> y = rng.uniform(0, 1, (2000, 1)) + rng.normal(0, 0.1, (2000, 1))
    >>> res = learn(UniformBox(1), y, GaussianNoise(0.1))
    >>> lo, hi = res.density.lo[0], res.density.hi[0]
    >>> bool(abs(lo) < 0.05 and abs(hi - 1) < 0.05), res.bound < 1
    (True, True)
    """
    delta = _check_unit(delta, "delta")
    split = _check_unit(split, "split")
    if family.d != noise.d:
        raise ValueError(f"family has dimension {family.d} but noise has dimension {noise.d}")
    y = as_points(y, family.d, "samples")
    eps = code_precision(len(y)) if eps is None else _check_unit(eps, "eps")
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
    if max_candidates is None:
        max_candidates = search_budget(len(y), budget_per_log)
    if max_candidates < 1:
        raise ValueError(f"max_candidates must be >= 1; got {max_candidates}")
    if search_rounds is None:
        search_rounds = int(math.ceil(2 * math.log(len(y))))
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
        strategy = "all" if pred <= max_candidates else "seeded"
    seed_density = None
    if strategy == "seeded":
        from .likelihood import convolved_mle

        seed_density = convolved_mle(family, y1, noise, seed=seed, numerical=numerical)
        n_seeded = max(1, int(math.ceil(0.75 * max_candidates)))
        near = seeded_candidates(family, y1, noise, eps, delta_q, radius, seed_density,
                                 n_seeded, rng, numerical)  # fmt: skip
        explore = enumerate_candidates(family, y1, noise, eps, delta_q, radius, "search",
                                       max(1, max_candidates - len(near)), rng, numerical,
                                       search_rounds)  # fmt: skip
        cands = CandidateSet(
            [c[0] for c in near] + explore.densities,
            np.concatenate([np.array([c[1] for c in near]) * delta_q, explore.points]),
            np.concatenate(
                [np.array([c[2] for c in near]).reshape(len(near), -1), explore.codes]
            ).astype(np.int64),  # fmt: skip
            explore.predicted,
            "seeded",
        )
    else:
        cands = enumerate_candidates(family, y1, noise, eps, delta_q, radius, strategy,
                                     max_candidates, rng, numerical, search_rounds)  # fmt: skip
    part = (
        CellPartition.cover(y2, n_cells)
        if family.d <= 2
        else PointPartition(y2, n_mc=n_mc, seed=seed)
    )
    P = part.masses(cands.densities, noise, numerical)
    h = part.frequencies(y2)
    sel = select(P, h, selection, seed=seed)
    dev = deviation_bound(len(y2), sel.n_sets, delta, variance=sel.set_variance)
    c_opt, c_dev = sel.constants
    ref = "best survivor" if sel.method == "knockout" else "best candidate"
    gap = math.nan
    if isinstance(part, CellPartition):
        gap = part.binning_gap(noise, float(P[sel.winner, 0] + P[sel.winner, -1]))
    bound = c_dev * dev + (gap if math.isfinite(gap) else 0.0)
    what = (
        f"{c_dev:g}*Delta + binning {gap:.4f}"
        if math.isfinite(gap)
        else f"{c_dev:g}*Delta; between the laws binned on the tournament's atoms"
    )
    guarantee = f"TV(f_hat*g, f*g) <= {c_opt:g}*OPT({ref}) + {bound:.4f} ({what})"
    l2 = None
    if not noise.is_zero and math.isfinite(noise.sup_density):
        scale = min_scale if min_scale is not None else float(np.median(y1.std(axis=0)) / 4)
        l2 = noisy_l2_bound(noise, family, bound, scale)
    return LearnResult(
        cands.densities[sel.winner],
        len(cands),
        cands.predicted,
        sel,
        dev,
        guarantee,
        l2,
        float(radius),
        float(delta_q),
        cands,
        eps=float(eps),
        bound=float(bound),
        binning_gap=float(gap),
        seed_density=seed_density,
    )
