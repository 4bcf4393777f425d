"""Closed-form physics losses of LoRFS (no sampling), and a Monte-Carlo estimator for comparison.

Paper: Kaminsky, Freedman, Radinsky, "Overcoming PINNs Failure Modes in High Dimension with
Low-Rank Fourier Sum", ICML 2026.

A *piece* of the loss is ``weight * || sum_i L_i s_i ||^2`` where each ``s_i`` is a
:class:`~lorfs.fourier_sum.SeparableSum` and ``L_i = c_i I + sum_j L_{i,j}`` a
:class:`~lorfs.operators.SeparableOperator`; the norm integrates over the box, evaluates at a
point (initial conditions: ``u(0, .)``) or takes the mean (``|mean .|^2``), axis by axis.

All integrals are with respect to the **normalised** (probability) measure ``dz / |Omega|`` of
the box, i.e. ``||h||^2`` here is the mean of ``|h|^2``: this keeps ``d = 1000`` tori (volume
``(2 pi)^1000``) in floating-point range and leaves relative errors unchanged.

Map to the method (notes, Sec. B1):

- per-axis 1-D quantities ``g^{ab}_j[t, s]`` (``a``/``b``: operator part on the left/right) ... :func:`axis_polynomial`
- 4-state recursion over coordinates, the coefficient of ``ab`` in
  ``prod_j (G00 + a G10 + b G01 + ab G11)`` .......................................... :func:`poly_mul`, :func:`pair_states`
- ``||Lu - f||^2 = sum_{ts} (c_t conj(c_s) S0 + conj(c_s) S1 + c_t S2 + S3)``; cost ``O(T^2 D K)`` ...... :func:`piece_norm2`
- ``||Re h||^2 = 1/2 ||h||^2 + 1/2 Re int h^2`` (unconjugated Grams) ......................... ``real=True``
- brute-force enumeration of the ``T (D + 1)`` separable terms (test oracle) ............... :func:`expand_terms`
- Ritz energy ``1/2 sum_j ||d_j u||^2 + c/2 ||u||^2 - Re <f, u>`` (2-state recursion) ........ :func:`ritz_energy`
- Monte-Carlo collocation estimator of the same norm (what a PINN optimises) ................ :func:`mc_norm2`
- exact tensor quadrature for nonlinear residuals (``u^2``, ``u^3``) in low dimension ........ :func:`quadrature_residual_l2`
"""

from __future__ import annotations

import math
import string
from collections.abc import Sequence
from dataclasses import dataclass, field

import torch

from .basis import CDTYPE, RDTYPE, FourierAxis
from .coefficients import pad_modes
from .fourier_sum import SeparableSum
from .operators import Identity, SeparableOperator

Measure = str | tuple  # "integral" | ("point", s0) | "moment"


@dataclass
class Piece:
    """One quadratic term ``weight * || sum_i L_i s_i ||^2`` of a LoRFS loss.

    ``measures[j]`` is ``"integral"`` (integrate over axis ``j``), ``("point", s0)`` (evaluate at
    ``s0``) or ``"moment"`` (``|mean_j .|^2``: pins the mean of a torus solution). Integrals use
    the normalised measure ``ds / length`` on each axis.
    ``unknown`` is the index of the item that holds the unknown field (for ALS).
    """

    items: list[tuple[SeparableSum, SeparableOperator]]
    measures: list[Measure]
    weight: float = 1.0
    unknown: int | None = 0
    name: str = ""

    def __post_init__(self) -> None:
        dims = {s.dim for s, _ in self.items}
        if len(dims) != 1 or dims != {len(self.measures)}:
            raise ValueError(
                f"dimension mismatch in loss piece {self.name!r}: sums {sorted(dims)}, measures {len(self.measures)}"
            )
        for _, op in self.items:
            op.check_dim(len(self.measures))

    @property
    def axes(self) -> list[FourierAxis]:
        return self.items[0][0].axes

    def with_unknown(self, s: SeparableSum) -> Piece:
        """The same piece with the unknown item's sum replaced by ``s``."""
        items = list(self.items)
        items[self.unknown] = (s, items[self.unknown][1])
        return Piece(items, self.measures, self.weight, self.unknown, self.name)


