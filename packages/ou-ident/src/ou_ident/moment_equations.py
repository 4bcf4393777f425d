"""Steady-state moment equations as a linear system in the parameters.

Paper: "One Intervention per Component is Enough" (ICML 2026). For each
environment ``e`` with moments ``(m_e, S_e)`` and parameters ``(A_e, b_e, D_e)``:

1. mean residual        ``r_e = A_e m_e + b_e``                  -> :func:`residuals`
2. Lyapunov residual    ``R_e = A_e S_e + S_e A_e^T + D_e``      -> :func:`residuals`
3. objective ``sum_e w_e (lambda_mu ||r_e||^2 + ||R_e||_F^2)``   -> :func:`design_matrix`
   (rows: ``sqrt(w_e lambda_mu) r_e`` and the upper triangle of ``sqrt(w_e) R_e``,
   off-diagonal entries times ``sqrt 2`` so that the squared norm is the Frobenius norm)
4. the scale normalisation ``tr D = p`` of the homogeneous system  -> :func:`solve_normalized`

The parameter vector ``theta`` (:class:`ParameterLayout`) stacks ``A`` on its
support (diagonal included), ``b``, ``diag D`` and the free numbers of every
intervention. With the knock-down factors ``rho`` held fixed every residual
is linear and homogeneous in ``theta``: ``residual = M theta``. ``M`` is built
by evaluating the residuals on the unit vectors (exact, since the map is
linear), in chunks, with batched matrix products instead of explicit
Kronecker products.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ou_ident.interventions import Environment, Intervention
from ou_ident.ou_process import OUParams, check_covariance

__all__ = [
    "EnvironmentMoments",
    "ParameterLayout",
    "check_environments",
    "design_matrix",
    "initial_knockdowns",
    "residuals",
    "row_metadata",
    "solve_normalized",
    "profile_knockdowns",
]


@dataclass(frozen=True, eq=False)
class EnvironmentMoments:
    """Steady-state moments of one environment: mean ``(p,)``, covariance ``(p, p)``.

    Parameters
    ----------
    environment:
        The :class:`~ou_ident.interventions.Environment` (name and interventions).
    mean, cov:
        Sample or population moments.
    n:
        Number of samples behind the moments (``None`` for population moments).

    Examples
    --------
    >>> from ou_ident.ou_process import OUParams
    >>> from ou_ident.interventions import Environment
    >>> theta = OUParams([[-1.0, 0.0], [0.5, -1.0]], [1.0, 0.0], [1.0, 1.0])
    >>> obs = EnvironmentMoments.population(Environment("obs"), theta)
    >>> obs.mean
    array([1. , 0.5])
    >>> EnvironmentMoments.from_samples(Environment("obs"), theta.sample(5000, seed=0)).n
    5000
    """

    environment: Environment
    mean: np.ndarray
    cov: np.ndarray
    n: int | None = None

    def __post_init__(self) -> None:
        mean = np.asarray(self.mean, dtype=np.float64)
        if mean.ndim != 1:
            raise ValueError(f"environment {self.name!r}: mean must be a vector")
        if not np.all(np.isfinite(mean)):
            raise ValueError(f"environment {self.name!r}: mean contains NaN or infinite entries")
        cov = check_covariance(f"covariance of environment {self.name!r}", self.cov, mean.size)
        self.environment.check(mean.size)
        object.__setattr__(self, "mean", mean)
        object.__setattr__(self, "cov", cov)

    @property
    def name(self) -> str:
        """The environment's label."""
        return self.environment.name

    @property
    def p(self) -> int:
        """Number of variables."""
        return self.mean.size

    @classmethod
    def population(cls, environment: Environment, params: OUParams) -> EnvironmentMoments:
        """Exact stationary moments of ``params`` under ``environment``."""
        theta_e = environment.apply(params)
        return cls(environment, theta_e.stationary_mean(), theta_e.stationary_cov(), None)

    @classmethod
    def from_samples(
        cls, environment: Environment, X, shrinkage: float = 0.0
    ) -> EnvironmentMoments:
        """Sample moments of ``X`` ``(n, p)``; optional shrinkage towards the diagonal.

        Warns when ``n < p`` (the sample covariance is singular) and suggests shrinkage.
        """
        X = np.asarray(X, dtype=np.float64)
        if X.ndim != 2:
            raise ValueError(f"environment {environment.name!r}: samples must be (n, p)")
        n, p = X.shape
        if not np.all(np.isfinite(X)):
            raise ValueError(f"environment {environment.name!r}: samples contain NaN or inf")
        if n < 2:
            raise ValueError(f"environment {environment.name!r}: need at least 2 samples, got {n}")
        if not 0.0 <= shrinkage <= 1.0:
            raise ValueError(f"shrinkage must be in [0, 1], got {shrinkage}")
        if n < p and shrinkage == 0.0:
            warnings.warn(
                f"environment {environment.name!r} has n={n} samples for p={p} variables; "
                "the sample covariance is singular - consider shrinkage (e.g. shrinkage=0.1)",
                UserWarning,
                stacklevel=2,
            )
        mean = X.mean(axis=0)
        cov = np.cov(X, rowvar=False).reshape(p, p)
        if shrinkage > 0:
            cov = (1.0 - shrinkage) * cov + shrinkage * np.diag(np.diag(cov))
        return cls(environment, mean, cov, n)


