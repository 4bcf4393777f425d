"""Block Gauss-Newton (Levenberg-Marquardt) for nonlinear PDEs in LoRFS form (``D <= 3``).

Paper: Kaminsky, Freedman, Radinsky, "Overcoming PINNs Failure Modes in High Dimension with
Low-Rank Fourier Sum", ICML 2026.

For ``L u + sum_p a_p u^p = f`` (reaction, reaction-diffusion, Allen-Cahn) the loss is no
longer quadratic in a coordinate block, so the exact ALS of :mod:`lorfs.als` does not apply.
The notes (Sec. B1, "Optimization") suggest Gauss-Newton per block; this module implements it
with the *analytic* Jacobian of a separable sum (no autograd through the grid):

- residual vector ``r = sqrt(w) (L Re u + sum_p a_p (Re u)^p - f)`` on a tensor quadrature grid
  (positive weights: trapezoid on periodic axes, Gauss-Legendre on the others, both with enough
  nodes for the trig-polynomial integrand) plus ``sqrt(lambda w_x) (Re u(0, x) - g)`` for the
  initial condition ........................................................ :func:`residual_grids`
- block Jacobian ``dr / dc_{r,j,k} = ((c0 + mu_{jk}) P_r + Q_r + p a_p u^{p-1} P_r) e_k(z_j)`` with
  ``P_r = prod_{i != j} phi_{r,i}`` and ``Q_r = sum_{i != j} (L_i phi_{r,i}) prod_{l != i, j} phi_{r,l}``
  ........................................................................ :func:`block_jacobian`
- Levenberg-Marquardt steps on one block at a time, accepted only when the loss decreases, so
  the loss is monotone .................................................... :func:`gauss_newton_solve`
- the start: term 0 at the initial condition held constant in time, the others small and
  random (a random start converges to poor local minima) ............... :func:`initial_condition_start`
"""

from __future__ import annotations

import math
import string
from dataclasses import dataclass, field

import numpy as np
import torch

from .basis import CDTYPE, RDTYPE, FourierAxis
from .fourier_sum import LowRankFourierSum, SeparableSum

__all__ = ["GNResult", "gauss_newton_solve", "positive_rule", "residual_grids"]


