"""Intervention families on an Ornstein-Uhlenbeck system.

Paper: "One Intervention per Component is Enough" (ICML 2026). An
intervention on target ``k`` changes the parameters ``(A, b, D)`` of the
process; the stationary moments of each environment then satisfy the mean and
Lyapunov equations with the changed parameters. Families:

==========================  =====================================  ===============  =========
class                       change                                  strength domain  drift?
==========================  =====================================  ===============  =========
:class:`Shift`              ``b_k -> b_k + delta``                  real             no
:class:`NoiseScale`         ``D_kk -> s D_kk``                      ``s > 0``        no
:class:`Degradation`        ``A_kk -> A_kk - gamma``                ``gamma > 0``    yes
:class:`KnockDown`          ``A_kj -> rho A_kj (j != k)``, ``b_k -> rho b_k``  ``0 <= rho < 1``  yes
:class:`Hard`               ``A_kj -> 0 (j != k)``, ``b_k -> -A_kk v``  real ``v``   yes
:class:`Inhibition`         ``A_ik -> rho A_ik (i != k)``           ``0 <= rho < 1``  yes
==========================  =====================================  ===============  =========

:class:`Inhibition` is not one of the paper's families: it is the activity inhibition of a
kinase inhibitor (the target's *effect* on the others is blocked, its own level is free), the
model of the Sachs et al. (2005) inhibitor conditions (:mod:`ou_ident.sachs`).

For estimation every family is written *linearly* in the parameters plus one
free number per intervention (:meth:`Intervention.environment_parameters`): the
shift ``delta``, the intervened noise level ``s D_kk``, the degradation
``gamma`` and the clamped input ``b_k^e``. The knock-down is bilinear
(``rho A_kj``); estimators hold ``rho`` fixed while solving the linear system
and profile it out (variable projection over ``rho``).
Which families identify the system with one intervention per strongly
connected component is checked numerically by :mod:`ou_ident.identifiability`:
only the drift-changing ones do in general.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from ou_ident.ou_process import OUParams

__all__ = [
    "FAMILIES",
    "environment_specs",
    "environments_from_specs",
    "Degradation",
    "Environment",
    "Hard",
    "Inhibition",
    "Intervention",
    "KnockDown",
    "NoiseScale",
    "Shift",
    "make_intervention",
]


@dataclass(frozen=True)
class Intervention(ABC):
    """One intervention on variable ``target`` with a ``strength`` (``None`` = unknown).

    Subclasses define how the parameters change (:meth:`natural`) and the
    linear form used by the estimators (:meth:`environment_parameters`).
    """

    target: int
    strength: float | None = None

    family: ClassVar[str] = ""
    drift_changing: ClassVar[bool] = False
    bilinear: ClassVar[bool] = False
    n_free: ClassVar[int] = 1

    def __post_init__(self) -> None:
        if isinstance(self.target, bool) or not isinstance(self.target, int | np.integer):
            raise ValueError(f"intervention target must be an integer index, got {self.target!r}")
        if self.target < 0:
            raise ValueError(f"intervention target must be >= 0, got {self.target}")
        object.__setattr__(self, "target", int(self.target))
        if self.strength is not None:
            s = float(self.strength)
            if not np.isfinite(s):
                raise ValueError(f"{self.family} strength must be finite, got {self.strength}")
            self.check_strength(s)
            object.__setattr__(self, "strength", s)

    # -- domain -----------------------------------------------------------
    def check_strength(self, s: float) -> None:
        """Raise ``ValueError`` if ``s`` is outside the family's domain (default: any real)."""
        return None

    def check_target(self, p: int) -> None:
        """Raise ``ValueError`` if the target is not one of ``p`` variables."""
        if not 0 <= self.target < p:
            raise ValueError(f"{self.family} target {self.target} out of range for p={p} variables")

    def _need_strength(self) -> float:
        if self.strength is None:
            raise ValueError(
                f"{self.family} on {self.target} has no strength; give one to apply it"
            )
        return float(self.strength)

    # -- parameter change ---------------------------------------------------
    @abstractmethod
    def natural(self, A, b, d, s):
        """Changed ``(A_e, b_e, d_e)`` for strength ``s`` (arrays; differentiable form)."""

    def apply(self, params: OUParams) -> OUParams:
        """The intervened parameters (needs a known strength)."""
        self.check_target(params.p)
        s = self._need_strength()
        A, b, d = self.natural(params.A, params.b, params.d, s)
        D = params.D.copy()
        k = self.target
        if d[k] != D[k, k]:  # noise scaling of a possibly full D: scale row/column k
            f = np.sqrt(d[k] / D[k, k]) if D[k, k] > 0 else 0.0
            D[k, :] *= f
            D[:, k] *= f
        return OUParams(A, b, D)

    # -- linear form for estimation ----------------------------------------
    @abstractmethod
    def environment_parameters(self, A, b, d, free, rho=None):
        """Batched linear form: ``A (B,p,p), b (B,p), d (B,p), free (B,n_free)`` -> env arrays.

        Linear (and homogeneous) in ``(A, b, d, free)``; ``rho`` is the fixed
        current strength of a bilinear family.
        """

    @abstractmethod
    def free_from_strength(self, params: OUParams) -> np.ndarray:
        """The free numbers ``(n_free,)`` that correspond to the known strength."""

    @abstractmethod
    def strength_from_free(self, params: OUParams, free: np.ndarray) -> float:
        """Strength implied by estimated free numbers and parameters."""


