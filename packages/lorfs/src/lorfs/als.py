"""Exact alternating least squares (ALS) for linear PDEs in LoRFS form.

Paper: Kaminsky, Freedman, Radinsky, "Overcoming PINNs Failure Modes in High Dimension with
Low-Rank Fourier Sum", ICML 2026.

For a linear PDE every closed-form loss piece ``||L u - f||^2`` (and the initial-condition
and mean pieces) is *quadratic* in the coefficients of one coordinate block (all ``R``
factors of axis ``j``). ALS therefore minimises exactly over one block at a time by solving a
Hermitian system of size ``R n_j`` (notes, Sec. B1 "Optimization"):

1. environments ``E = prod_{i != j} (G00 + a G10 + b G01 + ab G11)`` from prefix and suffix
   products of the per-axis polynomials (:func:`lorfs.residual.poly_mul`), so a sweep costs
   ``O(D)`` block updates;
2. the block's quadratic form ``sum_{ts} c_t M_ts c_s^H`` with
   ``M_ts = W0 G + W1 diag(mu_t) G + W2 G diag(conj mu_s) + W3 diag(mu_t) G diag(conj mu_s)``,
   ``W0 = a_t conj(a_s) E0 + conj(a_s) E1 + a_t E2 + E3``, ``W1 = conj(a_s) E0 + E2``,
   ``W2 = a_t E0 + E1``, ``W3 = E0`` (:func:`block_system`);
3. a pseudo-inverse solve (Fourier-extension Grams are ill-conditioned), then gauge balancing.

The same solver gives the best ``L2`` fit of a sum to a target (:func:`fit_sum`) and rank
rounding (:func:`round_rank`: a sum of rank ``R`` refitted with fewer terms).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import torch

from .basis import CDTYPE, positive_int
from .fourier_sum import LowRankFourierSum, SeparableSum
from .operators import Identity
from .residual import (
    Piece,
    Terms,
    assemble,
    axis_polynomial,
    combine,
    piece_grams,
    piece_norm2,
    poly_mul,
)

PieceBuilder = Callable[[SeparableSum], Sequence[Piece]]


@dataclass
class ALSResult:
    """History of an ALS run: the total closed-form loss after every sweep."""

    losses: list[float] = field(default_factory=list)
    sweeps: int = 0


def _full_matrix(g: torch.Tensor) -> torch.Tensor:
    return torch.diag(g) if g.dim() == 1 else g


def _weights(terms: Terms, env: torch.Tensor, rows: torch.Tensor, env_rows: bool = False):
    """Environment weights ``W0..W3`` of the block rows ``rows`` against all terms, each ``(U, T)``.

    ``env`` is ``(4, T, T)``, or ``(4, U, T)`` (already restricted to ``rows``) when ``env_rows``.
    """
    al = terms.alpha
    ar = al.conj()
    au = al[rows]
    e0, e1, e2, e3 = env if env_rows else (e[rows] for e in env)
    w0 = au[:, None] * ar[None, :] * e0 + ar[None, :] * e1 + au[:, None] * e2 + e3
    w1 = ar[None, :] * e0 + e2
    w2 = au[:, None] * e0 + e1
    return w0, w1, w2, e0


def block_system(
    terms: Terms,
    grams: Sequence[torch.Tensor],
    env: torch.Tensor,
    j: int,
    unknown_rows: torch.Tensor,
    env_rows: bool = False,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Hermitian block ``H_uu`` (``(U n, U n)``) and right side ``-H_uk k`` (``(U n,)``) of axis ``j``.

    ``env`` holds the environment states ``(4, T, T)`` (``(4, U, T)``, the unknown's rows only,
    when ``env_rows``); ``unknown_rows`` the term rows of the unknown. Only the ``U x U`` blocks of
    the unknown are formed (memory ``O(U^2 n^2)``); the known terms enter the right side through
    ``conj(M_uk) k = conj(W0) G* k + conj(mu_u) conj(W1) G* k + conj(W2) G* (mu_k k) +
    conj(mu_u) conj(W3) G* (mu_k k)`` (cost ``O(U T n + T n^2)``).
    """
    g = _full_matrix(grams[j])  # (n, n)
    mu = terms.mult[j]  # (T, n)
    rows = unknown_rows
    ws = _weights(terms, env, rows, env_rows)
    known = torch.ones(terms.alpha.shape[0], dtype=torch.bool)
    known[rows] = False
    mur = mu[rows]  # (U, n)
    w0, w1, w2, w3 = (w[:, rows] for w in ws)  # (U, U)
    mg = mur[:, :, None] * g[None]  # (U, n, n): diag(mu_t) G
    gm = g[None] * mur.conj()[:, None, :]  # (U, n, n): G diag(conj mu_s)
    mgm = mur[:, None, :, None] * g[None, None] * mur.conj()[None, :, None, :]  # (U, U, n, n)
    m = (
        w0[..., None, None] * g
        + w1[..., None, None] * mg[:, None]
        + w2[..., None, None] * gm[None, :]
        + w3[..., None, None] * mgm
    )
    huu = m.conj()  # loss = sum_ts z_t^H conj(M_ts) z_s with z_t = c_t as a column
    z_known = terms.coeffs[j][known]  # (K, n)
    gct = g.conj().T
    a = z_known @ gct  # rows conj(G) k
    b = (mu[known] * z_known) @ gct  # rows conj(G) diag(mu_k) k
    k0, k1, k2, k3 = (w[:, known].conj() for w in ws)  # (U, K)
    rhs = -(k0 @ a + mur.conj() * (k1 @ a) + k2 @ b + mur.conj() * (k3 @ b))
    u, n = huu.shape[0], huu.shape[-1]
    return huu.permute(0, 2, 1, 3).reshape(u * n, u * n), rhs.reshape(u * n)