def positive_rule(axis: FourierAxis, degree: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Nodes and **positive** weights (normalised measure ``ds / length``) for trig degree ``degree``.

    Periodic axes: the trapezoid rule on ``degree + 1`` nodes (exact). Other axes: Gauss-Legendre
    with ``degree + 8`` nodes on ``[a, b]`` (spectrally accurate for the band-limited integrand).
    """
    if axis.kind == "periodic":
        n = degree + 1
        nodes = axis.a + axis.length * torch.arange(n, dtype=RDTYPE) / n
        return nodes, torch.full((n,), 1.0 / n, dtype=RDTYPE)
    x, w = np.polynomial.legendre.leggauss(degree + 8)
    nodes = axis.a + 0.5 * axis.length * (torch.tensor(x, dtype=RDTYPE) + 1.0)
    return nodes, torch.tensor(w, dtype=RDTYPE) / 2.0


@dataclass
class Grid:
    """A tensor grid (nodes per axis, ``sqrt`` weights) with its operator, reaction and target."""

    nodes: list[torch.Tensor]
    sqrt_w: torch.Tensor  # (N_1, ..., N_D)
    operator: object  # SeparableOperator
    reaction: dict[int, float]
    target: torch.Tensor  # (N_1, ..., N_D) real values of f or g


def _outer(mats: list[torch.Tensor]) -> torch.Tensor:
    """``(R, N_1), ..., (R, N_D) -> (R, N_1, ..., N_D)`` (product over axes, per term)."""
    letters = string.ascii_letters[: len(mats)]
    spec = ",".join(f"Z{c}" for c in letters) + "->Z" + letters
    return torch.einsum(spec, *mats)


def residual_grids(problem, axes: list[FourierAxis], ic_weight: float = 1.0) -> list[Grid]:
    """The PDE grid and (if any) the initial-condition grid of a registry problem."""
    from .operators import Identity

    pmax = max([1, *problem.reaction])
    degrees = [2 * pmax * ax.modes + 2 for ax in axes]
    rules = [positive_rule(ax, q) for ax, q in zip(axes, degrees, strict=True)]
    nodes = [r[0] for r in rules]
    w = _outer([r[1][None, :].to(CDTYPE) for r in rules])[0].real
    target = torch.zeros_like(w)
    if problem.source is not None:
        for s, op in problem.source(axes):
            target = target + _apply(s, nodes, op).real
    grids = [Grid(nodes, w.sqrt(), problem.operator, dict(problem.reaction), target)]
    if problem.initial is not None:
        ta = problem.time_axis
        ic_nodes = list(nodes)
        ic_nodes[ta] = torch.tensor([axes[ta].a], dtype=RDTYPE)
        ws = [r[1] for r in rules]
        ws[ta] = torch.ones(1, dtype=RDTYPE)
        wic = _outer([x[None, :].to(CDTYPE) for x in ws])[0].real * ic_weight
        g = problem.initial(axes)
        grids.append(Grid(ic_nodes, wic.sqrt(), Identity(), {}, _apply(g, ic_nodes, None).real))
    return grids


def _values(s: SeparableSum, nodes: list[torch.Tensor]) -> list[torch.Tensor]:
    return [ax.evaluate(f, x) for ax, f, x in zip(s.axes, s.factors, nodes, strict=True)]


def _lvalues(s: SeparableSum, nodes: list[torch.Tensor], op) -> list[torch.Tensor | None]:
    out = []
    for j, (ax, f, x) in enumerate(zip(s.axes, s.factors, nodes, strict=True)):
        if j in op.derivatives:
            out.append(ax.evaluate(f * op.axis_multiplier(ax, j, s.modes[j]), x))
        else:
            out.append(None)
    return out


def _apply(s: SeparableSum, nodes: list[torch.Tensor], op) -> torch.Tensor:
    """Complex ``L s`` (``s`` if ``op`` is None) on the grid."""
    base = _values(s, nodes)
    if op is None:
        return _outer(base).sum(0)
    out = op.constant * _outer(base).sum(0)
    for j, lv in enumerate(_lvalues(s, nodes, op)):
        if lv is not None:
            mats = list(base)
            mats[j] = lv
            out = out + _outer(mats).sum(0)
    return out


def grid_residual(model: LowRankFourierSum, grid: Grid) -> tuple[torch.Tensor, torch.Tensor]:
    """Weighted residual (flattened) and the real field values on the grid."""
    s = model.as_sum()
    val = _apply(s, grid.nodes, None).real
    res = _apply(s, grid.nodes, grid.operator).real
    for p, a in grid.reaction.items():
        res = res + a * val**p
    return (grid.sqrt_w * (res - grid.target)).reshape(-1), val


def block_jacobian(model: LowRankFourierSum, grid: Grid, j: int, val: torch.Tensor) -> torch.Tensor:
    """Real Jacobian of :func:`grid_residual` w.r.t. axis ``j``'s parameters, ``(N, R p_j 2)``."""
    s = model.as_sum()
    op = grid.operator
    base = _values(s, grid.nodes)
    lval = _lvalues(s, grid.nodes, op)
    others = [i for i in range(s.dim) if i != j]
    ones = torch.ones(s.rank, 1, dtype=CDTYPE)
    mats = [base[i] if i != j else ones for i in range(s.dim)]
    p_term = _outer(mats)  # (R, ..., 1 at j, ...)
    q_term = torch.zeros_like(p_term)
    for i in others:
        if lval[i] is not None:
            m2 = list(mats)
            m2[i] = lval[i]
            q_term = q_term + _outer(m2)
    ax = s.axes[j]
    e = ax.basis_matrix(grid.nodes[j], ax.modes) @ model._synth(j)  # (N_j, p)
    mu = op.axis_multiplier(ax, j, ax.modes)
    emu = ax.basis_matrix(grid.nodes[j], ax.modes) @ (mu[:, None] * model._synth(j))  # L_j e_k
    dreact = torch.zeros_like(val)
    for p, a in grid.reaction.items():
        dreact = dreact + p * a * val ** (p - 1)
    # move axis j of the (R, N_1..N_D) terms last, then multiply by the basis on axis j
    perm = [0] + [1 + i for i in others] + [1 + j]
    pt = p_term.permute(perm).squeeze(-1)  # (R, N_-j)
    qt = q_term.permute(perm).squeeze(-1)
    dr = dreact.permute([i for i in others] + [j])  # (N_-j, N_j)
    sw = grid.sqrt_w.permute([i for i in others] + [j])
    c0 = op.constant
    # d(res)/dc[r, k] at (n_-j, n_j)
    jac = (
        (c0 * pt + qt)[..., None, None] * e[None, ...]  # (R, N_-j, N_j, p)
        + pt[..., None, None] * emu[None, ...]
        + pt[..., None, None] * (dr[None, ..., None] * e)
    )
    jac = jac * sw[None, ..., None]
    nr = jac.shape[0]
    jac = jac.movedim(0, -2)  # (N_-j, N_j, R, p)
    jac = jac.reshape(-1, nr, e.shape[1])
    # back to the grid's natural node order (axis j was moved last)
    shape = [grid.nodes[i].numel() for i in others] + [grid.nodes[j].numel()]
    inv = list(np.argsort([*others, j]))
    jac = jac.reshape(*shape, nr, e.shape[1]).permute(*inv, s.dim, s.dim + 1)
    jac = jac.reshape(-1, nr, e.shape[1])
    return torch.stack([jac.real, -jac.imag], -1).reshape(jac.shape[0], -1)


@dataclass
class GNResult:
    """History of a Gauss-Newton run: the loss after every sweep (monotone non-increasing)."""

    losses: list[float] = field(default_factory=list)
    sweeps: int = 0


def _loss(model: LowRankFourierSum, grids: list[Grid]) -> float:
    return float(sum(grid_residual(model, g)[0].pow(2).sum() for g in grids))


@torch.no_grad()
def gauss_newton_solve(
    model: LowRankFourierSum,
    problem,
    sweeps: int = 20,
    ic_weight: float = 1.0,
    damping: float = 1e-6,
    tol: float = 1e-14,
) -> GNResult:
    """Minimise the quadrature residual of a (nonlinear) problem by block Levenberg-Marquardt.

    Parameters
    ----------
    model:
        The :class:`~lorfs.fourier_sum.LowRankFourierSum` (updated in place; its values are the start).
    problem:
        A :class:`lorfs.problems.Problem` with ``D <= 3``.
    sweeps:
        Number of sweeps over the axes.
    ic_weight:
        Weight of the initial-condition residual.
    damping:
        Initial Levenberg-Marquardt damping (adapted per block).
    tol:
        Stop when the relative loss decrease of a sweep is below ``tol``.

    Examples
    --------
    >>> from lorfs.problems import get_problem
    >>> p = get_problem("reaction", rho=1.0, modes_x=8)
    >>> u = LowRankFourierSum(p.make_axes([8, 8]), rank=2, seed=0)
    >>> h = gauss_newton_solve(u, p, sweeps=3)
    >>> all(b <= a for a, b in zip(h.losses, h.losses[1:]))
    True
    """
    if model.dim > 3:
        raise ValueError(f"gauss_newton_solve uses a tensor grid: D <= 3, got D = {model.dim}")
    problem.check_axes(model.axes)
    grids = residual_grids(problem, model.axes, ic_weight)
    lam = [damping] * model.dim
    current = _loss(model, grids)
    result = GNResult()
    for _ in range(int(sweeps)):
        start = current
        for j in range(model.dim):
            jt_j = None
            jt_r = None
            for g in grids:
                r, val = grid_residual(model, g)
                jac = block_jacobian(model, g, j, val)
                a, b = jac.T @ jac, jac.T @ r
                jt_j = a if jt_j is None else jt_j + a
                jt_r = b if jt_r is None else jt_r + b
            old = model.params[j].detach().clone()
            diag = torch.diag(jt_j).clamp_min(1e-300)
            for _try in range(12):
                step = torch.linalg.solve(
                    jt_j + lam[j] * torch.diag(diag + 1e-12 * diag.max()), -jt_r
                )
                model.params[j].copy_(old + step.reshape(old.shape))
                new = _loss(model, grids)
                if math.isfinite(new) and new < current:
                    current = new
                    lam[j] = max(lam[j] / 3.0, 1e-12)
                    break
                model.params[j].copy_(old)
                lam[j] *= 10.0
        result.losses.append(current)
        result.sweeps += 1
        if current == 0.0:
            break
        if start - current <= tol * start:
            if min(lam) > 1e6:  # no block can make progress even with heavy damping
                break
            lam = [damping] * model.dim  # restart the damping (the trust region collapsed)
    return result


def initial_condition_start(model: LowRankFourierSum, problem, scale: float = 1e-2) -> None:
    """Start term 0 at ``u(t, x) = g(x)`` (the initial condition held constant in time).

    The other terms keep their small random values. Used for nonlinear problems, where a
    random start converges to poor local minima.
    """
    if problem.initial is None:
        return
    g = problem.initial(model.axes)
    with torch.no_grad():
        for j, ax in enumerate(model.axes):
            free = model.free_parameters(j).clone() * scale
            c = g.factors[j][0]
            k = (c.shape[0] - 1) // 2
            if k < ax.modes:
                c = torch.nn.functional.pad(c, (ax.modes - k, ax.modes - k))
            elif k > ax.modes:
                c = c[k - ax.modes : k + ax.modes + 1]
            free[0] = torch.linalg.pinv(model._synth(j)) @ c
            model.set_free_parameters_(j, free)
