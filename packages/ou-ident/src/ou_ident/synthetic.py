"""Offline generator of steady-state perturbation experiments.

Paper: "One Intervention per Component is Enough" (ICML 2026), synthetic
setting: a drift graph whose SCC condensation is a connected DAG with a single
root, a Hurwitz drift, diagonal noise, one intervention per SCC, and exact
Gaussian snapshots of every environment's stationary law.

1. :func:`random_scc_graph` - blocks of sizes in ``[min_size, max_size]``; a
   directed cycle plus random edges (density ``[0.5, 1]``) inside each block;
   every later block gets at least one edge from an earlier block (single root).
2. :func:`random_parameters` - off-diagonal ``A_ij ~ N(0, 0.5^2) / sqrt(deg_i)``,
   ``A_ii = -(1 + sum_j |A_ij|)`` (Hurwitz by Gershgorin), ``b ~ N(0, 1)``,
   ``D_ii ~ U[0.5, 1.5]``, then ``tr D = p``.
3. :func:`make_problem` - interventions (one per SCC, random target) and
   held-out interventions of a family, with moments from
   :meth:`SteadyStateProblem.moments` (population or ``n`` exact samples).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ou_ident.drift_graph import DriftGraph
from ou_ident.interventions import FAMILIES, Environment, Intervention, make_intervention
from ou_ident.moment_equations import EnvironmentMoments
from ou_ident.ou_process import OUParams

__all__ = [
    "SteadyStateProblem",
    "make_problem",
    "random_parameters",
    "random_scc_graph",
    "random_strength",
    "wishart_moments",
]


def random_scc_graph(
    p: int,
    min_size: int = 2,
    max_size: int = 8,
    density: tuple[float, float] = (0.5, 1.0),
    cross_prob: float = 0.05,
    seed: int | np.random.Generator | None = 0,
) -> np.ndarray:
    """Random drift support ``(p, p)`` whose condensation is connected with a single root.

    Examples
    --------
    >>> mask = random_scc_graph(10, seed=0)
    >>> g = DriftGraph(mask)
    >>> len(g.roots), g.is_connected(), bool(np.all(np.diag(mask)))
    (1, True, True)
    """
    if p < 1:
        raise ValueError(f"p must be >= 1, got {p}")
    if not 1 <= min_size <= max_size:
        raise ValueError(f"need 1 <= min_size <= max_size, got {min_size}, {max_size}")
    rng = np.random.default_rng(seed)
    sizes = []
    left = p
    while left > 0:
        s = int(rng.integers(min_size, max_size + 1))
        s = min(s, left)
        sizes.append(s)
        left -= s
    mask = np.eye(p, dtype=bool)
    blocks = []
    start = 0
    for s in sizes:
        nodes = np.arange(start, start + s)
        start += s
        blocks.append(nodes)
        if s > 1:
            perm = rng.permutation(nodes)
            mask[np.roll(perm, -1), perm] = True  # cycle perm[i] -> perm[i + 1]
            dens = rng.uniform(*density)
            extra = rng.random((s, s)) < dens
            mask[np.ix_(nodes, nodes)] |= extra
    for k in range(1, len(blocks)):
        earlier = np.concatenate(blocks[:k])
        mask[rng.choice(blocks[k]), rng.choice(earlier)] = True
        mask[np.ix_(blocks[k], earlier)] |= rng.random((len(blocks[k]), len(earlier))) < cross_prob
    return mask


def random_parameters(mask, seed: int | np.random.Generator | None = 0) -> OUParams:
    """Hurwitz drift on ``mask``, Gaussian input, diagonal noise; normalised to ``tr D = p``.

    Examples
    --------
    >>> theta = random_parameters(np.ones((3, 3), bool), seed=1)
    >>> theta.is_hurwitz, round(float(np.trace(theta.D)), 12)
    (True, 3.0)
    """
    mask = np.asarray(mask, dtype=bool)
    p = mask.shape[0]
    rng = np.random.default_rng(seed)
    off = mask & ~np.eye(p, dtype=bool)
    deg = np.maximum(off.sum(axis=1, keepdims=True), 1)
    A = np.where(off, rng.normal(0.0, 0.5, (p, p)) / np.sqrt(deg), 0.0)
    np.fill_diagonal(A, -(1.0 + np.abs(A).sum(axis=1)))  # Gershgorin => Hurwitz
    b = rng.normal(0.0, 1.0, p)
    d = rng.uniform(0.5, 1.5, p)
    return OUParams(A, b, d).normalized()


def wishart_moments(
    environment: Environment, params: OUParams, n: int, rng: np.random.Generator
) -> EnvironmentMoments:
    """Sample moments of ``n`` exact stationary draws, sampled from their exact law.

    Examples
    --------
    >>> theta = OUParams([[-1.0]], [1.0], [2.0])
    >>> m = wishart_moments(Environment("obs"), theta, 10**8, np.random.default_rng(0))
    >>> bool(abs(m.cov[0, 0] - 1.0) < 1e-3), m.n
    (True, 100000000)
    """
    import scipy.stats

    p = params.p
    if n <= p:
        raise ValueError(f"wishart moments need n > p, got n={n}, p={p}")
    mu, S = params.stationary_mean(), params.stationary_cov()
    w, V = np.linalg.eigh(S)
    root = V * np.sqrt(np.clip(w, 0.0, None))
    mean = mu + root @ rng.standard_normal(p) / np.sqrt(n)
    df = n - 1
    W = scipy.stats.wishart(df=df, scale=np.eye(p)).rvs(random_state=rng).reshape(p, p)
    cov = root @ (W / df) @ root.T
    return EnvironmentMoments(environment, mean, 0.5 * (cov + cov.T), n)


def random_strength(family: str, params: OUParams, target: int, rng: np.random.Generator) -> float:
    """A strength inside the family's domain, of a size that visibly moves the moments."""
    if family not in FAMILIES:
        raise ValueError(
            f"unknown intervention family {family!r}; choose one of {sorted(FAMILIES)}"
        )
    u = float(rng.uniform(0.5, 1.5))
    if family == "shift":
        return float(rng.choice([-1.0, 1.0])) * (1.0 + u)
    if family == "noise":
        return 1.5 + 2.0 * u
    if family == "degradation":
        return u * abs(params.A[target, target])
    if family == "knockdown":
        return 0.4 * (u - 0.5)
    if family == "inhibition":
        return 0.5 * (u - 0.5)
    return float(rng.normal(0.0, 2.0))  # hard: clamped mean


