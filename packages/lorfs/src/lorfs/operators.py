"""Separable linear operators ``L = c0 I + sum_j L_j`` acting on Fourier coefficients.

Paper: Kaminsky, Freedman, Radinsky, "Overcoming PINNs Failure Modes in High Dimension with
Low-Rank Fourier Sum", ICML 2026.

Each ``L_j = sum_m a_{j,m} d^m/dz_j^m`` acts on axis ``j`` only, so on the Fourier
coefficients it is the diagonal multiplier ``mu_j(k) = sum_m a_{j,m} (i omega_j k)^m``
(no autograd through the inputs). Heat, Poisson, convection, diffusion and constant reaction
terms all have this form, which is what the 4-state recursion of :mod:`lorfs.residual` needs.
Nonlinear terms (``u^2``, ``u^3``) are handled by products of sums
(:meth:`lorfs.fourier_sum.SeparableSum.power`) or by exact quadrature.

Constructors: :func:`D` (one derivative), :func:`Laplacian`, :func:`Identity`, :func:`Const`;
operators add, subtract and scale.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import torch

from .basis import CDTYPE, FourierAxis


class SeparableOperator:
    """``L = constant * I + sum_j sum_m coef[j][m] d^m / dz_j^m``.

    Parameters
    ----------
    constant:
        Coefficient of the identity (zeroth-order, e.g. a linear reaction term).
    derivatives:
        ``{axis_index: {order: coefficient}}``.

    Examples
    --------
    >>> lap = Laplacian([0, 1])
    >>> heat = D(0) - Laplacian([1])   # u_t - u_xx on axes (t, x)
    >>> sorted(heat.derivatives[1].items())
    [(2, -1.0)]
    >>> from lorfs.basis import FourierAxis
    >>> ax = [FourierAxis("x", (0, 6.283185307179586), 1)] * 2
    >>> [[abs(v) for v in m.real.tolist()] for m in lap.multipliers(ax)]   # |k^2| per axis
    [[1.0, 0.0, 1.0], [1.0, 0.0, 1.0]]
    """

    def __init__(
        self, constant: complex = 0.0, derivatives: dict[int, dict[int, complex]] | None = None
    ) -> None:
        self.constant = complex(constant) if isinstance(constant, complex) else float(constant)
        self.derivatives: dict[int, dict[int, complex]] = {}
        for j, orders in (derivatives or {}).items():
            if not isinstance(j, int) or j < 0:
                raise ValueError(f"axis index must be a non-negative integer, got {j!r}")
            for m, coef in orders.items():
                if not isinstance(m, int) or m < 1:
                    raise ValueError(f"derivative order must be a positive integer, got {m!r}")
                self.derivatives.setdefault(j, {})
                self.derivatives[j][m] = self.derivatives[j].get(m, 0.0) + coef

    def __repr__(self) -> str:
        return f"SeparableOperator(constant={self.constant!r}, derivatives={self.derivatives!r})"

    # ------------------------------------------------------------ algebra
    def __add__(self, other: SeparableOperator) -> SeparableOperator:
        der = {j: dict(o) for j, o in self.derivatives.items()}
        for j, orders in other.derivatives.items():
            for m, c in orders.items():
                der.setdefault(j, {})
                der[j][m] = der[j].get(m, 0.0) + c
        return SeparableOperator(self.constant + other.constant, der)

    def __mul__(self, alpha: complex) -> SeparableOperator:
        der = {j: {m: alpha * c for m, c in o.items()} for j, o in self.derivatives.items()}
        return SeparableOperator(alpha * self.constant, der)

    __rmul__ = __mul__

    def __neg__(self) -> SeparableOperator:
        return self * -1.0

    def __sub__(self, other: SeparableOperator) -> SeparableOperator:
        return self + (-other)

    # ------------------------------------------------------------ action
    @property
    def max_axis(self) -> int:
        return max(self.derivatives, default=-1)

    def check_dim(self, dim: int) -> None:
        """Raise if the operator acts on an axis the problem does not have."""
        if self.max_axis >= dim:
            raise ValueError(
                f"dimension mismatch: operator acts on axis {self.max_axis} but there are {dim} axes"
            )

    def is_identity_free(self) -> bool:
        return self.constant == 0

    def axis_multiplier(self, axis: FourierAxis, j: int, modes: int | None = None) -> torch.Tensor:
        """``mu_j(k) = sum_m a_{j,m} (i omega k)^m`` at ``k = -K..K`` (zeros if ``L_j = 0``)."""
        k = modes if modes is not None else axis.modes
        kk = torch.arange(-k, k + 1, dtype=torch.float64).to(CDTYPE)
        out = torch.zeros(2 * k + 1, dtype=CDTYPE)
        for m, c in self.derivatives.get(j, {}).items():
            out = out + c * (1j * axis.omega * kk) ** m
        return out

    def multipliers(
        self, axes: Sequence[FourierAxis], modes: Sequence[int] | None = None
    ) -> list[torch.Tensor]:
        """Per-axis multipliers ``mu_j`` (each ``(2K_j+1,)``)."""
        self.check_dim(len(axes))
        modes = modes or [ax.modes for ax in axes]
        return [
            self.axis_multiplier(ax, j, m)
            for j, (ax, m) in enumerate(zip(axes, modes, strict=True))
        ]

    def scale(self, axes: Sequence[FourierAxis]) -> float:
        """Operator magnitude ``|c0| + sum_j max_k |mu_j(k)|`` (used for residual scaling)."""
        return abs(self.constant) + sum(float(m.abs().max()) for m in self.multipliers(axes))


def D(axis: int, order: int = 1, coef: complex = 1.0) -> SeparableOperator:
    """``coef * d^order / dz_axis^order``."""
    return SeparableOperator(0.0, {axis: {order: coef}})


def Laplacian(axes: Iterable[int], coef: complex = 1.0) -> SeparableOperator:  # noqa: N802 - operator name
    """``coef * sum_{j in axes} d^2/dz_j^2``."""
    return SeparableOperator(0.0, {j: {2: coef} for j in axes})


def Identity() -> SeparableOperator:  # noqa: N802 - operator name
    """The identity operator."""
    return SeparableOperator(1.0)


def Const(c: complex) -> SeparableOperator:  # noqa: N802 - operator name
    """``c * I``."""
    return SeparableOperator(c)