@dataclass(frozen=True)
class Shift(Intervention):
    """Mean shift of the input: ``b_k -> b_k + delta``.

    Examples
    --------
    >>> theta = OUParams([[-1.0, 0.0], [1.0, -1.0]], [0.0, 0.0], [1.0, 1.0])
    >>> Shift(0, 2.0).apply(theta).stationary_mean()
    array([2., 2.])
    """

    family: ClassVar[str] = "shift"

    def natural(self, A, b, d, s):
        b = b.copy() if isinstance(b, np.ndarray) else b.clone()
        b[self.target] = b[self.target] + s
        return A, b, d

    def environment_parameters(self, A, b, d, free, rho=None):
        b = b.copy()
        b[:, self.target] += free[:, 0]
        return A, b, d

    def free_from_strength(self, params):
        return np.array([self._need_strength()])

    def strength_from_free(self, params, free):
        return float(free[0])


@dataclass(frozen=True)
class NoiseScale(Intervention):
    """Noise scaling: ``D_kk -> s D_kk`` with ``s > 0``.

    Examples
    --------
    >>> theta = OUParams([[-1.0]], [0.0], [2.0])
    >>> round(float(NoiseScale(0, 3.0).apply(theta).stationary_cov()[0, 0]), 12)
    3.0
    """

    family: ClassVar[str] = "noise"

    def check_strength(self, s):
        if not s > 0:
            raise ValueError(f"noise scale must be > 0, got {s}")

    def natural(self, A, b, d, s):
        d = d.copy() if isinstance(d, np.ndarray) else d.clone()
        d[self.target] = d[self.target] * s
        return A, b, d

    def environment_parameters(self, A, b, d, free, rho=None):
        d = d.copy()
        d[:, self.target] = free[:, 0]  # the intervened noise level s * D_kk
        return A, b, d

    def free_from_strength(self, params):
        return np.array([self._need_strength() * params.d[self.target]])

    def strength_from_free(self, params, free):
        dk = params.d[self.target]
        return float(free[0] / dk) if dk != 0 else float("nan")


@dataclass(frozen=True)
class Degradation(Intervention):
    """Extra degradation of the target: ``A_kk -> A_kk - gamma`` with ``gamma > 0``.

    Examples
    --------
    >>> theta = OUParams([[-1.0]], [1.0], [1.0])
    >>> float(Degradation(0, 1.0).apply(theta).stationary_mean()[0])
    0.5
    """

    family: ClassVar[str] = "degradation"
    drift_changing: ClassVar[bool] = True

    def check_strength(self, s):
        if not s > 0:
            raise ValueError(f"degradation rate gamma must be > 0, got {s}")

    def natural(self, A, b, d, s):
        A = A.copy() if isinstance(A, np.ndarray) else A.clone()
        A[self.target, self.target] = A[self.target, self.target] - s
        return A, b, d

    def environment_parameters(self, A, b, d, free, rho=None):
        A = A.copy()
        A[:, self.target, self.target] -= free[:, 0]
        return A, b, d

    def free_from_strength(self, params):
        return np.array([self._need_strength()])

    def strength_from_free(self, params, free):
        return float(free[0])