@dataclass
class Terms:
    """All rank-one terms of a piece on common modes: coefficients, constants and multipliers."""

    coeffs: list[torch.Tensor]  # per axis (T, n_j)
    alpha: torch.Tensor  # (T,)
    mult: list[torch.Tensor]  # per axis (T, n_j)
    modes: list[int]
    owner: torch.Tensor = field(
        default_factory=lambda: torch.zeros(0, dtype=torch.long)
    )  # (T,) item index


def common_modes(piece: Piece) -> list[int]:
    return [max(s.modes[j] for s, _ in piece.items) for j in range(len(piece.measures))]


def assemble(piece: Piece, modes: Sequence[int] | None = None) -> Terms:
    """Stack the piece's terms on common per-axis modes."""
    modes = list(modes or common_modes(piece))
    axes = piece.axes
    coeffs, mults, alphas, owners = [[] for _ in axes], [[] for _ in axes], [], []
    for i, (s, op) in enumerate(piece.items):
        t = s.rank
        alphas.append(torch.full((t,), op.constant, dtype=CDTYPE))
        owners.append(torch.full((t,), i, dtype=torch.long))
        for j, ax in enumerate(axes):
            coeffs[j].append(pad_modes(s.factors[j], modes[j]))
            mults[j].append(op.axis_multiplier(ax, j, modes[j]).expand(t, -1))
    return Terms(
        coeffs=[torch.cat(c) for c in coeffs],
        alpha=torch.cat(alphas),
        mult=[torch.cat(m) for m in mults],
        modes=modes,
        owner=torch.cat(owners),
    )


def axis_gram(axis: FourierAxis, measure: Measure, modes: int, conj: bool = True) -> torch.Tensor:
    """Gram of one axis under ``measure``: ``(n,)`` if diagonal, else ``(n, n)``."""
    if measure == "integral":
        if axis.kind == "periodic":
            kk = torch.arange(-modes, modes + 1)
            if conj:
                return torch.ones(2 * modes + 1, dtype=CDTYPE)
            g = torch.zeros(2 * modes + 1, 2 * modes + 1, dtype=CDTYPE)
            g[kk + modes, -kk + modes] = 1.0
            return g
        return axis.gram(conj=conj, modes=modes) / axis.length
    if measure == "moment":
        m = (
            axis._integral_of_exponentials(torch.arange(-modes, modes + 1, dtype=RDTYPE))
            / axis.length
        )
        return m[:, None] * (m.conj() if conj else m)[None, :]
    if isinstance(measure, tuple) and measure[0] == "point":
        e = axis.basis_matrix(torch.tensor([float(measure[1])]), modes)[0]
        return e[:, None] * (e.conj() if conj else e)[None, :]
    raise ValueError(f"unknown measure {measure!r}")


def _bil(a: torch.Tensor, g: torch.Tensor, b: torch.Tensor, conj: bool) -> torch.Tensor:
    """``a G b^H`` (or ``a G b^T``) for ``a: (T, n)``, ``b: (S, n)``, ``G: (n,)|(n, n)`` -> ``(T, S)``."""
    bb = b.conj() if conj else b
    if g.dim() == 1:
        return (a * g) @ bb.T
    return a @ g @ bb.T


def axis_polynomial(
    left: tuple[torch.Tensor, torch.Tensor],
    right: tuple[torch.Tensor, torch.Tensor],
    g: torch.Tensor,
    conj: bool = True,
) -> torch.Tensor:
    """``(g00, g10, g01, g11)`` of one axis, shape ``(4, T, S)``: ``a``/``b`` marks ``L_j`` applied left/right."""
    c, mu = left
    d, nu = right
    cl, cr = c * mu, d * nu
    return torch.stack(
        [_bil(c, g, d, conj), _bil(cl, g, d, conj), _bil(c, g, cr, conj), _bil(cl, g, cr, conj)]
    )


