"""The multivariate Ornstein-Uhlenbeck process and its stationary law.

Paper: "One Intervention per Component is Enough: Towards Identifiability in
Linear Stochastic Dynamics from Steady State" (ICML 2026).

The process is ``dX = (A X + b) dt + G dW`` with ``D = G G^T``. For a Hurwitz
drift ``A`` its stationary law is Gaussian ``N(mu, Sigma)`` with

1. the mean equation ``A mu + b = 0``               -> :meth:`OUParams.stationary_mean`
2. the continuous Lyapunov equation
   ``A Sigma + Sigma A^T + D = 0``                  -> :meth:`OUParams.stationary_cov`
3. the global scale invariance ``(A, b, D) -> (cA, cb, cD)``, ``c > 0``, which
   leaves ``(mu, Sigma)`` unchanged                 -> :meth:`OUParams.rescaled`,
   :meth:`OUParams.normalized` (convention ``tr D = p``)

Exact sampling draws from ``N(mu, Sigma)``; :meth:`OUParams.simulate` runs an
Euler-Maruyama scheme, used only to validate the stationary formulas.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.linalg

__all__ = ["OUParams", "check_covariance"]


def _as_matrix(name: str, x, p: int | None = None) -> np.ndarray:
    arr = np.asarray(x, dtype=np.float64)
    if arr.ndim != 2 or arr.shape[0] != arr.shape[1]:
        raise ValueError(f"{name} must be a square matrix, got shape {arr.shape}")
    if p is not None and arr.shape[0] != p:
        raise ValueError(f"{name} must be ({p}, {p}), got {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains NaN or infinite entries")
    return arr


def check_covariance(name: str, cov, p: int | None = None, tol: float = 1e-8) -> np.ndarray:
    """Validate a covariance matrix: square, finite, symmetric and PSD.

    Returns the symmetrised ``(p, p)`` array; raises ``ValueError`` naming the problem.
    """
    arr = _as_matrix(name, cov, p)
    scale = max(1.0, float(np.max(np.abs(arr))))
    if np.max(np.abs(arr - arr.T)) > 1e-6 * scale:
        raise ValueError(f"{name} is not symmetric")
    arr = 0.5 * (arr + arr.T)
    eig_min = float(np.linalg.eigvalsh(arr)[0])
    if eig_min < -tol * scale:
        raise ValueError(
            f"{name} is not positive semi-definite (smallest eigenvalue {eig_min:.3g})"
        )
    return arr


@dataclass(frozen=True, eq=False)
class OUParams:
    """Parameters ``(A, b, D)`` of ``dX = (A X + b) dt + G dW`` with ``D = G G^T``.

    Parameters
    ----------
    A:
        Drift matrix, ``(p, p)``. ``A_ij != 0`` is the edge ``j -> i`` of the drift graph.
    b:
        Constant input (production), ``(p,)``.
    D:
        Diffusion ``G G^T``: a ``(p,)`` vector is read as a diagonal, or a ``(p, p)``
        symmetric PSD matrix.

    References
    ----------
    "One Intervention per Component is Enough: Towards Identifiability in Linear
    Stochastic Dynamics from Steady State", ICML 2026 (steady-state equations);
    Gardiner, *Stochastic Methods*, Sec. 4.5 (OU stationary law).

    Examples
    --------
    >>> import numpy as np
    >>> theta = OUParams(A=[[-1.0, 0.0], [0.5, -2.0]], b=[1.0, 0.0], D=[1.0, 1.0])
    >>> theta.is_hurwitz
    True
    >>> np.round(theta.stationary_mean(), 4)
    array([1.  , 0.25])
    >>> np.round(theta.stationary_cov(), 4)
    array([[0.5   , 0.0833],
           [0.0833, 0.2708]])
    >>> np.allclose(theta.rescaled(3.0).stationary_cov(), theta.stationary_cov())
    True
    """

    A: np.ndarray
    b: np.ndarray
    D: np.ndarray

    def __post_init__(self) -> None:
        A = _as_matrix("A", self.A)
        p = A.shape[0]
        b = np.asarray(self.b, dtype=np.float64)
        if b.shape != (p,):
            raise ValueError(f"b must have shape ({p},), got {b.shape}")
        if not np.all(np.isfinite(b)):
            raise ValueError("b contains NaN or infinite entries")
        D = np.asarray(self.D, dtype=np.float64)
        if D.ndim == 1:
            if D.shape != (p,):
                raise ValueError(f"D must have shape ({p},) or ({p}, {p}), got {D.shape}")
            if not np.all(np.isfinite(D)):
                raise ValueError("D contains NaN or infinite entries")
            if np.any(D < 0):
                raise ValueError(f"noise D must be non-negative, got diagonal {np.round(D, 4)}")
            D = np.diag(D)
        else:
            D = check_covariance("D", D, p)
            if np.any(np.diag(D) < 0):
                raise ValueError("noise D must be non-negative")
        object.__setattr__(self, "A", A)
        object.__setattr__(self, "b", b)
        object.__setattr__(self, "D", D)

    # -- basic properties -------------------------------------------------
    @property
    def p(self) -> int:
        """Number of variables."""
        return self.A.shape[0]

    @property
    def d(self) -> np.ndarray:
        """Diagonal of ``D``, ``(p,)``."""
        return np.diag(self.D).copy()

    @property
    def is_hurwitz(self) -> bool:
        """Whether every eigenvalue of ``A`` has a negative real part."""
        return bool(np.max(np.linalg.eigvals(self.A).real) < 0)

    def check_hurwitz(self, what: str = "the stationary law") -> None:
        """Raise ``ValueError`` if ``A`` is not Hurwitz (no stationary law exists)."""
        lam = float(np.max(np.linalg.eigvals(self.A).real))
        if not lam < 0:
            raise ValueError(
                f"drift A is not Hurwitz (largest eigenvalue real part {lam:.3g} >= 0); "
                f"{what} does not exist"
            )

    # -- stationary law (Eqs. mean / Lyapunov) ----------------------------
    def stationary_mean(self) -> np.ndarray:
        """Solve the mean equation ``A mu + b = 0``; returns ``(p,)``."""
        self.check_hurwitz()
        return np.linalg.solve(self.A, -self.b)

    def stationary_cov(self) -> np.ndarray:
        """Solve the Lyapunov equation ``A S + S A^T + D = 0``; returns ``(p, p)``."""
        self.check_hurwitz()
        S = scipy.linalg.solve_continuous_lyapunov(self.A, -self.D)
        return 0.5 * (S + S.T)

    # -- scale ------------------------------------------------------------
    def rescaled(self, c: float) -> OUParams:
        """``(cA, cb, cD)``: the same stationary law for any ``c > 0``."""
        if not c > 0:
            raise ValueError(f"scale must be positive, got {c}")
        return OUParams(c * self.A, c * self.b, c * self.D)

    def normalized(self) -> OUParams:
        """Rescale to the convention ``tr D = p`` used throughout the package."""
        tr = float(np.trace(self.D))
        if not tr > 0:
            raise ValueError("cannot normalise: tr D must be positive")
        return self.rescaled(self.p / tr)

    # -- sampling ---------------------------------------------------------
    def sample(self, n: int, seed: int | np.random.Generator | None = 0) -> np.ndarray:
        """Exact draws from the stationary law; returns ``(n, p)``."""
        if n < 1:
            raise ValueError(f"n must be >= 1, got {n}")
        rng = np.random.default_rng(seed)
        mu, S = self.stationary_mean(), self.stationary_cov()
        w, V = np.linalg.eigh(S)
        root = V * np.sqrt(np.clip(w, 0.0, None))  # (p, p), root @ root.T = S
        return mu + rng.standard_normal((n, self.p)) @ root.T

    def simulate(
        self,
        n_paths: int,
        t_end: float,
        dt: float = 1e-2,
        x0: np.ndarray | None = None,
        seed: int | np.random.Generator | None = 0,
    ) -> np.ndarray:
        """Euler-Maruyama: ``n_paths`` independent paths to time ``t_end``.

        Returns the final states, ``(n_paths, p)``. Meant for validating the
        stationary formulas, not for fitting; raises for a non-Hurwitz drift.
        """
        self.check_hurwitz("a steady state for simulation")
        if not (dt > 0 and t_end > 0):
            raise ValueError("dt and t_end must be positive")
        rng = np.random.default_rng(seed)
        w, V = np.linalg.eigh(self.D)
        G = V * np.sqrt(np.clip(w, 0.0, None))  # (p, p), G G^T = D
        x = np.zeros((n_paths, self.p)) if x0 is None else np.broadcast_to(x0, (n_paths, self.p))
        x = np.array(x, dtype=np.float64)
        for _ in range(int(np.ceil(t_end / dt))):
            noise = rng.standard_normal((n_paths, self.p)) @ G.T
            x = x + (x @ self.A.T + self.b) * dt + np.sqrt(dt) * noise
        return x

    def __repr__(self) -> str:
        return f"OUParams(p={self.p}, hurwitz={self.is_hurwitz})"
