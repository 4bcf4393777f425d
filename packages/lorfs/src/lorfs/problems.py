"""Benchmark PDE problems with exact or reference solutions (notes, Sec. B4).

Paper: Kaminsky, Freedman, Radinsky, "Overcoming PINNs Failure Modes in High Dimension with
Low-Rank Fourier Sum", ICML 2026.

Every problem is ``L u + sum_p a_p u^p = f`` on a box, with ``L`` a
:class:`~lorfs.operators.SeparableOperator`, optional initial condition ``u(t=0) = g`` and
boundary conditions given by the axis types (``periodic``, ``time``, ``dirichlet``,
``neumann``). The same :class:`Problem` drives LoRFS (closed-form pieces or exact quadrature)
and the PINN baselines (pointwise residual by autograd).

Registry (:data:`PROBLEMS`, :func:`get_problem`, :func:`build_problem`):

=====================  ====================================================  ===========================
name                   PDE                                                   reference
=====================  ====================================================  ===========================
``convection``         ``u_t + beta u_x = 0``, ``u0 = sin x``, periodic x     exact ``sin(x - beta t)``
``reaction``           ``u_t = rho u (1 - u)``, Gaussian ``u0``               exact logistic
``reaction_diffusion`` ``u_t = nu u_xx + rho u (1 - u)``                      ETDRK4 (Kassam-Trefethen)
``allen_cahn``         ``u_t = 1e-4 u_xx + 5 u - 5 u^3``, ``u0 = x^2 cos pi x``  ETDRK4 (Kassam-Trefethen)
``torus_poisson``      ``-Lap u = f`` on ``[0, 2 pi)^d``                      exact, 2 plane waves
``torus_heat``         ``u_t = Lap u / d``, ``u0 = sin(sum x_j)``             exact ``e^{-t} sin(sum x_j)``
``convection_nd``      ``u_t + (beta/d) sum_j u_{x_j} = 0``, product ``u0``   exact ``sin(sum x_j - beta t)``
``dirichlet_poisson``  ``-Lap u = f`` on ``[0, 1]^d``, ``u = 0`` on the faces ``prod_j sin(pi x_j)``
``reaction_diffusion_nd`` ``u_t = nu Lap u + rho u (1-u)``, ``u0(sum x_j)``  ETDRK4 in ``s = sum x_j``
=====================  ====================================================  ===========================
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import torch

from .basis import CDTYPE, RDTYPE, FourierAxis
from .fourier_sum import SeparableSum
from .operators import Const, D, Identity, Laplacian, SeparableOperator
from .reference import etdrk4, py_pde_solve
from .residual import (
    Piece,
    inner,
    piece_norm2,
    quadrature_point_l2,
    quadrature_residual_l2,
    sample_box,
)

BOUNDARIES = ("periodic", "time", "dirichlet", "neumann")
BASIS_FOR = {"periodic": "periodic", "time": "extension", "dirichlet": "sine", "neumann": "cosine"}
ALLOWED = {
    "periodic": {"periodic"},
    "time": {"extension"},
    "dirichlet": {"sine"},
    "neumann": {"cosine"},
}


@dataclass(frozen=True)
class AxisSpec:
    """A coordinate of the problem: name, interval and boundary type."""

    name: str
    domain: tuple[float, float]
    boundary: str = "periodic"

    def __post_init__(self) -> None:
        if self.boundary not in BOUNDARIES:
            raise ValueError(
                f"axis {self.name!r}: boundary must be one of {BOUNDARIES}, got {self.boundary!r}"
            )


DataBuilder = Callable[[list[FourierAxis]], SeparableSum]


@dataclass
class Problem:
    """A PDE ``L u + sum_p a_p u^p = f`` with its data and reference solution.

    Parameters
    ----------
    name:
        Registry name.
    specs:
        The axes (:class:`AxisSpec`); at most one has ``boundary="time"``.
    operator:
        Linear part ``L``.
    reaction:
        Nonlinear part ``{p: a_p}`` with ``p >= 2`` (empty: linear problem).
    source:
        ``axes -> [(s_1, L_1), ...]`` with ``f = sum_i L_i s_i`` (``None``: ``f = 0``).
    initial:
        ``axes -> g`` as a sum on all axes whose time factor is the constant 1.
    exact:
        ``points (N, D) -> values (N,)`` if known in closed form.
    exact_sum:
        ``axes -> u*`` as a separable sum when representable (closed-form errors).
    reference:
        ``() -> (points, values)``: a numerical reference on a grid.
    pypde:
        ``() -> (points, values)``: a second reference from py-pde
        (:func:`lorfs.reference.py_pde_solve`, the ``bench`` extra) for the nonlinear rows.
    null_space:
        ``True`` for pure-Neumann/periodic elliptic problems (constants are in the kernel): the
        source must have zero mean and the mean of ``u`` is pinned to 0.
    modes, rank:
        Default discretisation for LoRFS.

    Examples
    --------
    >>> p = get_problem("convection", beta=30)
    >>> [a.kind for a in p.make_axes()]
    ['extension', 'periodic']
    >>> p.dim, p.is_linear
    (2, True)
    """

    name: str
    specs: list[AxisSpec]
    operator: SeparableOperator
    reaction: dict[int, float] = field(default_factory=dict)
    source: Callable[[list[FourierAxis]], list[tuple[SeparableSum, SeparableOperator]]] | None = (
        None
    )
    initial: DataBuilder | None = None
    exact: Callable[[torch.Tensor], torch.Tensor] | None = None
    exact_sum: DataBuilder | None = None
    reference: Callable[[], tuple[torch.Tensor, torch.Tensor]] | None = None
    pypde: Callable[[], tuple[torch.Tensor, torch.Tensor]] | None = None
    null_space: bool = False
    modes: list[int] = field(default_factory=list)
    rank: int = 2
    description: str = ""

    def __post_init__(self) -> None:
        times = [j for j, s in enumerate(self.specs) if s.boundary == "time"]
        if len(times) > 1:
            raise ValueError(f"problem {self.name!r}: at most one time axis, got {len(times)}")
        self.time_axis = times[0] if times else None
        self.operator.check_dim(self.dim)
        if self.initial is not None and self.time_axis is None:
            raise ValueError(
                f"problem {self.name!r}: an initial condition needs an axis with boundary='time'"
            )
        for p in self.reaction:
            if not isinstance(p, int) or p < 2 or p > 3:
                raise ValueError(
                    f"problem {self.name!r}: reaction powers must be 2 or 3, got {p!r}"
                )
        if not self.modes:
            self.modes = [4] * self.dim
        if len(self.modes) != self.dim:
            raise ValueError(
                f"problem {self.name!r}: {len(self.modes)} mode counts for {self.dim} axes"
            )
        if self.null_space and self.source is not None:
            axes = self.make_axes()
            items = self.source(axes)
            mean = _mean_of_applied(items, axes)
            scale = math.prod(ax.length for ax in axes)
            norm = float(piece_norm2(Piece(items, ["integral"] * self.dim))) ** 0.5
            if abs(mean) > 1e-10 * max(1.0, norm * scale**0.5):
                raise ValueError(
                    f"problem {self.name!r}: the right-hand side has non-zero mean ({mean.real:.3g}); "
                    "-Lap u = f on a torus needs int f = 0 (constants are in the null space)"
                )

    # ------------------------------------------------------------ layout
    @property
    def dim(self) -> int:
        return len(self.specs)

    @property
    def is_linear(self) -> bool:
        return not self.reaction

    def make_axes(
        self,
        modes: Sequence[int] | int | None = None,
        kinds: Sequence[str] | None = None,
        extension: float = 2.0,
    ) -> list[FourierAxis]:
        """LoRFS axes for this problem (default basis per boundary type)."""
        if modes is None:
            modes = self.modes
        if isinstance(modes, int):
            modes = [modes] * self.dim
        if len(modes) != self.dim:
            raise ValueError(
                f"dimension mismatch: {len(modes)} mode counts for a {self.dim}-D problem {self.name!r}"
            )
        kinds = kinds or [BASIS_FOR[s.boundary] for s in self.specs]
        axes = [
            FourierAxis(s.name, s.domain, int(m), kind=k, extension=extension)
            for s, m, k in zip(self.specs, modes, kinds, strict=True)
        ]
        self.check_axes(axes)
        return axes

    def check_axes(self, axes: Sequence[FourierAxis]) -> None:
        """Raise if a model's axes do not fit this problem (dimension, domain, basis vs boundary)."""
        if len(axes) != self.dim:
            raise ValueError(
                f"dimension mismatch: the model has {len(axes)} axes, problem {self.name!r} has {self.dim}"
            )
        for s, ax in zip(self.specs, axes, strict=True):
            if abs(ax.a - s.domain[0]) > 1e-12 or abs(ax.b - s.domain[1]) > 1e-12:
                raise ValueError(
                    f"axis {s.name!r}: model domain ({ax.a:g}, {ax.b:g}) differs from the problem's {s.domain}"
                )
            if ax.kind not in ALLOWED[s.boundary]:
                what = {
                    "dirichlet": "Dirichlet conditions need the sine basis",
                    "neumann": "Neumann conditions need the cosine basis",
                }
                msg = what.get(
                    s.boundary, f"a {s.boundary} axis needs the {BASIS_FOR[s.boundary]} basis"
                )
                raise ValueError(f"axis {s.name!r}: {msg}, got kind={ax.kind!r}")

    # ------------------------------------------------------------ LoRFS losses
    def residual_scale(self, axes: Sequence[FourierAxis]) -> float:
        """Residual weight ``1 / |L|^2`` (operator magnitude), so IC and PDE terms are balanced."""
        return 1.0 / max(self.operator.scale(axes), 1e-12) ** 2

    def pieces(
        self, u: SeparableSum, ic_weight: float = 1.0, scale_residual: bool = True
    ) -> list[Piece]:
        """Closed-form loss pieces ``||L u - f||^2 [+ ic ||u(0) - g||^2] [+ |mean u|^2]`` (linear only)."""
        if not self.is_linear:
            raise ValueError(f"problem {self.name!r} is nonlinear: use nonlinear_loss()")
        axes = u.axes
        self.check_axes(axes)
        items = [(u, self.operator)]
        if self.source is not None:
            items += [(s, op * -1.0) for s, op in self.source(axes)]
        w = self.residual_scale(axes) if scale_residual else 1.0
        out = [Piece(items, ["integral"] * self.dim, weight=w, name="pde")]
        if self.initial is not None:
            g = self.initial(axes)
            meas = ["integral"] * self.dim
            meas[self.time_axis] = ("point", axes[self.time_axis].a)
            out.append(
                Piece(
                    [(u, Identity()), (g, Identity() * -1.0)],
                    meas,
                    weight=ic_weight,
                    name="initial",
                )
            )
        if self.null_space:
            out.append(Piece([(u, Identity())], ["moment"] * self.dim, weight=1.0, name="mean"))
        return out

    def nonlinear_loss(
        self, u: SeparableSum, ic_weight: float = 1.0, scale_residual: bool = True
    ) -> torch.Tensor:
        """Exact-quadrature loss of the real field (any problem with ``D <= 3``)."""
        axes = u.axes
        src = None
        if self.source is not None:
            for s, op in self.source(axes):
                if op.derivatives or op.constant != 1.0:
                    raise ValueError("nonlinear_loss needs the source as plain sums (L_f = I)")
                src = s if src is None else src + s
        w = self.residual_scale(axes) if scale_residual else 1.0
        total = w * quadrature_residual_l2(u, self.operator, self.reaction, src)
        if self.initial is not None:
            total = total + ic_weight * quadrature_point_l2(
                u, self.time_axis, axes[self.time_axis].a, self.initial(axes)
            )
        return total

    # ------------------------------------------------------------ evaluation
    def source_values(self, points: torch.Tensor) -> torch.Tensor:
        """Real ``f`` at points (for the PINN residual)."""
        if self.source is None:
            return torch.zeros(points.shape[0], dtype=points.dtype)
        from .residual import evaluate_residual

        axes = self.make_axes()
        return evaluate_residual(
            Piece(self.source(axes), ["integral"] * self.dim), points.to(RDTYPE)
        ).real.to(points.dtype)

    def initial_values(self, points: torch.Tensor) -> torch.Tensor:
        """Real ``g`` at points (time coordinate ignored)."""
        g = self.initial(self.make_axes())
        return g(points.to(RDTYPE)).to(points.dtype)

    def test_set(self, n: int = 10_000, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
        """Evaluation points and reference values (``n`` uniform points, or the reference grid)."""
        if self.exact is not None:
            pts = sample_box(self.make_axes(), n, torch.Generator().manual_seed(seed))
            return pts, self.exact(pts)
        if self.reference is not None:
            return self.reference()
        raise ValueError(f"problem {self.name!r} has no exact or reference solution")


def _mean_of_applied(
    items: list[tuple[SeparableSum, SeparableOperator]], axes: Sequence[FourierAxis]
) -> complex:
    """``int sum_i L_i s_i`` over the box (closed form)."""
    piece = Piece(items, ["integral"] * len(axes))
    from .residual import assemble

    terms = assemble(piece)
    total = 0.0
    # int prod_j (alpha or mu) phi = only k = 0 coefficients contribute on periodic axes
    for t in range(terms.alpha.shape[0]):
        base = [
            ax._integral_of_exponentials(torch.arange(-k, k + 1, dtype=RDTYPE)) @ c[t]
            for ax, c, k in zip(axes, terms.coeffs, terms.modes, strict=True)
        ]
        der = [
            ax._integral_of_exponentials(torch.arange(-k, k + 1, dtype=RDTYPE)) @ (c[t] * m[t])
            for ax, c, m, k in zip(axes, terms.coeffs, terms.mult, terms.modes, strict=True)
        ]
        val = terms.alpha[t] * math.prod(base)
        for j in range(len(axes)):
            val = val + math.prod(der[i] if i == j else base[i] for i in range(len(axes)))
        total = total + val
    return complex(total)


# ---------------------------------------------------------------- factor helpers


def exp_factor(axis: FourierAxis, k: int, coef: complex = 1.0) -> torch.Tensor:
    """Coefficients ``(1, 2|k|+1)`` of ``coef e^{i omega k (s - a)}``."""
    c = torch.zeros(1, 2 * abs(k) + 1, dtype=CDTYPE)
    c[0, abs(k) + k] = coef
    return c


def const_factor(coef: complex = 1.0, terms: int = 1) -> torch.Tensor:
    """The constant function ``coef`` as ``(terms, 1)`` coefficients."""
    return torch.full((terms, 1), coef, dtype=CDTYPE)


def sine_factor(axis: FourierAxis, m: int) -> torch.Tensor:
    """``sin(m pi (s - a) / L)`` on a sine/extension axis with period ``2L``, shape ``(1, 2m+1)``."""
    if abs(axis.period - 2 * axis.length) > 1e-12 * axis.length:
        raise ValueError(
            f"axis {axis.name!r}: sine_factor needs period 2 (b - a), got {axis.period:g}"
        )
    c = torch.zeros(1, 2 * m + 1, dtype=CDTYPE)
    c[0, 2 * m] = 1 / 2j
    c[0, 0] = -1 / 2j
    return c


# ---------------------------------------------------------------- registry

TWO_PI = 2 * math.pi


def _time_modes(beta: float, t_end: float) -> int:
    """Fourier-extension modes in time (period ``2 T``) for a wave of speed ``beta``."""
    return max(24, int(math.ceil(beta * 2 * t_end / (2 * math.pi))) + 32)


def _projected_initial(fn: Callable[[torch.Tensor], torch.Tensor], modes_x: int) -> DataBuilder:
    """``u(0, x) = fn(x)`` on axes ``(t, x)``: constant in time, FFT projection in ``x``."""

    def initial(axes):
        return SeparableSum(axes, [const_factor(), axes[1].project(fn, modes_x)[None, :]])

    return initial


def _plane_wave_initial(axes) -> SeparableSum:
    """``u(0, x) = sin(sum_j x_j) = Re(-i prod_j e^{i x_j})`` on axes ``(t, x_1, ..., x_d)`` (rank 1)."""
    return SeparableSum(
        axes,
        [const_factor()]
        + [exp_factor(ax, 1, -1j if j == 0 else 1.0) for j, ax in enumerate(axes[1:])],
    )


def _etdrk4_reference(
    u0, a: float, length: float, n: int, nu: float, reaction, t_end: float, steps: int
):
    """ETDRK4 reference (:func:`lorfs.reference.etdrk4`) on ``n`` periodic nodes of ``[a, a + length)``.

    101 output times; the evaluation set is every output time and every second node.
    """

    def ref():
        x = a + length * np.arange(n) / n
        times, u = etdrk4(u0(torch.tensor(x)).numpy(), length, nu, reaction, t_end, steps, 101)
        return _grid_reference(times, x, u, 1, 2)

    return ref


def _pypde_reference(u0, a: float, length: float, n: int, nu: float, reaction: str, t_end: float):
    """py-pde reference (:func:`lorfs.reference.py_pde_solve`) on ``n`` cell-centred nodes.

    101 output times; the evaluation set is every output time and every second node.
    """

    def ref():
        times, x, u = py_pde_solve(
            lambda v: u0(torch.tensor(v)).numpy(), a, length, n, nu, reaction, t_end
        )
        return _grid_reference(times, x, u, 1, 2)

    return ref


def convection(beta: float = 30.0, t_end: float = 1.0) -> Problem:
    """``u_t + beta u_x = 0`` on ``[0, 2 pi)``, ``u0 = sin x``; exact ``sin(x - beta t)``."""
    if beta < 0:
        raise ValueError(f"convection: beta must be >= 0, got {beta}")
    specs = [AxisSpec("t", (0.0, t_end), "time"), AxisSpec("x", (0.0, TWO_PI), "periodic")]

    def initial(axes):  # complex lift of sin x: Re(-i e^{ix}) = sin x
        return SeparableSum(axes, [const_factor(), exp_factor(axes[1], 1, -1j)])

    def exact(p):
        return torch.sin(p[:, 1] - beta * p[:, 0])

    k_t = _time_modes(beta, t_end)
    return Problem(
        f"convection(beta={beta:g})",
        specs,
        D(0) + D(1, 1, beta),
        initial=initial,
        exact=exact,
        modes=[k_t, 4],
        rank=2,
        description="1-D convection, the classic PINN failure mode",
    )


def _gaussian(x: torch.Tensor) -> torch.Tensor:
    return torch.exp(-((x - math.pi) ** 2) / (2 * (math.pi / 4) ** 2))


def reaction(rho: float = 5.0, t_end: float = 1.0, modes_x: int = 24) -> Problem:
    """``u_t = rho u (1 - u)``, ``u0`` Gaussian; exact ``h e^{rho t} / (h e^{rho t} + 1 - h)``."""
    specs = [AxisSpec("t", (0.0, t_end), "time"), AxisSpec("x", (0.0, TWO_PI), "periodic")]

    initial = _projected_initial(_gaussian, modes_x)

    def exact(p):
        h = _gaussian(p[:, 1])
        e = torch.exp(rho * p[:, 0])
        return h * e / (h * e + 1 - h)

    return Problem(
        f"reaction(rho={rho:g})",
        specs,
        D(0) + Const(-rho),
        reaction={2: rho},
        initial=initial,
        exact=exact,
        pypde=_pypde_reference(_gaussian, 0.0, TWO_PI, 1024, 0.0, f"{rho!r} * u * (1 - u)", t_end),
        modes=[16, modes_x],
        rank=4,
        description="logistic reaction, a PINN failure mode",
    )


def _grid_reference(times: np.ndarray, x: np.ndarray, u: np.ndarray, stride_t: int, stride_x: int):
    tt, xx = np.meshgrid(times[::stride_t], x[::stride_x], indexing="ij")
    pts = torch.tensor(np.stack([tt.ravel(), xx.ravel()], 1), dtype=RDTYPE)
    vals = torch.tensor(u[::stride_t, ::stride_x].ravel(), dtype=RDTYPE)
    return pts, vals


def reaction_diffusion(
    nu: float = 3.0, rho: float = 5.0, t_end: float = 1.0, modes_x: int = 24
) -> Problem:
    """``u_t = nu u_xx + rho u (1 - u)`` on ``[0, 2 pi)``, Gaussian ``u0``; ETDRK4 reference."""
    specs = [AxisSpec("t", (0.0, t_end), "time"), AxisSpec("x", (0.0, TWO_PI), "periodic")]

    initial = _projected_initial(_gaussian, modes_x)
    ref = _etdrk4_reference(
        _gaussian, 0.0, TWO_PI, 256, nu, lambda v: rho * v * (1 - v), t_end, 2000
    )

    return Problem(
        f"reaction_diffusion(nu={nu:g},rho={rho:g})",
        specs,
        D(0) + Laplacian([1], -nu) + Const(-rho),
        reaction={2: rho},
        initial=initial,
        reference=ref,
        pypde=_pypde_reference(_gaussian, 0.0, TWO_PI, 1024, nu, f"{rho!r} * u * (1 - u)", t_end),
        modes=[16, modes_x],
        rank=4,
        description="reaction-diffusion",
    )


def allen_cahn(eps: float = 1e-4, a: float = 5.0, t_end: float = 1.0, modes_x: int = 64) -> Problem:
    """``u_t = eps u_xx + a u - a u^3`` on ``[-1, 1)`` periodic, ``u0 = x^2 cos(pi x)``; ETDRK4 reference."""
    specs = [AxisSpec("t", (0.0, t_end), "time"), AxisSpec("x", (-1.0, 1.0), "periodic")]

    def u0(x):
        return x**2 * torch.cos(math.pi * x)

    initial = _projected_initial(u0, modes_x)
    ref = _etdrk4_reference(u0, -1.0, 2.0, 512, eps, lambda v: a * (v - v**3), t_end, 2000)

    return Problem(
        f"allen_cahn(eps={eps:g})",
        specs,
        D(0) + Laplacian([1], -eps) + Const(-a),
        reaction={3: a},
        initial=initial,
        reference=ref,
        pypde=_pypde_reference(u0, -1.0, 2.0, 2048, eps, f"{a!r} * (u - u**3)", t_end),
        modes=[16, modes_x],
        rank=6,
        description="Allen-Cahn",
    )


def _waves(axes, k1: Sequence[int], k2: Sequence[int]) -> SeparableSum:
    """``sin(k1 . x) + cos(k2 . x)`` as a rank-2 complex sum."""
    f1 = [
        exp_factor(ax, k, -1j if j == 0 else 1.0)
        for j, (ax, k) in enumerate(zip(axes, k1, strict=True))
    ]
    f2 = [exp_factor(ax, k) for ax, k in zip(axes, k2, strict=True)]
    kmax = [max(abs(a), abs(b)) for a, b in zip(k1, k2, strict=True)]
    return SeparableSum(axes, f1).padded(kmax) + SeparableSum(axes, f2).padded(kmax)


def torus_poisson(d: int = 10, source_mean: float = 0.0) -> Problem:
    """``-Lap u = f`` on ``[0, 2 pi)^d``; exact ``u = sin(sum_j x_j) + cos(2 sum_j (-1)^j x_j)`` (rank 2).

    ``source_mean`` adds a constant to ``f`` (only to demonstrate the null-space check: any
    non-zero value is rejected).
    """
    if d < 1:
        raise ValueError(f"torus_poisson: d must be >= 1, got {d}")
    specs = [AxisSpec(f"x{j}", (0.0, TWO_PI), "periodic") for j in range(d)]
    k1 = [1] * d
    k2 = [2 * (-1) ** j for j in range(d)]

    def exact_sum(axes):
        return _waves(axes, k1, k2)

    def source(axes):
        items = [(exact_sum(axes), Laplacian(range(d), -1.0))]
        if source_mean:
            items.append(
                (
                    SeparableSum(axes, [const_factor(source_mean)] + [const_factor()] * (d - 1)),
                    Identity(),
                )
            )
        return items

    def exact(p):
        k2t = torch.tensor(k2, dtype=p.dtype)
        return torch.sin(p.sum(1)) + torch.cos(p @ k2t)

    return Problem(
        f"torus_poisson(d={d})",
        specs,
        Laplacian(range(d), -1.0),
        source=source,
        exact=exact,
        exact_sum=exact_sum,
        null_space=True,
        modes=[2] * d,
        rank=2,
        description="Poisson on the d-torus",
    )


def torus_heat(d: int = 10, t_end: float = 1.0) -> Problem:
    """``u_t = (1/d) Lap u`` on ``[0, 2 pi)^d``, ``u0 = sin(sum x_j)``; exact ``e^{-t} sin(sum x_j)``."""
    specs = [AxisSpec("t", (0.0, t_end), "time")] + [
        AxisSpec(f"x{j}", (0.0, TWO_PI), "periodic") for j in range(d)
    ]

    initial = _plane_wave_initial

    def exact(p):
        return torch.exp(-p[:, 0]) * torch.sin(p[:, 1:].sum(1))

    return Problem(
        f"torus_heat(d={d})",
        specs,
        D(0) + Laplacian(range(1, d + 1), -1.0 / d),
        initial=initial,
        exact=exact,
        modes=[12] + [1] * d,
        rank=1,
        description="heat equation on the d-torus",
    )


def convection_nd(d: int = 10, beta: float = 30.0, t_end: float = 1.0) -> Problem:
    """``u_t + (beta/d) sum_j u_{x_j} = 0``, ``u0 = sin(sum x_j) = Im prod_j e^{i x_j}``; exact ``sin(sum x_j - beta t)``."""
    specs = [AxisSpec("t", (0.0, t_end), "time")] + [
        AxisSpec(f"x{j}", (0.0, TWO_PI), "periodic") for j in range(d)
    ]
    op = D(0)
    for j in range(1, d + 1):
        op = op + D(j, 1, beta / d)

    initial = _plane_wave_initial

    def exact(p):
        return torch.sin(p[:, 1:].sum(1) - beta * p[:, 0])

    k_t = _time_modes(beta, t_end)
    return Problem(
        f"convection_nd(d={d},beta={beta:g})",
        specs,
        op,
        initial=initial,
        exact=exact,
        modes=[k_t] + [1] * d,
        rank=1,
        description="high-dimensional convection",
    )


def reaction_diffusion_nd(
    d: int = 10,
    nu: float = 0.01,
    rho: float = 3.0,
    t_end: float = 1.0,
    mean: float = 0.3,
    amplitude: float = 0.2,
    modes_x: int = 8,
) -> Problem:
    """``u_t = nu Lap u + rho u (1 - u)`` on ``[0, 2 pi)^d``, ``u0 = mean + amplitude sin(sum_j x_j)``.

    The solution stays a function of ``s = sum_j x_j``: ``u = v(t, s)`` with
    ``v_t = nu d v_ss + rho v (1 - v)`` on a period ``2 pi``, which the reference solves by
    ETDRK4 on 256 nodes (:func:`lorfs.reference.etdrk4`) and evaluates at 4000 random points of
    the box by trigonometric interpolation in ``s``; the second reference (``pypde``) is the same
    1-D problem solved by py-pde on 512 nodes. LoRFS does not know this: it works on all
    ``d + 1`` axes, and the nonlinear term ``u^2`` is formed by coefficient convolutions in ``d``
    dimensions (:mod:`lorfs.time_slabs`).
    """
    specs = [AxisSpec("t", (0.0, t_end), "time")] + [
        AxisSpec(f"x{j}", (0.0, TWO_PI), "periodic") for j in range(d)
    ]

    def initial(axes):
        const = SeparableSum(axes, [const_factor(mean)] + [const_factor() for _ in axes[1:]])
        return const + _plane_wave_initial(axes).scaled(amplitude)

    def on_points(times, x, v):
        # the box points are fixed by the seed, so both references see the same points
        gen = np.random.default_rng(0)
        m = 4000
        it = gen.integers(0, times.shape[0], m)
        pts = np.concatenate([times[it, None], gen.uniform(0.0, TWO_PI, (m, d))], 1)
        n = x.shape[0]
        coef = np.fft.fft(v[it], axis=1) / n  # (m, n) on the nodes x_0 + i h
        k = np.fft.fftfreq(n, d=1.0 / n)
        ssum = pts[:, 1:].sum(1) - x[0]
        vals = np.real((coef * np.exp(1j * k[None, :] * ssum[:, None])).sum(1))
        return torch.tensor(pts, dtype=RDTYPE), torch.tensor(vals, dtype=RDTYPE)

    def ref():
        n = 256
        x = TWO_PI * np.arange(n) / n
        times, v = etdrk4(
            mean + amplitude * np.sin(x),
            TWO_PI,
            nu * d,
            lambda w: rho * w * (1 - w),
            t_end,
            1000,
            101,
        )
        return on_points(times, x, v)

    def pypde():
        times, x, v = py_pde_solve(
            lambda y: mean + amplitude * np.sin(y),
            0.0,
            TWO_PI,
            512,
            nu * d,
            f"{rho!r} * u * (1 - u)",
            t_end,
        )
        return on_points(times, x, v)

    return Problem(
        f"reaction_diffusion_nd(d={d},nu={nu:g},rho={rho:g})",
        specs,
        D(0) + Laplacian(range(1, d + 1), -nu) + Const(-rho),
        reaction={2: rho},
        initial=initial,
        reference=ref,
        pypde=pypde,
        modes=[6] + [modes_x] * d,
        rank=8,
        description="Fisher-KPP reaction-diffusion on the d-torus",
    )


def dirichlet_poisson(d: int = 3) -> Problem:
    """``-Lap u = f`` on ``[0, 1]^d``, ``u = 0`` on the boundary; exact ``u = prod_j sin(pi x_j)``."""
    specs = [AxisSpec(f"x{j}", (0.0, 1.0), "dirichlet") for j in range(d)]

    def exact_sum(axes):
        return SeparableSum(axes, [sine_factor(ax, 1) for ax in axes])

    def source(axes):
        return [(exact_sum(axes), Laplacian(range(d), -1.0))]

    def exact(p):
        return torch.sin(math.pi * p).prod(1)

    return Problem(
        f"dirichlet_poisson(d={d})",
        specs,
        Laplacian(range(d), -1.0),
        source=source,
        exact=exact,
        exact_sum=exact_sum,
        modes=[2] * d,
        rank=1,
        description="Poisson with Dirichlet conditions on the unit cube",
    )


PROBLEMS: dict[str, Callable[..., Problem]] = {
    "convection": convection,
    "reaction": reaction,
    "reaction_diffusion": reaction_diffusion,
    "allen_cahn": allen_cahn,
    "torus_poisson": torus_poisson,
    "torus_heat": torus_heat,
    "convection_nd": convection_nd,
    "dirichlet_poisson": dirichlet_poisson,
    "reaction_diffusion_nd": reaction_diffusion_nd,
}


def get_problem(name: str, **kwargs) -> Problem:
    """Build a registered problem, e.g. ``get_problem("convection", beta=50)``.

    Integral-valued floats are accepted for integer parameters (``d=10.0``), as YAML gives them.
    """
    if name not in PROBLEMS:
        raise ValueError(f"unknown problem {name!r}; choose from {', '.join(PROBLEMS)}")
    if "d" in kwargs:
        d = kwargs["d"]
        if isinstance(d, bool) or not float(d).is_integer() or int(d) < 1:
            raise ValueError(f"problem {name!r}: d must be a positive integer, got {d!r}")
        kwargs["d"] = int(d)
    try:
        return PROBLEMS[name](**kwargs)
    except TypeError as exc:
        raise ValueError(f"problem {name!r}: bad parameters {kwargs}: {exc}") from exc


def build_problem(problem: str, params: Mapping[str, float] | None = None) -> Problem:
    """The registry problem ``problem`` with keyword parameters ``params`` (a mapping, as YAML gives it).

    >>> build_problem("convection", {"beta": 30}).name
    'convection(beta=30)'
    """
    return get_problem(problem, **dict(params or {}))


def relative_error_on(
    problem: Problem,
    predict: Callable[[torch.Tensor], torch.Tensor],
    n: int = 10_000,
    seed: int = 0,
) -> float:
    """Relative L2 error of ``predict`` against the problem's exact/reference values on its test set."""
    pts, ref = problem.test_set(n, seed)
    with torch.no_grad():
        pred = predict(pts).reshape(-1).to(RDTYPE)
    return float((pred - ref).norm() / ref.norm())


__all__ = [
    "PROBLEMS",
    "AxisSpec",
    "Problem",
    "get_problem",
    "inner",
    "relative_error_on",
]
