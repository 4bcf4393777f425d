"""Candidate generation by perturbation-quantisation of noisy compression sets.

Paper concept -> code (reconstruction; see the package README):

1. *perturbation-quantisation*: a noisy point ``y`` is replaced by a point of the grid
   ``Delta Z^d`` inside the cube ``||x - y||_inf <= r`` (``r`` a high-probability noise radius),
   i.e. ``Delta (round(y / Delta) + k)`` with ``||k||_inf <= R = floor(r / Delta)``:
   :func:`perturbation_quantize`. Since ``||X_i - Y_i|| <= r`` with high probability, some
   perturbed tuple is within ``Delta`` of the clean compression set;
2. the candidates ``J(quantised tuple, codes)`` over tuples of the first half ``S1`` and all codes:
   :func:`enumerate_candidates` with ``strategy="all"`` (distinct decodings, refused above
   ``max_candidates`` with the predicted count), ``"sample"`` (random tuples/offsets/codes) or
   ``"search"`` (a stochastic search over the same decodings guided by the convolved likelihood of
   ``S1`` only; a computational shortcut, not in the paper, that keeps the selection guarantee
   since ``S2`` is untouched);
3. the predicted count ``log M = tau log |U| + log prod code_sizes`` with ``|U|`` the number of
   reachable grid points: :func:`predicted_count`;
4. candidates seeded from the convolved-likelihood fit (``strategy="seeded"``, the default of the
   learner): the fit is encoded by the family's sender (:meth:`Family.encode`), every point is moved
   to the nearest reachable grid point (a perturbation-quantised point of ``S1``, :func:`reach`),
   and the neighbourhood is explored by moves of 1 to 13 grid steps; mixture weights are profiled
   in closed form on the ``S1`` histogram
   (:func:`noisy_compress.likelihood.profile_weights`) before they are encoded. Every candidate is
   still a decoding ``J(perturbation-quantised points of S1, codes)``: :func:`seeded_candidates`;
5. the budget grows like ``log n``: :func:`search_budget`.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field

import numpy as np

from .convolution import convolved_pdf
from .densities import Density
from .families import Family
from .noise import NoiseModel


class CandidateCapError(ValueError):
    """The predicted number of candidates exceeds the cap (enumeration refused)."""


@dataclass
class CandidateSet:
    """Decoded candidates with the quantised points and codes they came from."""

    densities: list[Density]
    points: np.ndarray  # (M, tau, d) quantised points
    codes: np.ndarray  # (M, n_codes)
    predicted: float  # predicted number of distinct decodings (before any subsampling)
    strategy: str
    s1_scores: np.ndarray = field(default_factory=lambda: np.zeros(0))

    def __len__(self) -> int:
        return len(self.densities)


def perturbation_quantize(y: np.ndarray, offsets: np.ndarray, delta_q: float) -> np.ndarray:
    """``Delta (round(y / Delta) + offsets)``: the perturbed, quantised points.

    Examples
    --------
    >>> perturbation_quantize(np.array([[0.26]]), np.array([[-1]]), 0.1).round(6).tolist()
    [[0.2]]
    """
    return delta_q * (np.round(np.asarray(y) / delta_q) + offsets)


def reachable_grid(y1: np.ndarray, R: int) -> np.ndarray:
    """Distinct grid indices ``round(y / Delta) + k`` (``||k||_inf <= R``) over the first half; shape (|U|, d)."""
    base = np.unique(y1, axis=0)
    d = y1.shape[1]
    offs = np.array(list(itertools.product(range(-R, R + 1), repeat=d)), dtype=np.int64)
    if len(base) * len(offs) > 5_000_000:
        raise CandidateCapError(
            f"{len(base) * len(offs):.3g} reachable grid points; use a coarser quantisation step "
            "or strategy 'sample'/'search'"
        )
    return np.unique((base[:, None, :] + offs[None]).reshape(-1, d), axis=0)


def predicted_count(family: Family, n_reachable: int, eps: float) -> float:
    """Predicted number of candidates ``|U|^tau * prod code_sizes`` (an upper bound on distinct decodings)."""
    log_m = family.tau * math.log(max(n_reachable, 1)) + sum(
        math.log(s) for s in family.code_sizes(eps)
    )
    return math.exp(min(log_m, 700.0))


def search_budget(n: int, per_log: float = 32.0) -> int:
    """Number of candidates for ``n`` samples: ``ceil(per_log * ln n)`` (at least 16).

    The selection error grows like ``sqrt(log M / n)``, so a budget ``M = O(log n)`` (indeed any
    polynomial in ``n``) keeps the tournament's rate.

    Examples
    --------
    >>> search_budget(1000), search_budget(8000)
    (222, 288)
    """
    return max(16, int(math.ceil(per_log * math.log(max(n, 2)))))


def reach(target: np.ndarray, q1: np.ndarray, R: int) -> np.ndarray:
    """Nearest reachable grid indices: ``q1[i] + k`` with ``||k||_inf <= R``, ``i`` the quantised
    sample point nearest (sup norm) to each row of ``target``.

    Examples
    --------
    >>> q1 = np.array([[0], [10]])
    >>> reach(np.array([[3], [12], [30]]), q1, 2).tolist()
    [[2], [12], [12]]
    """
    target = np.asarray(target, dtype=np.int64)
    out = np.empty_like(target)
    for r, t in enumerate(target):
        i = int(np.argmin(np.abs(q1 - t[None, :]).max(axis=1)))
        out[r] = q1[i] + np.clip(t - q1[i], -R, R)
    return out


def _profile_mixture(family, qpts, codes, eps, delta_q, noise, part, h1, numerical):
    """Re-encode the weight digits of a mixture decoding with closed-form profiled weights."""
    from .likelihood import profile_weights

    dens = family.decode(qpts * delta_q, codes, eps)
    if dens is None:
        return codes
    P = part.masses(dens.components, noise, numerical)
    w = profile_weights(P, h1)
    out = codes.copy()
    out[len(codes) - family.k :] = family.weight_codes(w, eps)
    return out


def seeded_candidates(
    family: Family,
    y1: np.ndarray,
    noise: NoiseModel,
    eps: float,
    delta_q: float,
    radius: float,
    seed_density: Density,
    budget: int,
    rng: np.random.Generator,
    numerical: bool = False,
    steps: tuple[int, ...] = (1, 2, 3, 5, 8, 13),
) -> list[tuple[Density, np.ndarray, np.ndarray]]:
    """Decodings in the grid neighbourhood of the encoded ``seed_density`` (at most ``budget``).

    Returns ``(density, quantised points (tau, d) as grid indices, codes)`` triples, the encoded
    seed first. For a :class:`~noisy_compress.families.Mixture` in ``d <= 2`` the weight digits of
    every candidate are set from closed-form profiled weights on the ``S1`` histogram.

    Examples
    --------
    >>> from noisy_compress.densities import BoxDensity
    >>> from noisy_compress.families import UniformBox
    >>> from noisy_compress.noise import GaussianNoise
    >>> rng = np.random.default_rng(0)
    >>> y1 = rng.uniform(0, 1, (500, 1)) + rng.normal(0, 0.1, (500, 1))
    >>> out = seeded_candidates(UniformBox(1), y1, GaussianNoise(0.1), 0.05, 0.01, 0.3,
    ...                         BoxDensity([0.0], [1.0]), 20, rng)
    >>> len(out), out[0][0]
    (20, BoxDensity(lo=[0.0], hi=[1.0]))
    """
    from .families import Mixture
    from .partition import CellPartition

    n1, d = y1.shape
    R = int(math.floor(radius / delta_q + 1e-9)) if radius > 0 else 0
    q1 = np.unique(np.round(y1 / delta_q).astype(np.int64), axis=0)
    pts, codes = family.encode(seed_density, eps)
    q0 = reach(np.round(pts / delta_q).astype(np.int64), q1, R)
    codes0 = np.asarray(codes, dtype=np.int64)
    sizes = np.asarray(family.code_sizes(eps), dtype=np.int64)
    profile = isinstance(family, Mixture) and d <= 2
    n_free_codes = len(sizes) - (family.k if isinstance(family, Mixture) else 0)
    if profile:
        part = CellPartition.cover(y1, 256 if d == 1 else 1024)
        h1 = part.frequencies(y1)

    out: list[tuple[Density, np.ndarray, np.ndarray]] = []
    seen: set[bytes] = set()

    def add(q, c):
        if profile:
            c = _profile_mixture(family, q, c, eps, delta_q, noise, part, h1, numerical)
        key = q.tobytes() + c.tobytes()
        if key in seen:
            return
        seen.add(key)
        dens = family.decode(q * delta_q, c, eps)
        if dens is not None:
            out.append((dens, q, c))

    add(q0, codes0)
    n_coords = q0.size + n_free_codes
    for _ in range(20 * budget):
        if len(out) >= budget:
            break
        q, c = q0.copy(), codes0.copy()
        for coord in rng.choice(n_coords, size=min(n_coords, rng.integers(1, 3)), replace=False):
            step = int(rng.choice(steps)) * int(rng.choice([-1, 1]))
            if coord < q0.size:
                q.reshape(-1)[coord] += step
            else:
                j = coord - q0.size
                c[j] = np.clip(c[j] + step, 0, sizes[j] - 1)
        add(reach(q, q1, R), c)
    return out


def _score(dens: Density | None, noise: NoiseModel, y: np.ndarray, numerical: bool) -> float:
    if dens is None:
        return -math.inf
    p = convolved_pdf(dens, noise, y, numerical=numerical)
    return float(np.mean(np.log(p + 1e-300)))


def enumerate_candidates(
    family: Family,
    y1: np.ndarray,
    noise: NoiseModel,
    eps: float,
    delta_q: float,
    radius: float,
    strategy: str = "search",
    max_candidates: int = 400,
    rng: np.random.Generator | None = None,
    numerical: bool = False,
    search_rounds: int = 30,
    score_points: int = 1500,
) -> CandidateSet:
    """Candidates ``J(perturbation-quantised tuple of S1, codes)``.

    Parameters
    ----------
    family, y1, noise, eps:
        The family, the candidate half of the noisy sample ``(n1, d)``, the noise, the accuracy.
    delta_q, radius:
        Quantisation step ``Delta`` and perturbation radius ``r``.
    strategy:
        ``all`` (every distinct decoding; refused above ``max_candidates``), ``sample`` or ``search``.
    max_candidates:
        Cap on the number of candidates returned (and on ``all``'s predicted count).

    Examples
    --------
    >>> from noisy_compress.families import UniformBox
    >>> from noisy_compress.noise import GaussianNoise
    >>> y1 = np.random.default_rng(0).uniform(0, 1, (20, 1))
    >>> cs = enumerate_candidates(UniformBox(1), y1, GaussianNoise(0.0), 0.1, 0.05, 0.0, "all", 1000)
    >>> len(cs) <= cs.predicted, cs.strategy
    (True, 'all')
    """
    rng = rng if rng is not None else np.random.default_rng(0)
    n1, d = y1.shape
    R = int(math.floor(radius / delta_q + 1e-9)) if radius > 0 else 0
    q1 = np.round(y1 / delta_q).astype(np.int64)
    sizes = family.code_sizes(eps)
    tau = family.tau
    n_unique = len(np.unique(q1, axis=0))
    predicted = predicted_count(family, n_unique * (2 * R + 1) ** d, eps)
    y_score = y1 if n1 <= score_points else y1[rng.choice(n1, score_points, replace=False)]

    def decode(qpts: np.ndarray, codes: np.ndarray) -> Density | None:
        return family.decode(qpts * delta_q, codes, eps)

    if strategy == "all":
        if predicted > max_candidates:
            raise CandidateCapError(
                f"strategy 'all' would enumerate about {predicted:.3g} candidates, over "
                f"max_candidates={max_candidates}; use a coarser quantisation step (larger "
                "delta_q), raise max_candidates, or subsample with strategy 'sample'/'search'"
            )
        grid = reachable_grid(q1, R)
        seen: dict[bytes, tuple] = {}
        for tup in itertools.product(range(len(grid)), repeat=tau):
            qpts = grid[list(tup)]
            for codes in itertools.product(*[range(s) for s in sizes]):
                codes = np.asarray(codes, dtype=np.int64)
                dens = decode(qpts, codes)
                if dens is None:
                    continue
                key = repr(dens.params()).encode()
                if key not in seen:
                    seen[key] = (dens, qpts, codes)
        items = list(seen.values())
        return CandidateSet(
            [it[0] for it in items],
            np.array([it[1] for it in items]).reshape(len(items), tau, d) * delta_q,
            np.array([it[2] for it in items], dtype=np.int64).reshape(len(items), len(sizes)),
            predicted,
            "all",
        )

    def random_state():
        idx = rng.integers(0, n1, size=tau)
        off = rng.integers(-R, R + 1, size=(tau, d))
        codes = np.array([rng.integers(0, s) for s in sizes], dtype=np.int64)
        return q1[idx] + off, codes, idx

    pool: dict[bytes, tuple] = {}

    def add(qpts, codes, idx):
        key = qpts.tobytes() + codes.tobytes()
        if key in pool:
            return
        dens = decode(qpts, codes)
        score = _score(dens, noise, y_score, numerical) if strategy == "search" else 0.0
        if dens is not None:
            pool[key] = (dens, qpts, codes, idx, score)

    if strategy == "sample":
        for _ in range(50 * max_candidates):
            if len(pool) >= max_candidates:
                break
            add(*random_state())
    elif strategy == "search":
        # independent restarts (each with its own random population and elites) so that one
        # basin of the S1 likelihood (e.g. two mixture components covering the same mass)
        # cannot absorb the whole search
        restarts = 3
        n_elite = max(8, max_candidates // 10)
        for _restart in range(restarts):
            local: list[bytes] = []

            def add_local(qpts, codes, idx, local=local):
                key = qpts.tobytes() + codes.tobytes()
                if key not in pool:
                    add(qpts, codes, idx)
                    if key in pool:
                        local.append(key)

            for _ in range(max(4 * max_candidates, 200)):
                if len(local) >= max(max_candidates // 2, 60):
                    break
                add_local(*random_state())
            for _ in range(max(1, search_rounds // restarts)):
                elites = sorted(local, key=lambda key: -pool[key][4])[:n_elite]
                for key in elites:
                    _dens, qpts, codes, idx, _s = pool[key]
                    for _ in range(6):
                        q, c, ix = qpts.copy(), codes.copy(), idx.copy()
                        move = rng.random()
                        slot = rng.integers(tau)
                        if move < 0.35:  # shift of one quantised offset
                            q[slot, rng.integers(d)] += rng.choice([-8, -4, -2, -1, 1, 2, 4, 8])
                            q[slot] = np.clip(q[slot], q1[ix[slot]] - R, q1[ix[slot]] + R)
                        elif move < 0.55:  # fresh offset around the same noisy point
                            q[slot] = q1[ix[slot]] + rng.integers(-R, R + 1, size=d)
                        elif move < 0.7 or not sizes:  # another noisy point of S1
                            ix[slot] = rng.integers(n1)
                            q[slot] = q1[ix[slot]] + rng.integers(-R, R + 1, size=d)
                        else:  # change one code digit
                            j = rng.integers(len(sizes))
                            c[j] = np.clip(
                                c[j] + rng.choice([-4, -2, -1, 1, 2, 4]), 0, sizes[j] - 1
                            )
                        add_local(q, c, ix)
    else:
        raise ValueError(f"unknown candidate strategy {strategy!r}; choose all, sample or search")

    items = list(pool.values())
    if strategy == "search":
        items.sort(key=lambda it: -it[4])
    items = items[:max_candidates]
    if not items:
        raise ValueError("no valid candidate could be decoded (all tuples degenerate)")
    return CandidateSet(
        [it[0] for it in items],
        np.array([it[1] for it in items]).reshape(len(items), tau, d) * delta_q,
        np.array([it[2] for it in items], dtype=np.int64).reshape(len(items), len(sizes)),
        predicted,
        strategy,
        np.array([it[4] for it in items]),
    )