def check_environments(data: Sequence[EnvironmentMoments]) -> int:
    """Validate a list of environments (same ``p``, unique labels); returns ``p``."""
    if len(data) == 0:
        raise ValueError("need at least one environment")
    p = data[0].p
    names = [e.name for e in data]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise ValueError(f"duplicate environment labels: {dup}")
    for e in data:
        if e.p != p:
            raise ValueError(f"environment {e.name!r} has p={e.p}, expected {p}")
    return p


@dataclass(eq=False)
class ParameterLayout:
    """Where each unknown lives in ``theta``.

    ``theta = [A[mask] (row-major), b (p), diag D (p), free numbers of each intervention]``.

    Parameters
    ----------
    mask:
        ``(p, p)`` boolean support of ``A``; must contain the diagonal.
    environments:
        The environments, whose interventions contribute free numbers.

    Examples
    --------
    >>> import numpy as np
    >>> from ou_ident.interventions import Environment, Degradation
    >>> lay = ParameterLayout(np.eye(2, dtype=bool) | [[0, 0], [1, 0]],
    ...                       [Environment("obs"), Environment("d0", (Degradation(0),))])
    >>> lay.dim  # 3 drift entries + 2 inputs + 2 noise levels + 1 gamma
    8
    """

    mask: np.ndarray
    environments: Sequence[Environment]
    a_index: np.ndarray = field(init=False)
    free_slices: list[list[slice]] = field(init=False)

    def __post_init__(self) -> None:
        mask = np.asarray(self.mask)
        if mask.ndim != 2 or mask.shape[0] != mask.shape[1]:
            raise ValueError(f"support mask must be square, got shape {mask.shape}")
        mask = mask.astype(bool)
        if not np.all(np.diag(mask)):
            missing = np.flatnonzero(~np.diag(mask)).tolist()
            raise ValueError(
                f"support mask must contain the diagonal (self-regulation); missing {missing}"
            )
        self.mask = mask
        p = mask.shape[0]
        self.environments = list(self.environments)
        for env in self.environments:
            env.check(p)
        self.a_index = np.argwhere(mask)  # (n_A, 2) row-major
        offset = self.n_a + 2 * p
        self.free_slices = []
        for env in self.environments:
            slices = []
            for iv in env.interventions:
                slices.append(slice(offset, offset + iv.n_free))
                offset += iv.n_free
            self.free_slices.append(slices)
        self._dim = offset

    # -- sizes and coordinate groups ----------------------------------------
    @property
    def p(self) -> int:
        """Number of variables."""
        return self.mask.shape[0]

    @property
    def n_a(self) -> int:
        """Number of free drift entries."""
        return len(self.a_index)

    @property
    def dim(self) -> int:
        """Length of ``theta``."""
        return self._dim

    @property
    def d_slice(self) -> slice:
        """Coordinates of ``diag D``."""
        return slice(self.n_a + self.p, self.n_a + 2 * self.p)

    @property
    def offdiag_a(self) -> np.ndarray:
        """Coordinates of the off-diagonal drift entries."""
        return np.flatnonzero(self.a_index[:, 0] != self.a_index[:, 1])

    def owner(self) -> np.ndarray:
        """Node that owns each coordinate: the row of a drift entry, the node of ``b``/``D``,
        the target of an intervention's free number. ``(dim,)``."""
        own = np.empty(self.dim, dtype=int)
        own[: self.n_a] = self.a_index[:, 0]
        own[self.n_a : self.n_a + self.p] = np.arange(self.p)
        own[self.d_slice] = np.arange(self.p)
        for env, slices in zip(self.environments, self.free_slices, strict=True):
            for iv, sl in zip(env.interventions, slices, strict=True):
                own[sl] = iv.target
        return own

    def knockdowns(self) -> list[tuple[int, int, Intervention]]:
        """``(env index, intervention index, intervention)`` of every bilinear family."""
        return [
            (e, j, iv)
            for e, env in enumerate(self.environments)
            for j, iv in enumerate(env.interventions)
            if iv.bilinear
        ]

    # -- packing ----------------------------------------------------------
    def unpack(self, Theta: np.ndarray):
        """``Theta (B, dim)`` -> ``A (B, p, p), b (B, p), d (B, p)``."""
        B, p = Theta.shape[0], self.p
        A = np.zeros((B, p, p))
        A[:, self.a_index[:, 0], self.a_index[:, 1]] = Theta[:, : self.n_a]
        b = Theta[:, self.n_a : self.n_a + p]
        d = Theta[:, self.d_slice]
        return A, b, d

    def environment_parameters(self, Theta: np.ndarray, e: int, rhos: dict):
        """Batched ``(A_e, b_e, d_e)`` of environment ``e`` (linear in ``Theta``)."""
        A, b, d = self.unpack(Theta)
        for j, (iv, sl) in enumerate(
            zip(self.environments[e].interventions, self.free_slices[e], strict=True)
        ):
            A, b, d = iv.environment_parameters(A, b, d, Theta[:, sl], rho=rhos.get((e, j)))
        return A, b, d

    def pack(self, params: OUParams) -> tuple[np.ndarray, dict]:
        """``theta`` and knock-down factors of known parameters with known strengths."""
        if params.p != self.p:
            raise ValueError(f"params have p={params.p}, layout has p={self.p}")
        off = np.abs(params.A) > 0
        if np.any(off & ~self.mask):
            raise ValueError("params have drift entries outside the support mask")
        theta = np.zeros(self.dim)
        theta[: self.n_a] = params.A[self.a_index[:, 0], self.a_index[:, 1]]
        theta[self.n_a : self.n_a + self.p] = params.b
        theta[self.d_slice] = params.d
        rhos = {}
        for e, (env, slices) in enumerate(zip(self.environments, self.free_slices, strict=True)):
            for j, (iv, sl) in enumerate(zip(env.interventions, slices, strict=True)):
                theta[sl] = iv.free_from_strength(params)
                if iv.bilinear:
                    rhos[(e, j)] = float(iv.strength)
        return theta, rhos

    def params(self, theta: np.ndarray) -> OUParams:
        """Base-environment parameters from ``theta``."""
        A, b, d = self.unpack(theta[None, :])
        return OUParams(A[0], b[0].copy(), np.clip(d[0], 0.0, None))

    def strengths(self, theta: np.ndarray, rhos: dict) -> dict[str, tuple[float, ...]]:
        """Estimated strength of every intervention, keyed by environment label."""
        A, b, d = self.unpack(theta[None, :])
        base = OUParams(A[0], b[0].copy(), np.abs(d[0]))
        out = {}
        for e, (env, slices) in enumerate(zip(self.environments, self.free_slices, strict=True)):
            vals = []
            for j, (iv, sl) in enumerate(zip(env.interventions, slices, strict=True)):
                if iv.bilinear:
                    vals.append(float(rhos[(e, j)]))
                else:
                    vals.append(iv.strength_from_free(base, theta[sl]))
            out[env.name] = tuple(vals)
        return out