def diagonal_block_system(
    terms: Terms,
    grams: Sequence[torch.Tensor],
    env: torch.Tensor,
    j: int,
    unknown_rows: torch.Tensor,
    modes: int,
    env_rows: bool = False,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The block system of a periodic axis (diagonal Gram) as ``n`` independent ``U x U`` systems.

    With ``G`` and every multiplier diagonal, ``M_ts`` is diagonal, so the block decouples by
    wavenumber: returns ``A`` of shape ``(2 modes + 1, U, U)`` and ``b`` of shape
    ``(2 modes + 1, U)`` for the wavenumbers ``-modes..modes`` of the model (cost ``O(U T n)``).
    """
    g = grams[j]  # (n,)
    mu = terms.mult[j]  # (T, n)
    rows = unknown_rows
    w0, w1, w2, w3 = _weights(terms, env, rows, env_rows)
    mur, muc = mu[rows], mu.conj()
    m = (
        w0[..., None] * g
        + w1[..., None] * (mur[:, None, :] * g)
        + w2[..., None] * (g * muc[None, :, :])
        + w3[..., None] * (mur[:, None, :] * g * muc[None, :, :])
    )  # (U, T, n)
    h = m.conj()
    known = torch.ones(terms.alpha.shape[0], dtype=torch.bool)
    known[rows] = False
    rhs = -torch.einsum("usn,sn->un", h[:, known], terms.coeffs[j][known])
    huu = h[:, rows]  # (U, U, n)
    pad = terms.modes[j] - modes
    n = huu.shape[-1]
    sl = slice(pad, n - pad)
    return huu[..., sl].permute(2, 0, 1), rhs[:, sl].T


def _batched_pinv_solve(a: torch.Tensor, b: torch.Tensor, rcond: float = 1e-13) -> torch.Tensor:
    """``(n, U, U)`` Hermitian systems, ``(n, U)`` right sides -> ``(n, U)`` (shared eigenvalue cut-off)."""
    a = 0.5 * (a + a.conj().transpose(-1, -2))
    if not torch.isfinite(a).all() or not torch.isfinite(b).all():
        raise FloatingPointError("ALS block system is not finite (diverged or overflowing factors)")
    scale = a.abs().amax().clamp_min(1e-300)
    lam, v = torch.linalg.eigh(a / scale)
    lam = lam * scale
    keep = lam > rcond * lam.abs().amax().clamp_min(1e-300)
    inv = torch.where(
        keep, 1.0 / torch.where(keep, lam, torch.ones_like(lam)), torch.zeros_like(lam)
    )
    vb = torch.einsum("nvu,nv->nu", v.conj(), b)
    return torch.einsum("nuv,nv->nu", v, inv.to(CDTYPE) * vb)


def _pinv_solve(a: torch.Tensor, b: torch.Tensor, rcond: float = 1e-13) -> torch.Tensor:
    a = 0.5 * (a + a.conj().T)
    scale = a.abs().max().clamp_min(1e-300)
    if not torch.isfinite(a).all() or not torch.isfinite(b).all():
        raise FloatingPointError("ALS block system is not finite (diverged or overflowing factors)")
    lam, v = torch.linalg.eigh(a / scale)
    lam = lam * scale
    keep = lam > rcond * lam.abs().max().clamp_min(1e-300)
    inv = torch.where(
        keep, 1.0 / torch.where(keep, lam, torch.ones_like(lam)), torch.zeros_like(lam)
    )
    return v @ (inv.to(CDTYPE) * (v.conj().T @ b))


def _embedding(model: LowRankFourierSum, j: int, modes: int) -> torch.Tensor:
    s = model._synth(j)  # (n_j, p_j)
    pad = modes - model.axes[j].modes
    return torch.nn.functional.pad(s, (0, 0, pad, pad)) if pad else s


def als_solve(
    model: LowRankFourierSum,
    build_pieces: PieceBuilder,
    sweeps: int = 8,
    tol: float = 0.0,
    balance: bool = True,
    rcond: float = 1e-13,
    active: Sequence[int] | None = None,
    atol: float = 0.0,
) -> ALSResult:
    """Minimise ``sum_p weight_p ||pieces_p||^2`` over ``model`` by exact block ALS (in place).

    Parameters
    ----------
    model:
        The :class:`~lorfs.fourier_sum.LowRankFourierSum` to optimise (its current values are the start).
    build_pieces:
        ``build_pieces(u) -> [Piece, ...]``: the loss pieces for the unknown sum ``u`` (each piece's
        ``unknown`` item must be ``u``; every piece must be quadratic in ``u``).
    sweeps:
        Number of forward sweeps over the axes.
    tol:
        Stop when the relative decrease of the loss in a sweep is below ``tol`` (also stops
        when the loss reaches exactly 0).
    balance:
        Gauge-balance the model after every sweep.
    rcond:
        Relative eigenvalue cut-off of the block pseudo-inverse.
    active:
        Indices of the rank-one terms to update (default all); the others are held fixed.
    atol:
        Stop as soon as the loss is at most ``atol``.

    Examples
    --------
    >>> import math
    >>> from lorfs.basis import FourierAxis
    >>> axes = [FourierAxis(f"x{i}", (0, 2 * math.pi), 1) for i in range(3)]
    >>> e = torch.tensor([[0, 0, 1]], dtype=torch.complex128)
    >>> target = SeparableSum(axes, [e, e, e])        # e^{i(x0+x1+x2)}
    >>> u = LowRankFourierSum(axes, rank=1, seed=0)
    >>> out = fit_sum(u, target, sweeps=3)
    >>> from lorfs.residual import relative_l2_error
    >>> relative_l2_error(u.as_sum(), target) < 1e-12
    True
    """
    result = ALSResult()
    d = model.dim
    act = (
        torch.arange(model.rank)
        if active is None
        else torch.as_tensor(list(active), dtype=torch.long)
    )
    if act.numel() == 0 or int(act.min()) < 0 or int(act.max()) >= model.rank:
        raise ValueError(
            f"active terms must be indices in [0, {model.rank}), got {list(act.tolist())}"
        )
    prev = None
    fixed: dict[
        int, float
    ] = {}  # per piece: the loss of the known-known pairs (constant in the call)
    for _ in range(int(sweeps)):
        with torch.no_grad():
            pieces = list(build_pieces(model.as_sum()))
            states = []
            for idx, p in enumerate(pieces):
                terms = assemble(p)
                grams = piece_grams(p, terms.modes)
                rows = torch.nonzero(terms.owner == p.unknown).flatten()
                if rows.numel() != model.rank:
                    raise ValueError(
                        f"loss piece {p.name!r}: its unknown item does not have the model's rank"
                    )
                rows = rows[act]
                known = torch.ones(terms.alpha.shape[0], dtype=torch.bool)
                known[rows] = False
                if idx not in fixed:
                    kk = [
                        axis_polynomial(
                            (terms.coeffs[i][known], terms.mult[i][known]),
                            (terms.coeffs[i][known], terms.mult[i][known]),
                            grams[i],
                        )
                        for i in range(d)
                    ]
                    kk_state = kk[0]
                    for q in kk[1:]:
                        kk_state = poly_mul(kk_state, q)
                    a_k = terms.alpha[known]
                    fixed[idx] = float(combine(kk_state, a_k, a_k).real)
                # only the unknown's rows against all terms: states (4, U, T)
                polys = [
                    axis_polynomial(
                        (terms.coeffs[i][rows], terms.mult[i][rows]),
                        (terms.coeffs[i], terms.mult[i]),
                        grams[i],
                    )
                    for i in range(d)
                ]
                suffix = [None] * (d + 1)
                for i in range(d - 1, -1, -1):
                    suffix[i] = (
                        polys[i] if suffix[i + 1] is None else poly_mul(polys[i], suffix[i + 1])
                    )
                states.append(
                    {
                        "terms": terms,
                        "grams": grams,
                        "suffix": suffix,
                        "prefix": None,
                        "rows": rows,
                        "known": known,
                    }
                )
            for j in range(d):
                a_tot = b_tot = None
                diagonal = model.axes[j].kind == "periodic" and all(
                    st["grams"][j].dim() == 1 for st in states
                )
                for _p, st in zip(pieces, states, strict=True):
                    terms = st["terms"]
                    pre, suf = st["prefix"], st["suffix"][j + 1]
                    if pre is None and suf is None:
                        env = torch.zeros(4, st["rows"].numel(), terms.alpha.shape[0], dtype=CDTYPE)
                        env[0] = 1.0
                    elif pre is None:
                        env = suf
                    elif suf is None:
                        env = pre
                    else:
                        env = poly_mul(pre, suf)
                    if diagonal:
                        a, b = diagonal_block_system(
                            terms, st["grams"], env, j, st["rows"], model.axes[j].modes, True
                        )
                        a, b = _p.weight * a, _p.weight * b
                    else:
                        a, b = block_system(terms, st["grams"], env, j, st["rows"], True)
                        emb = _embedding(model, j, terms.modes[j])  # (n, p)
                        big = torch.block_diag(*([emb] * act.numel()))
                        a = _p.weight * big.conj().T @ a @ big
                        b = _p.weight * big.conj().T @ b
                    a_tot = a if a_tot is None else a_tot + a
                    b_tot = b if b_tot is None else b_tot + b
                if diagonal:
                    x = _batched_pinv_solve(a_tot, b_tot, rcond).T.contiguous()
                else:
                    x = _pinv_solve(a_tot, b_tot, rcond).reshape(act.numel(), -1)
                if j < d - 1:  # unit rows; the scale is re-absorbed when the next block is solved
                    nrm = x.abs().pow(2).sum(1, keepdim=True).sqrt()
                    x = torch.where(nrm > 0, x / nrm.clamp_min(1e-300), x)
                full = model.free_parameters(j).detach().clone()
                full[act] = x
                model.set_free_parameters_(j, full)
                new_c = (model.free_parameters(j) @ model._synth(j).T)[act]
                for _p, st in zip(pieces, states, strict=True):
                    terms = st["terms"]
                    pad = terms.modes[j] - model.axes[j].modes
                    c = torch.nn.functional.pad(new_c, (pad, pad)) if pad else new_c
                    terms.coeffs[j] = terms.coeffs[j].clone()
                    terms.coeffs[j][st["rows"]] = c
                    pj = axis_polynomial(
                        (terms.coeffs[j][st["rows"]], terms.mult[j][st["rows"]]),
                        (terms.coeffs[j], terms.mult[j]),
                        st["grams"][j],
                    )
                    st["prefix"] = pj if st["prefix"] is None else poly_mul(st["prefix"], pj)
            # Hermitian pairs: total = Re sum_{rows x all} + Re sum_{rows x known} + known-known
            total = 0.0
            for idx, (p, st) in enumerate(zip(pieces, states, strict=True)):
                terms, rows, known = st["terms"], st["rows"], st["known"]
                a_r = terms.alpha[rows]
                part = combine(st["prefix"], a_r, terms.alpha).real
                part = part + combine(st["prefix"][:, :, known], a_r, terms.alpha[known]).real
                total += float(p.weight * (part + fixed[idx]))
            if balance:
                model.balance_()
        result.losses.append(total)
        result.sweeps += 1
        if total <= atol or (prev is not None and tol > 0 and prev - total <= tol * abs(prev)):
            break
        prev = total
    return result


def data_factors(model: LowRankFourierSum, pieces: Sequence[Piece]) -> list[list[torch.Tensor]]:
    """Per known data term (source / initial condition), its factors mapped to the model's parameters.

    Used to start ALS in the span of the data: in high dimension a random start has an overlap
    ``~ n^{-d/2}`` with the solution (it underflows at ``d = 1000``), the data's factors do not.
    """
    out = []
    pinvs = [torch.linalg.pinv(model._synth(j)) for j in range(model.dim)]
    for p in pieces:
        for i, (s, _) in enumerate(p.items):
            if i == p.unknown:
                continue
            for t in range(s.rank):
                facs = []
                for j, ax in enumerate(model.axes):
                    c = s.factors[j][t]
                    k = (c.shape[0] - 1) // 2
                    if k > ax.modes:
                        c = c[k - ax.modes : k + ax.modes + 1]
                    elif k < ax.modes:
                        c = torch.nn.functional.pad(c, (ax.modes - k, ax.modes - k))
                    facs.append(pinvs[j] @ c)
                out.append(facs)
    return out


def greedy_als(
    model: LowRankFourierSum,
    build_pieces: PieceBuilder,
    sweeps_per_term: int = 4,
    sweeps: int = 8,
    tol: float = 0.0,
    seed: int = 0,
    init: str = "data",
    rtol_loss: float = 1e-12,
) -> ALSResult:
    """Rank-by-rank ALS: add one term at a time (others fixed), then joint ALS sweeps.

    Plain CP-ALS from a random start can stall with two terms fitting the same component (a
    "swamp"); growing the rank greedily avoids that on the planted problems. ``init="data"``
    starts term ``r`` from the factors of the ``r``-th data term (source or initial condition,
    cycling) plus a small random perturbation; ``init="random"`` from unit random factors.
    Every stage stops once the loss is below ``rtol_loss`` times the loss of the zero field.
    """
    if init not in ("data", "random"):
        raise ValueError(f"init must be 'data' or 'random', got {init!r}")
    gen = torch.Generator().manual_seed(seed)
    pieces0 = build_pieces(model.as_sum())
    seeds = data_factors(model, pieces0) if init == "data" else []
    zero = sum(
        float(
            piece_norm2(
                Piece(
                    [it for i, it in enumerate(p.items) if i != p.unknown],
                    p.measures,
                    p.weight,
                    None,
                )
            )
        )
        for p in pieces0
        if len(p.items) > 1
    )
    atol = rtol_loss * zero
    with torch.no_grad():
        for j in range(model.dim):
            p = model.axes[j].n_params
            x = torch.zeros(model.rank, p, dtype=CDTYPE)
            model.set_free_parameters_(j, x)
    history = ALSResult()
    for r in range(model.rank):
        with torch.no_grad():
            for j in range(model.dim):
                p = model.axes[j].n_params
                full = model.free_parameters(j).detach().clone()
                v = torch.randn(p, dtype=CDTYPE, generator=gen)
                v = v / v.abs().pow(2).sum().sqrt()
                if seeds:
                    c = seeds[r % len(seeds)][j]
                    nrm = c.abs().pow(2).sum().sqrt()
                    v = c / nrm + 1e-3 * v if nrm > 0 else v
                full[r] = (
                    v / v.abs().pow(2).sum().sqrt()
                )  # unit factors: the product stays O(1) in any d
                model.set_free_parameters_(j, full)
        res = als_solve(
            model,
            build_pieces,
            sweeps=sweeps_per_term,
            tol=tol,
            active=[r],
            balance=False,
            atol=atol,
        )
        history.losses += res.losses
        history.sweeps += res.sweeps
    res = als_solve(model, build_pieces, sweeps=sweeps, tol=tol, atol=atol)
    history.losses += res.losses
    history.sweeps += res.sweeps
    return history


def fit_sum(model: LowRankFourierSum, target: SeparableSum, sweeps: int = 10) -> ALSResult:
    """Best ``L2`` fit of ``model`` to ``target`` (complex), by ALS on ``||u - target||^2``."""

    def pieces(u: SeparableSum) -> list[Piece]:
        return [Piece([(u, Identity()), (target, Identity() * -1.0)], ["integral"] * u.dim)]

    return als_solve(model, pieces, sweeps=sweeps)


def round_rank(u: LowRankFourierSum, rank: int, sweeps: int = 10) -> LowRankFourierSum:
    """Rank rounding: a new rank-``rank`` sum fitted to ``u`` by exact ALS in ``L2``.

    Initialised from the ``rank`` terms of ``u`` of largest norm (padded with small random
    terms when ``rank`` exceeds ``u``'s), then ``sweeps`` ALS sweeps on ``min ||v - u||^2``
    (:func:`fit_sum`), so the result is the best fit found.

    Examples
    --------
    >>> import math
    >>> from lorfs.basis import FourierAxis
    >>> from lorfs.residual import relative_l2_error
    >>> axes = [FourierAxis(f"x{i}", (0, 2 * math.pi), 2) for i in range(2)]
    >>> u = LowRankFourierSum(axes, rank=2, init_scale=0.5, seed=0)
    >>> v = round_rank(u, 2, sweeps=5)
    >>> relative_l2_error(v.as_sum(), u.as_sum()) < 1e-6
    True
    """
    rank = positive_int(rank, "rank")
    target = u.as_sum()
    out = LowRankFourierSum(u.axes, rank)
    with torch.no_grad():
        norms = torch.stack([f.abs().pow(2).sum(1) for f in target.factors]).prod(0)
        order = norms.argsort(descending=True)
        for j in range(u.dim):
            src = u.free_parameters(j)[order[: min(rank, u.rank)]]
            init = torch.zeros(rank, u.axes[j].n_params, dtype=CDTYPE)
            init[: src.shape[0]] = src
            if rank > u.rank:
                init[u.rank :] = 1e-3 * torch.randn(rank - u.rank, u.axes[j].n_params, dtype=CDTYPE)
            out.set_free_parameters_(j, init)
    fit_sum(out, SeparableSum(u.axes, [f.detach() for f in target.factors]), sweeps=sweeps)
    return out


def solve_linear(
    problem,
    rank: int | None = None,
    modes: Sequence[int] | int | None = None,
    sweeps: int = 8,
    sweeps_per_term: int = 4,
    ic_weight: float = 1.0,
    seed: int = 0,
) -> tuple[LowRankFourierSum, ALSResult]:
    """Solve a linear registry problem (:class:`lorfs.problems.Problem`) by greedy + joint exact ALS.

    Returns the fitted :class:`~lorfs.fourier_sum.LowRankFourierSum` and the loss history.

    Examples
    --------
    >>> from lorfs.problems import get_problem, relative_error_on
    >>> problem = get_problem("torus_poisson", d=5)
    >>> u, history = solve_linear(problem)
    >>> relative_error_on(problem, u, n=1000) < 1e-10
    True
    """
    if not problem.is_linear:
        raise ValueError(
            f"problem {problem.name!r} is nonlinear: ALS needs a linear PDE (use LoRFSModule)"
        )
    axes = problem.make_axes(modes)
    model = LowRankFourierSum(axes, problem.rank if rank is None else rank, seed=seed)
    history = greedy_als(
        model,
        lambda u: problem.pieces(u, ic_weight=ic_weight),
        sweeps_per_term=sweeps_per_term,
        sweeps=sweeps,
        seed=seed,
    )
    return model, history