@dataclass(frozen=True)
class KnockDown(Intervention):
    """Knock-down of production: row ``k`` off-diagonal and ``b_k`` times ``rho`` in ``[0, 1)``.

    Bilinear in ``(rho, A)``: :attr:`n_free` is 0 and estimators profile ``rho`` out.

    Examples
    --------
    >>> theta = OUParams([[-1.0, 0.0], [1.0, -1.0]], [1.0, 1.0], [1.0, 1.0])
    >>> KnockDown(1, 0.5).apply(theta).stationary_mean()
    array([1., 1.])
    """

    family: ClassVar[str] = "knockdown"
    drift_changing: ClassVar[bool] = True
    bilinear: ClassVar[bool] = True
    n_free: ClassVar[int] = 0

    def check_strength(self, s):
        if not 0 <= s < 1:
            raise ValueError(f"knock-down factor rho must be in [0, 1), got {s}")

    def natural(self, A, b, d, s):
        k = self.target
        A = A.copy() if isinstance(A, np.ndarray) else A.clone()
        b = b.copy() if isinstance(b, np.ndarray) else b.clone()
        diag = A[k, k] * 1.0
        A[k, :] = A[k, :] * s
        A[k, k] = diag
        b[k] = b[k] * s
        return A, b, d

    def environment_parameters(self, A, b, d, free, rho=None):
        if rho is None:
            raise ValueError("knock-down needs a current rho in the linear form")
        k = self.target
        A, b = A.copy(), b.copy()
        diag = A[:, k, k].copy()
        A[:, k, :] *= rho
        A[:, k, k] = diag
        b[:, k] *= rho
        return A, b, d

    def free_from_strength(self, params):
        return np.zeros(0)

    def strength_from_free(self, params, free):
        return float(self.strength) if self.strength is not None else float("nan")


@dataclass(frozen=True)
class Hard(Intervention):
    """Hard intervention: cut the incoming edges of ``k`` and clamp its mean to ``value``.

    ``A_kj -> 0`` for ``j != k`` and ``b_k -> -A_kk * value`` (so ``E X_k = value``);
    ``A_kk`` and ``D_kk`` are kept. The strength is ``value``.

    Examples
    --------
    >>> theta = OUParams([[-1.0, 0.0], [1.0, -1.0]], [1.0, 0.0], [1.0, 1.0])
    >>> Hard(1, 3.0).apply(theta).stationary_mean()
    array([1., 3.])
    """

    family: ClassVar[str] = "hard"
    drift_changing: ClassVar[bool] = True

    def natural(self, A, b, d, s):
        k = self.target
        A = A.copy() if isinstance(A, np.ndarray) else A.clone()
        b = b.copy() if isinstance(b, np.ndarray) else b.clone()
        diag = A[k, k] * 1.0
        A[k, :] = A[k, :] * 0.0
        A[k, k] = diag
        b[k] = -diag * s
        return A, b, d

    def environment_parameters(self, A, b, d, free, rho=None):
        k = self.target
        A, b = A.copy(), b.copy()
        diag = A[:, k, k].copy()
        A[:, k, :] = 0.0
        A[:, k, k] = diag
        b[:, k] = free[:, 0]  # the clamped input b_k^e
        return A, b, d

    def free_from_strength(self, params):
        return np.array([-params.A[self.target, self.target] * self._need_strength()])

    def strength_from_free(self, params, free):
        return float(-free[0] / params.A[self.target, self.target])