@dataclass(eq=False)
class SteadyStateProblem:
    """A synthetic experiment: truth, environments and held-out interventions.

    Parameters
    ----------
    params:
        True parameters (``tr D = p``).
    mask:
        True drift support.
    environments:
        Training environments (observational first).
    heldout:
        Unseen interventions (known strengths) for prediction.

    Examples
    --------
    >>> prob = make_problem(6, "degradation", seed=0)
    >>> [e.name for e in prob.environments][:2]
    ['obs', 'degradation-0']
    >>> data = prob.moments(n=500, seed=0)
    >>> data[0].cov.shape
    (6, 6)
    """

    params: OUParams
    mask: np.ndarray
    environments: list[Environment]
    heldout: list[Environment]

    @property
    def graph(self) -> DriftGraph:
        """Drift graph of the true support."""
        return DriftGraph(self.mask)

    def moments(
        self,
        n: int | None = None,
        seed: int | np.random.Generator | None = 0,
        method: str = "auto",
    ) -> list[EnvironmentMoments]:
        """Moments per environment: population (``n=None``) or of ``n`` exact samples each.

        ``method="samples"`` draws the ``(n, p)`` snapshot and takes its sample
        moments; ``method="wishart"`` draws the sufficient statistics directly from
        their exact law (mean ``~ N(mu, Sigma / n)``, ``(n - 1) S ~ Wishart(Sigma, n - 1)``),
        which costs ``O(p^3)`` for any ``n``. ``"auto"`` uses samples up to
        ``n p = 2e6`` values per environment.
        """
        if n is None:
            return [EnvironmentMoments.population(e, self.params) for e in self.environments]
        if method not in {"auto", "samples", "wishart"}:
            raise ValueError(f"method must be 'auto', 'samples' or 'wishart', got {method!r}")
        rng = np.random.default_rng(seed)
        p = self.params.p
        if method == "auto":
            method = "samples" if n * p <= 2_000_000 else "wishart"
        if method == "wishart":
            return [wishart_moments(e, e.apply(self.params), n, rng) for e in self.environments]
        return [
            EnvironmentMoments.from_samples(e, e.apply(self.params).sample(n, rng))
            for e in self.environments
        ]

    def heldout_moments(self) -> list[EnvironmentMoments]:
        """Population moments of the held-out interventions."""
        return [EnvironmentMoments.population(e, self.params) for e in self.heldout]


def make_problem(
    p: int,
    family: str = "degradation",
    per_component: int = 1,
    n_heldout: int = 3,
    observational: bool = True,
    min_size: int = 2,
    max_size: int = 8,
    seed: int = 0,
) -> SteadyStateProblem:
    """Random single-root SCC graph, parameters and interventions of one ``family``.

    ``per_component`` interventions (distinct targets) per SCC; held-out
    interventions hit nodes that are not training targets where possible.
    """
    rng = np.random.default_rng(seed)
    mask = random_scc_graph(p, min_size, max_size, seed=rng)
    params = random_parameters(mask, seed=rng)
    graph = DriftGraph(mask)
    envs = [Environment("obs")] if observational else []
    used = set()
    for comp in graph.components:
        k = min(per_component, len(comp))
        for t in rng.choice(np.asarray(comp), size=k, replace=False):
            t = int(t)
            used.add(t)
            iv: Intervention = make_intervention(family, t, random_strength(family, params, t, rng))
            envs.append(Environment(f"{family}-{t}", (iv,)))
    free = [i for i in range(p) if i not in used] or list(range(p))
    held = []
    for t in rng.choice(np.asarray(free), size=min(n_heldout, len(free)), replace=False):
        t = int(t)
        iv = make_intervention(family, t, random_strength(family, params, t, rng))
        held.append(Environment(f"heldout-{family}-{t}", (iv,)))
    return SteadyStateProblem(params, mask, envs, held)