def _row_index(p: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Row metadata of one environment: ``(i, j, weight)``; mean rows have ``j = -1``."""
    iu, ju = np.triu_indices(p)
    i = np.concatenate([np.arange(p), iu])
    j = np.concatenate([-np.ones(p, dtype=int), ju])
    w = np.concatenate([np.ones(p), np.where(iu == ju, 1.0, np.sqrt(2.0))])
    return i, j, w


def residuals(
    layout: ParameterLayout,
    data: Sequence[EnvironmentMoments],
    Theta: np.ndarray,
    rhos: dict,
    lambda_mean: float = 1.0,
) -> np.ndarray:
    """Stacked weighted residuals for a batch ``Theta (B, dim)``; returns ``(B, n_rows)``.

    ``n_rows = E (p + p (p + 1) / 2)``; environment weights ``w_e = 1 / E``.
    """
    p = layout.p
    iu, ju = np.triu_indices(p)
    _, _, wrow = _row_index(p)
    E = len(data)
    blocks = []
    for e, env in enumerate(data):
        A, b, d = layout.environment_parameters(Theta, e, rhos)
        r = A @ env.mean + b  # (B, p)
        AS = A @ env.cov  # (B, p, p)
        R = AS + np.swapaxes(AS, 1, 2)
        R[:, np.arange(p), np.arange(p)] += d
        scale = np.concatenate([np.full(p, np.sqrt(lambda_mean)), np.ones(len(iu))])
        blocks.append(np.concatenate([r, R[:, iu, ju]], axis=1) * wrow * scale / np.sqrt(E))
    return np.concatenate(blocks, axis=1)


def row_metadata(p: int, n_env: int) -> tuple[np.ndarray, np.ndarray]:
    """``(i, j)`` of every row of :func:`design_matrix` (mean rows: ``j = -1``)."""
    i, j, _ = _row_index(p)
    return np.tile(i, n_env), np.tile(j, n_env)


def design_matrix(
    layout: ParameterLayout,
    data: Sequence[EnvironmentMoments],
    rhos: dict,
    columns: np.ndarray | None = None,
    base: np.ndarray | None = None,
    lambda_mean: float = 1.0,
    chunk: int = 256,
) -> tuple[np.ndarray, np.ndarray]:
    """Affine form ``residual(base + sum_c z_c e_c) = offset + M z``.

    Returns ``(M (n_rows, n_cols), offset (n_rows,))``. With ``base = 0`` and all
    columns this is the homogeneous system ``M theta``.
    """
    columns = np.arange(layout.dim) if columns is None else np.asarray(columns)
    base = np.zeros(layout.dim) if base is None else np.asarray(base, dtype=np.float64)
    offset = residuals(layout, data, base[None, :], rhos, lambda_mean)[0]
    parts = []
    for start in range(0, len(columns), chunk):
        cols = columns[start : start + chunk]
        Theta = np.repeat(base[None, :], len(cols), axis=0)
        Theta[np.arange(len(cols)), cols] += 1.0
        parts.append((residuals(layout, data, Theta, rhos, lambda_mean) - offset).T)
    M = np.concatenate(parts, axis=1) if parts else np.zeros((offset.size, 0))
    return M, offset


def solve_normalized(
    M: np.ndarray,
    norm_cols: np.ndarray,
    total: float,
    ridge: float = 0.0,
    ridge_cols: np.ndarray | None = None,
) -> np.ndarray:
    """``argmin ||M x||^2 + ridge ||x[ridge_cols]||^2`` subject to ``sum x[norm_cols] = total``.

    The constraint fixes the global scale of the homogeneous system (``tr D = p``).
    Solved by eliminating the first normalisation coordinate (closed form, the KKT
    solution of the equality-constrained ridge problem) and ``numpy.linalg.lstsq``.
    """
    n = M.shape[1]
    norm_cols = np.asarray(norm_cols)
    q = int(norm_cols[0])
    keep = np.setdiff1d(np.arange(n), [q])
    # x = x0 + N z with x_q = total - sum_{c in norm_cols, c != q} x_c
    x0 = np.zeros(n)
    x0[q] = total
    N = np.zeros((n, n - 1))
    N[keep, np.arange(n - 1)] = 1.0
    others = np.searchsorted(keep, norm_cols[norm_cols != q])
    N[q, others] = -1.0
    lhs = M @ N
    rhs = -(M @ x0)
    if ridge > 0 and ridge_cols is not None and len(ridge_cols):
        sel = np.searchsorted(keep, np.asarray(ridge_cols))
        reg = np.zeros((len(sel), n - 1))
        reg[np.arange(len(sel)), sel] = np.sqrt(ridge)
        lhs = np.vstack([lhs, reg])
        rhs = np.concatenate([rhs, np.zeros(len(sel))])
    z = np.linalg.lstsq(lhs, rhs, rcond=None)[0]
    return x0 + N @ z


def profile_knockdowns(
    keys: Sequence[tuple[int, int]],
    rhos: dict,
    objective,
    n_sweeps: int = 3,
    n_grid: int = 100,
    width: float | None = None,
) -> dict:
    """Variable projection over the knock-down factors ``rho`` in ``[0, 1)``.

    ``objective(rhos)`` must return the least-squares objective with every other
    parameter re-solved (the linear problem given ``rho``). Each factor is
    profiled in turn: a grid of ``n_grid`` points over ``[0, 1)`` (or over
    ``rho +- width`` when ``width`` is given), then a bounded Brent refinement
    (``scipy.optimize.minimize_scalar``) around the best grid point. The profile
    is not convex and its valley at the truth can be narrow, hence the fine grid.
    ``n_sweeps`` cycles over the factors when there are several.
    """
    import scipy.optimize

    rhos = dict(rhos)
    top = 1.0 - 1e-9
    for _ in range(n_sweeps if len(keys) > 1 else 1):
        for key in keys:

            def f(r, key=key):
                trial = dict(rhos)
                trial[key] = float(r)
                return objective(trial)

            if width is None:
                grid = np.linspace(0.0, 0.99, n_grid)
            else:
                grid = np.clip(np.linspace(rhos[key] - width, rhos[key] + width, n_grid), 0.0, top)
            step = (grid[-1] - grid[0]) / max(n_grid - 1, 1)
            vals = [f(r) for r in grid]
            best = grid[int(np.argmin(vals))]
            lo, hi = max(0.0, best - step), min(top, best + step)
            if hi > lo:
                res = scipy.optimize.minimize_scalar(
                    f, bounds=(lo, hi), method="bounded", options={"xatol": 1e-13}
                )
                rhos[key] = float(res.x) if res.fun <= min(vals) else float(best)
            else:
                rhos[key] = float(best)
    return rhos


def initial_knockdowns(layout: ParameterLayout) -> dict:
    """Starting knock-down factors (0.5; given strengths are not used by the estimators)."""
    return {(e, j): 0.5 for e, j, _ in layout.knockdowns()}