@dataclass(frozen=True)
class Inhibition(Intervention):
    """Activity inhibition: the target's outgoing edges ``A_ik -> rho A_ik`` (``i != k``).

    The model of a kinase inhibitor: the target still exists (its own level may even rise
    through lost feedback) but acts on its substrates with the remaining activity ``rho``
    in ``[0, 1)``; ``b``, ``D`` and ``A_kk`` are kept. Not among the paper's families.
    Estimators use the given ``rho`` and a full block (``rho = 0``) when it is unknown, so
    the linear form has no free number and needs no calibration to predict.

    Examples
    --------
    >>> theta = OUParams([[-1.0, 0.0], [1.0, -1.0]], [1.0, 0.0], [1.0, 1.0])
    >>> Inhibition(0, 0.0).apply(theta).stationary_mean()   # 0 no longer drives 1
    array([1., 0.])
    """

    family: ClassVar[str] = "inhibition"
    drift_changing: ClassVar[bool] = True
    n_free: ClassVar[int] = 0

    def check_strength(self, s):
        if not 0 <= s < 1:
            raise ValueError(f"inhibition: remaining activity rho must be in [0, 1), got {s}")

    def natural(self, A, b, d, s):
        k = self.target
        A = A.copy() if isinstance(A, np.ndarray) else A.clone()
        diag = A[k, k] * 1.0
        A[:, k] = A[:, k] * s
        A[k, k] = diag
        return A, b, d

    def environment_parameters(self, A, b, d, free, rho=None):
        k = self.target
        s = 0.0 if self.strength is None else float(self.strength)
        A = A.copy()
        diag = A[:, k, k].copy()
        A[:, :, k] *= s
        A[:, k, k] = diag
        return A, b, d

    def free_from_strength(self, params):
        return np.zeros(0)

    def strength_from_free(self, params, free):
        return 0.0 if self.strength is None else float(self.strength)


FAMILIES: dict[str, type[Intervention]] = {
    cls.family: cls for cls in (Shift, NoiseScale, Degradation, KnockDown, Hard, Inhibition)
}


def make_intervention(family: str, target: int, strength: float | None = None) -> Intervention:
    """Build an intervention from its family name (``"shift"``, ``"noise"``, ...)."""
    try:
        cls = FAMILIES[family]
    except KeyError:
        raise ValueError(
            f"unknown intervention family {family!r}; choose one of {sorted(FAMILIES)}"
        ) from None
    return cls(target, strength)


@dataclass(frozen=True)
class Environment:
    """A named experimental condition: a tuple of interventions (empty = observational).

    Examples
    --------
    >>> env = Environment("deg-2", (Degradation(2, 1.0),))
    >>> env.targets
    (2,)
    """

    name: str
    interventions: tuple[Intervention, ...] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        object.__setattr__(self, "interventions", tuple(self.interventions))
        for iv in self.interventions:
            if not isinstance(iv, Intervention):
                raise ValueError(f"environment {self.name!r}: {iv!r} is not an Intervention")
        targets = self.targets
        if len(set(targets)) != len(targets):
            raise ValueError(f"environment {self.name!r} intervenes twice on the same target")

    @property
    def targets(self) -> tuple[int, ...]:
        """Intervened variables."""
        return tuple(iv.target for iv in self.interventions)

    @property
    def is_observational(self) -> bool:
        """True when nothing is intervened on."""
        return not self.interventions

    def check(self, p: int) -> None:
        """Validate every target against ``p`` variables."""
        for iv in self.interventions:
            iv.check_target(p)

    def apply(self, params: OUParams) -> OUParams:
        """Parameters of this environment (needs known strengths)."""
        self.check(params.p)
        for iv in self.interventions:
            params = iv.apply(params)
        return params


def environment_specs(environments: Sequence[Environment]) -> list[dict]:
    """JSON-able structure of environments: names, families and targets (no strengths)."""
    return [
        {
            "name": env.name,
            "interventions": [
                {"family": iv.family, "target": iv.target} for iv in env.interventions
            ],
        }
        for env in environments
    ]


def environments_from_specs(specs: Sequence[dict]) -> list[Environment]:
    """Inverse of :func:`environment_specs` (strengths unknown)."""
    return [
        Environment(
            str(s["name"]),
            tuple(make_intervention(iv["family"], int(iv["target"])) for iv in s["interventions"]),
        )
        for s in specs
    ]