def poly_mul(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """Product of ``p0 + a p1 + b p2 + ab p3`` and ``q`` modulo ``a^2 = b^2 = 0`` (elementwise over pairs)."""
    return torch.stack(
        [
            p[0] * q[0],
            p[1] * q[0] + p[0] * q[1],
            p[2] * q[0] + p[0] * q[2],
            p[3] * q[0] + p[1] * q[2] + p[2] * q[1] + p[0] * q[3],
        ]
    )


def pair_states(terms: Terms, grams: Sequence[torch.Tensor], conj: bool = True) -> torch.Tensor:
    """The four recursion states ``S0..S3`` for every pair of terms, shape ``(4, T, T)``."""
    state = None
    for c, mu, g in zip(terms.coeffs, terms.mult, grams, strict=True):
        p = axis_polynomial((c, mu), (c, mu), g, conj)
        state = p if state is None else poly_mul(state, p)
    return state


def combine(
    states: torch.Tensor, alpha_l: torch.Tensor, alpha_r: torch.Tensor, conj: bool = True
) -> torch.Tensor:
    """``sum_{ts} (a_t conj(a_s) S0 + conj(a_s) S1 + a_t S2 + S3)``."""
    ar = alpha_r.conj() if conj else alpha_r
    al = alpha_l
    return (
        (al[:, None] * ar[None, :] * states[0]).sum()
        + (ar[None, :] * states[1]).sum()
        + (al[:, None] * states[2]).sum()
        + states[3].sum()
    )


def piece_grams(piece: Piece, modes: Sequence[int], conj: bool = True) -> list[torch.Tensor]:
    return [
        axis_gram(ax, m, k, conj)
        for ax, m, k in zip(piece.axes, piece.measures, modes, strict=True)
    ]


def piece_norm2(piece: Piece, real: bool = False) -> torch.Tensor:
    """Closed-form ``weight * ||h||^2`` of a piece (``real=True``: ``||Re h||^2``), a real scalar."""
    terms = assemble(piece)
    herm = combine(
        pair_states(terms, piece_grams(piece, terms.modes)), terms.alpha, terms.alpha
    ).real
    if real:
        bil = combine(
            pair_states(terms, piece_grams(piece, terms.modes, conj=False), conj=False),
            terms.alpha,
            terms.alpha,
            conj=False,
        )
        herm = 0.5 * herm + 0.5 * bil.real
    return piece.weight * herm


def loss(pieces: Sequence[Piece], real: bool = False) -> torch.Tensor:
    """Sum of the closed-form pieces."""
    return sum((piece_norm2(p, real) for p in pieces), torch.zeros((), dtype=RDTYPE))


# ---------------------------------------------------------------- plain norms and errors


def l2_norm2(s: SeparableSum, real: bool = True) -> torch.Tensor:
    """``||Re s||^2`` (or ``||s||^2``) over the box, closed form."""
    return piece_norm2(Piece([(s, Identity())], ["integral"] * s.dim), real=real)


def relative_l2_error(u: SeparableSum, reference: SeparableSum) -> float:
    """``||Re(u - ref)|| / ||Re ref||`` in closed form (no sampling)."""
    with torch.no_grad():
        num = l2_norm2(u - reference).clamp_min(0.0)
        den = l2_norm2(reference)
    return float(num.sqrt() / den.sqrt())


def inner(a: SeparableSum, b: SeparableSum) -> torch.Tensor:
    """``<a, b> = int a conj(b)`` over the box (complex)."""
    modes = [max(p, q) for p, q in zip(a.modes, b.modes, strict=True)]
    a, b = a.padded(modes), b.padded(modes)
    out = None
    for ax, fa, fb, k in zip(a.axes, a.factors, b.factors, modes, strict=True):
        g = _bil(fa, axis_gram(ax, "integral", k), fb, True)
        out = g if out is None else out * g
    return out.sum()


# ---------------------------------------------------------------- brute force (test oracle)


def expand_terms(piece: Piece) -> SeparableSum:
    """``sum_i L_i s_i`` written out as ``T (D + 1)`` separable terms (no recursion)."""
    terms = assemble(piece)
    axes = piece.axes
    d = len(axes)
    blocks = [[c * terms.alpha[:, None] if j == 0 else c for j, c in enumerate(terms.coeffs)]]
    for j in range(d):
        blocks.append(
            [terms.coeffs[i] * terms.mult[i] if i == j else terms.coeffs[i] for i in range(d)]
        )
    return SeparableSum(axes, [torch.cat([blk[j] for blk in blocks]) for j in range(d)])


def brute_force_norm2(piece: Piece) -> torch.Tensor:
    """``||h||^2`` by enumerating all pairs of the expanded terms (``O(T^2 D^3 K)``)."""
    full = expand_terms(piece)
    grams = piece_grams(piece, full.modes)
    out = None
    for c, g in zip(full.factors, grams, strict=True):
        p = _bil(c, g, c, True)
        out = p if out is None else out * p
    return piece.weight * out.sum().real


# ---------------------------------------------------------------- Ritz energy


def ritz_energy(u: SeparableSum, reaction: float, source: SeparableSum) -> torch.Tensor:
    """``E(u) = 1/2 sum_j ||d_j u||^2 + c/2 ||u||^2 - Re <f, u>`` for ``-Lap u + c u = f``.

    Computed with the 2-state recursion ``S1 <- S1 g00 + S0 g11, S0 <- S0 g00``; its minimiser
    over the span is the Galerkin solution (complex inner products).
    """
    s0 = s1 = None
    for j, (ax, c) in enumerate(zip(u.axes, u.factors, strict=True)):
        k = u.modes[j]
        g = axis_gram(ax, "integral", k)
        mu = (
            ax.multiplier(1)
            if k == ax.modes
            else (1j * ax.omega * torch.arange(-k, k + 1, dtype=RDTYPE))
        )
        g00 = _bil(c, g, c, True)
        g11 = _bil(c * mu, g, c * mu, True)
        if s0 is None:
            s0, s1 = g00, g11
        else:
            s0, s1 = s0 * g00, s1 * g00 + s0 * g11
    return 0.5 * s1.sum().real + 0.5 * reaction * s0.sum().real - inner(source, u).real


# ---------------------------------------------------------------- Monte Carlo


def evaluate_residual(piece: Piece, points: torch.Tensor) -> torch.Tensor:
    """Pointwise ``h(z) = sum_i (L_i s_i)(z)`` (complex), ``points: (N, D) -> (N,)``, cost ``O(T D N)``."""
    terms = assemble(piece)
    p0 = p1 = None
    for j, ax in enumerate(piece.axes):
        e0 = ax.evaluate(terms.coeffs[j], points[:, j])  # (T, N)
        e1 = ax.evaluate(terms.coeffs[j] * terms.mult[j], points[:, j])
        if p0 is None:
            p0, p1 = e0, e1
        else:
            p0, p1 = p0 * e0, p1 * e0 + p0 * e1
    return (terms.alpha[:, None] * p0 + p1).sum(0)


def sample_box(
    axes: Sequence[FourierAxis], n: int, generator: torch.Generator | None = None
) -> torch.Tensor:
    """``n`` uniform points in the box, ``(n, D)``."""
    lo = torch.tensor([ax.a for ax in axes], dtype=RDTYPE)
    hi = torch.tensor([ax.b for ax in axes], dtype=RDTYPE)
    return lo + (hi - lo) * torch.rand(n, len(axes), dtype=RDTYPE, generator=generator)


def mc_norm2(
    piece: Piece, n: int, generator: torch.Generator | None = None, real: bool = False
) -> tuple[torch.Tensor, torch.Tensor]:
    """Monte-Carlo estimate of ``weight * ||h||^2`` (``real=True``: ``||Re h||^2``) with ``n`` uniform points.

    Returns ``(estimate, standard_error)``. Only for pieces integrating over every axis.
    """
    if any(m != "integral" for m in piece.measures):
        raise ValueError("mc_norm2 needs a piece that integrates over every axis")
    axes = piece.axes
    h = evaluate_residual(piece, sample_box(axes, n, generator))
    vals = (h.real**2 if real else h.abs() ** 2) * piece.weight
    return vals.mean(), vals.std() / math.sqrt(n)


# ---------------------------------------------------------------- exact quadrature (nonlinear)


def _grid_apply(mats: list[torch.Tensor]) -> torch.Tensor:
    letters = string.ascii_letters[: len(mats)]
    spec = ",".join(f"Z{c}" for c in letters) + "->" + letters
    return torch.einsum(spec, *mats)


def quadrature_rule(
    axes: Sequence[FourierAxis], degrees: Sequence[int]
) -> tuple[list[torch.Tensor], torch.Tensor]:
    """Per-axis exact nodes and the tensor weight array ``(N_1, ..., N_D)`` (normalised measure)."""
    nodes, weights = zip(
        *(ax.exact_quadrature(q) for ax, q in zip(axes, degrees, strict=True)), strict=True
    )
    w = _grid_apply(
        [(wj / ax.length)[None, :].to(CDTYPE) for wj, ax in zip(weights, axes, strict=True)]
    ).real
    return list(nodes), w


def grid_values(
    u: SeparableSum, nodes: Sequence[torch.Tensor], op: SeparableOperator | None = None
) -> torch.Tensor:
    """Real values of ``Re(L u)`` (``L = I`` if ``op`` is None) on the tensor grid of ``nodes``."""
    base = [
        ax.evaluate(f, s) for ax, f, s in zip(u.axes, u.factors, nodes, strict=True)
    ]  # (T, N_j)
    if op is None:
        return _grid_apply(base).real
    out = op.constant * _grid_apply(base) if op.constant != 0 else None
    for j, (ax, f, s) in enumerate(zip(u.axes, u.factors, nodes, strict=True)):
        if j not in op.derivatives:
            continue
        mats = list(base)
        mats[j] = ax.evaluate(f * op.axis_multiplier(ax, j, u.modes[j]), s)
        v = _grid_apply(mats)
        out = v if out is None else out + v
    return out.real


def quadrature_residual_l2(
    u: SeparableSum,
    operator: SeparableOperator,
    reaction: dict[int, float] | None = None,
    source: SeparableSum | None = None,
    degrees: Sequence[int] | None = None,
) -> torch.Tensor:
    """``int (L Re u + sum_p a_p (Re u)^p - f)^2`` by exact tensor quadrature (small ``D``).

    With ``degrees[j] >= 2 p_max K_j`` the rule is exact (the integrand is a trig polynomial of
    that degree in each variable), so the value equals the closed form of the expanded
    products, with no sampling noise.
    """
    reaction = reaction or {}
    if u.dim > 3:
        raise ValueError(
            f"quadrature_residual_l2 is meant for D <= 3 (tensor grid), got D = {u.dim}"
        )
    pmax = max([1, *reaction])
    if degrees is None:
        fm = source.modes if source is not None else [0] * u.dim
        degrees = [2 * max(pmax * k, q) for k, q in zip(u.modes, fm, strict=True)]
    nodes, w = quadrature_rule(u.axes, degrees)
    val = grid_values(u, nodes)
    res = grid_values(u, nodes, operator)
    for p, a in reaction.items():
        res = res + a * val**p
    if source is not None:
        res = res - grid_values(source, nodes)
    return (w * res**2).sum()


def quadrature_point_l2(
    u: SeparableSum,
    axis: int,
    s0: float,
    target: SeparableSum,
    degrees: Sequence[int] | None = None,
) -> torch.Tensor:
    """``int (Re u(.., s0, ..) - Re g)^2`` over the other axes by exact quadrature (initial conditions)."""
    others = [j for j in range(u.dim) if j != axis]
    if degrees is None:
        degrees = [2 * max(u.modes[j], target.modes[j]) for j in others]
    rule = [u.axes[j].exact_quadrature(q) for j, q in zip(others, degrees, strict=True)]
    nodes = []
    it = iter(rule)
    for j in range(u.dim):
        nodes.append(torch.tensor([float(s0)], dtype=RDTYPE) if j == axis else next(it)[0])
    w = _grid_apply(
        [(r[1] / u.axes[j].length)[None, :].to(CDTYPE) for r, j in zip(rule, others, strict=True)]
    ).real
    diff = (grid_values(u, nodes) - grid_values(target, nodes)).squeeze(axis)
    return (w * diff**2).sum()
