"""Nonlinear PDEs in LoRFS form: causal time slabs, Picard linearisation, closed-form nonlinear terms.

Paper: Kaminsky, Freedman, Radinsky, "Overcoming PINNs Failure Modes in High Dimension with
Low-Rank Fourier Sum", ICML 2026 (the paper's own nonlinear solver is not available to us; this
is our derivation, see the README's "Differences from the paper").

Problem: ``L u + sum_p a_p u^p = f`` with a time axis (logistic reaction, reaction-diffusion,
Allen-Cahn, a user's spec). Every step below is closed form in the Fourier coefficients; there is
no collocation and no quadrature, in any dimension:

1. **Nonlinear terms** ``(Re w)^p`` are products of low-rank Fourier sums, i.e. per-axis
   coefficient convolutions (:meth:`lorfs.fourier_sum.SeparableSum.power`; rank ``T^p``,
   bandwidth ``p K``), followed by rank truncation (:func:`truncate`: an SVD of the coefficient
   matrix for ``D = 2``, an exact-ALS refit, :func:`lorfs.als.fit_sum`, for ``D > 2``).
   Wavenumbers beyond the model's on periodic axes are dropped: they are orthogonal to every
   ``L u``, so the least-squares minimiser is unchanged (:func:`crop_periodic`).
2. **Picard linearisation** with a constant stabiliser ``c`` (:func:`stabiliser`): given the
   iterate ``w``, solve the *linear* problem ``(L + c) u = f - N(Re w) + c Re w`` with the same
   initial condition, by exact ALS (:func:`lorfs.als.als_solve`, warm-started). The fixed point is
   the nonlinear solution in the LoRFS space.
3. **Causal time slabs** ``[t_s, t_{s+1}]`` (:func:`solve_nonlinear`): a single space-time
   least-squares residual weights errors at all times alike, but for unstable reaction
   (``N'(u) = -rho`` near ``u = 0`` for the logistic term) a residual ``delta`` near ``t = 0``
   grows to ``e^{rho T} delta`` at ``T`` (``2e4`` at ``rho = 10``): the global problem is
   ill-conditioned by that factor, which is why the single-slab Gauss-Newton stalled at a
   relative error of 0.12 on reaction ``rho = 10`` whatever the rank. On a slab of length
   ``tau`` the factor is ``e^{rho tau}``. Each slab is a LoRFS field on
   ``(t, x_1, ..., x_d)`` with a Fourier-extension time axis on the slab; its initial condition
   is the previous slab's field at ``t_s`` (rank ``R`` in ``x``, evaluated in closed form,
   :func:`restrict_to_time`).

4. **Greedy enrichment** (:func:`unrepresented_terms`): when a slab field has fewer terms than
   ``rank`` (the first slab starts from the initial condition's), each Picard step adds the
   right-hand side's rank-one terms least represented in space by the current field (pivoted
   Gram-Schmidt in the closed-form inner product), so new harmonics such as
   ``e^{2 i (x_1 + ... + x_d)}`` are found in any ``d`` (a random start overlaps them by
   ``~ n^{-d/2}``).

:class:`SlabSolution` holds the slab fields and evaluates the solution at points.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import torch

from .als import als_solve, fit_sum
from .basis import CDTYPE, RDTYPE, FourierAxis, positive_int
from .coefficients import pad_modes
from .fourier_sum import LowRankFourierSum, SeparableSum
from .operators import Const, Identity
from .residual import Piece, axis_gram, inner, l2_norm2, relative_l2_error

__all__ = [
    "SlabSolution",
    "crop_periodic",
    "nonlinear_term",
    "restrict_to_time",
    "solve_nonlinear",
    "stabiliser",
    "term_gram",
    "truncate",
    "unrepresented_terms",
]


# ---------------------------------------------------------------- closed-form algebra


def crop_periodic(s: SeparableSum, modes: Sequence[int]) -> SeparableSum:
    """Drop wavenumbers ``|k| > modes[j]`` on the periodic axes of ``s`` (an exact L2 projection there).

    Examples
    --------
    >>> import math
    >>> ax = [FourierAxis("x", (0, 2 * math.pi), 2)]
    >>> s = SeparableSum(ax, [torch.tensor([[1, 0, 1, 0, 1]], dtype=CDTYPE)])
    >>> crop_periodic(s, [1]).factors[0].tolist()
    [[0j, (1+0j), 0j]]
    """
    out = []
    for ax, f, m in zip(s.axes, s.factors, modes, strict=True):
        k = (f.shape[1] - 1) // 2
        if ax.kind == "periodic" and k > m:
            f = f[:, k - m : k + m + 1]
        out.append(f)
    return SeparableSum(s.axes, out)


def _truncate_2d(s: SeparableSum, rank: int, rtol: float) -> SeparableSum:
    a, b = (f.detach() for f in s.factors)  # (T, n1), (T, n2): C = a^T b
    qa, ra = torch.linalg.qr(a.T)  # n1 x r
    qb, rb = torch.linalg.qr(b.T)
    core = ra @ rb.T  # a^T b = qa ra rb^T qb^T
    uu, sv, vh = torch.linalg.svd(core)
    if sv.numel() == 0 or float(sv[0]) == 0.0:
        return SeparableSum(s.axes, [a[:1] * 0, b[:1] * 0])
    keep = max(1, min(rank, int((sv > rtol * sv[0]).sum())))
    left = (qa @ uu[:, :keep] * sv[:keep]).T  # (keep, n1)
    right = (qb @ vh[:keep].T).T  # (keep, n2)
    return SeparableSum(s.axes, [left, right])


def truncate(
    s: SeparableSum, rank: int, rtol: float = 1e-13, sweeps: int = 6, max_terms: int | None = None
) -> SeparableSum:
    """Rank truncation of a sum.

    ``D = 2``: the coefficient matrix ``C = sum_t a_t b_t^T`` is cut by its SVD to at most
    ``rank`` terms (singular values below ``rtol`` times the largest are dropped), optimal in
    the coefficient norm. ``D > 2``: the sum is kept exactly while it has at most ``max_terms``
    terms (default ``rank``); beyond that a rank-``rank``
    :class:`~lorfs.fourier_sum.LowRankFourierSum` on the sum's axes, started from its largest
    terms, is fitted by exact ALS in ``L2`` (CP rounding has no SVD; the fit is a local optimum).

    Examples
    --------
    >>> import math
    >>> ax = [FourierAxis("t", (0, 1), 3, kind="extension"), FourierAxis("x", (0, 2 * math.pi), 3)]
    >>> u = LowRankFourierSum(ax, rank=2, seed=0).as_sum()
    >>> v = truncate(u * u, 3)                  # u^2 has rank 4 as a product, 3 after truncation
    >>> v.rank, relative_l2_error(v, u * u) < 1e-12
    (3, True)
    """
    rank = positive_int(rank, "rank")
    if s.dim == 2:
        return _truncate_2d(s, rank, rtol)
    if s.rank <= (rank if max_terms is None else max(rank, max_terms)):
        return s
    axes = [
        FourierAxis(ax.name, (ax.a, ax.b), max(1, m), kind=ax.kind, extension=ax.period / ax.length)
        if ax.kind == "extension"
        else FourierAxis(ax.name, (ax.a, ax.b), max(1, m), kind=ax.kind)
        for ax, m in zip(s.axes, s.modes, strict=True)
    ]
    model = LowRankFourierSum(axes, rank)
    with torch.no_grad():
        norms = torch.stack([f.abs().pow(2).sum(1) for f in s.factors]).prod(0)
        order = norms.argsort(descending=True)[:rank]
        for j in range(len(axes)):
            init = torch.linalg.pinv(model._synth(j)) @ s.factors[j][order].T
            model.set_free_parameters_(j, init.T)
    target = SeparableSum(axes, s.factors)
    fit_sum(model, target, sweeps=sweeps)
    return SeparableSum(s.axes, [f.detach() for f in model.factors()])


def nonlinear_term(
    w: SeparableSum,
    reaction: dict[int, float],
    rank: int,
    modes: Sequence[int],
    max_terms: int = 600,
) -> SeparableSum | None:
    """``N(Re w) = sum_p a_p (Re w)^p`` in closed form (convolutions + :func:`truncate`), or ``None``.

    ``D = 2``: every product is SVD-truncated to ``rank``. ``D > 2``: products are kept exactly
    up to ``max_terms`` terms (``(2R)^2`` for ``u^2``), ALS-rounded to ``rank`` beyond.
    """
    if not reaction:
        return None
    wr = truncate(crop_periodic(w.real_part(), modes), rank, max_terms=2 * w.rank)
    powers = {1: wr}
    for p in range(2, max(reaction) + 1):
        powers[p] = truncate(crop_periodic(powers[p - 1] * wr, modes), rank, max_terms=max_terms)
    out = None
    for p, a in sorted(reaction.items()):
        term = powers[p].scaled(a)
        out = term if out is None else out + term
    return out


def stabiliser(g: SeparableSum, reaction: dict[int, float]) -> float:
    """Picard stabiliser ``c = sum_p p a_p mean((Re g)^{p-1})`` (closed form), a mean of ``N'``."""
    c = 0.0
    ones = SeparableSum(g.axes, [torch.ones(1, 1, dtype=CDTYPE) for _ in g.axes])
    for p, a in reaction.items():
        if p == 2:
            c += 2 * a * float(inner(g.real_part(), ones).real)
        elif p == 3:
            c += 3 * a * float(l2_norm2(g))
        else:
            raise ValueError(f"reaction powers must be 2 or 3, got {p}")
    return c


def restrict_to_time(
    u: SeparableSum, t: float, time_axis: int, axes: Sequence[FourierAxis]
) -> SeparableSum:
    """``u(t, .)`` as a sum on ``axes`` whose time factor is the constant 1 (rank unchanged)."""
    ax = u.axes[time_axis]
    vals = ax.evaluate(u.factors[time_axis], torch.tensor([float(t)], dtype=RDTYPE))[:, 0]
    factors = [f.clone() for f in u.factors]
    factors[time_axis] = torch.ones(u.rank, 1, dtype=CDTYPE)
    other = 1 if time_axis == 0 else 0
    factors[other] = factors[other] * vals[:, None]
    return SeparableSum(list(axes), factors)


def term_gram(a: SeparableSum, b: SeparableSum, skip: int | None = None) -> torch.Tensor:
    """``(T_a, T_b)`` closed-form ``L2`` inner products (box means) of the rank-one terms of ``a``, ``b``.

    ``skip``: an axis left out (the products run over the other axes only).
    """
    out = None
    for j, (ax, fa, fb) in enumerate(zip(a.axes, a.factors, b.factors, strict=True)):
        if j == skip:
            continue
        m = max((fa.shape[1] - 1) // 2, (fb.shape[1] - 1) // 2)
        g = axis_gram(ax, "integral", m)
        pa, pb = pad_modes(fa, m), pad_modes(fb, m)
        gj = (pa * g) @ pb.conj().T if g.dim() == 1 else pa @ g @ pb.conj().T
        out = gj if out is None else out * gj
    return out


def unrepresented_terms(
    basis: SeparableSum, candidates: SeparableSum, count: int, skip: int | None = None
) -> list[int]:
    """Greedy enrichment: indices of ``count`` terms of ``candidates`` least represented by ``basis``.

    Pivoted Gram-Schmidt in the closed-form ``L2`` inner product: repeatedly pick the candidate
    whose component orthogonal to ``span(basis terms, picked terms)`` has the largest norm (a term
    already in the span has none). Used to seed new rank-one terms of a slab field from the
    Picard right-hand side: in ``d`` dimensions a random start has an overlap ``~ n^{-d/2}`` with
    a new harmonic such as ``e^{2 i (x_1 + ... + x_d)}``, the right-hand side's terms contain it.
    ``skip``: an axis left out of the comparison (the time axis: a new *spatial* term is
    wanted; its time factor is solved by ALS).

    Examples
    --------
    >>> import math
    >>> ax = [FourierAxis(f"x{j}", (0, 2 * math.pi), 2) for j in range(3)]
    >>> e = [torch.eye(5, dtype=CDTYPE)[k : k + 1] for k in range(5)]   # e^{i k x}, k = -2..2
    >>> basis = SeparableSum(ax, [e[3], e[3], e[3]])                     # e^{i (x0 + x1 + x2)}
    >>> cand = SeparableSum(ax, [torch.cat([e[3], e[4], e[2]])] * 3)    # harmonics 1, 2, 0
    >>> unrepresented_terms(basis, cand.scaled(1.0), 2)
    [1, 2]
    """
    allt = SeparableSum(
        basis.axes,
        [torch.cat([pad_modes(f, m), pad_modes(c, m)]) for f, c, m in zip(
            basis.factors, candidates.factors,
            [max(basis.modes[j], candidates.modes[j]) for j in range(basis.dim)], strict=True)],
    )  # fmt: skip
    gram = term_gram(allt, allt, skip)
    nb = basis.rank
    picked: list[int] = []
    chosen = list(range(nb))
    for _ in range(count):
        if chosen:
            gbb = gram[chosen][:, chosen]
            gcb = gram[nb:][:, chosen]
            proj = (gcb @ torch.linalg.pinv(gbb, rtol=1e-12, hermitian=True) * gcb.conj()).sum(1)
        else:
            proj = torch.zeros(candidates.rank, dtype=CDTYPE)
        rest = (torch.diagonal(gram)[nb:] - proj).real
        if picked:
            rest[picked] = -1.0
        best = int(rest.argmax())
        if float(rest[best]) <= 1e-14 * float(torch.diagonal(gram)[nb:].real.max()):
            break
        picked.append(best)
        chosen.append(nb + best)
    return picked


def _grow(
    model: LowRankFourierSum, seeds: SeparableSum, rank: int, gen: torch.Generator
) -> LowRankFourierSum:
    """A copy of ``model`` with ``rank`` terms; the new terms start on the factors of ``seeds``."""
    new = LowRankFourierSum(model.axes, rank)
    with torch.no_grad():
        for j, ax in enumerate(model.axes):
            free = 1e-6 * torch.randn(rank, ax.n_params, dtype=CDTYPE, generator=gen)
            free[: model.rank] = model.free_parameters(j).detach()
            c = seeds.factors[j]
            k = (c.shape[1] - 1) // 2
            if k < ax.modes:
                c = torch.nn.functional.pad(c, (ax.modes - k, ax.modes - k))
            elif k > ax.modes:
                c = c[:, k - ax.modes : k + ax.modes + 1]
            c = c / c.abs().pow(2).sum(1, keepdim=True).sqrt().clamp_min(1e-300)
            n_new = min(c.shape[0], rank - model.rank)
            free[model.rank : model.rank + n_new] = (
                torch.linalg.pinv(model._synth(j)) @ c[:n_new].T
            ).T * (1e-3 if j == 0 else 1.0)
            new.set_free_parameters_(j, free)
    return new


# ---------------------------------------------------------------- solution object


@dataclass
class SlabSolution:
    """A solution made of time slabs: ``fields[s]`` is the LoRFS field on ``[edges[s], edges[s+1]]``.

    Calling it on points ``(N, D)`` returns the real field (each point evaluated by its slab).
    ``history`` holds, per slab, the Picard changes ``||u_{n+1} - u_n|| / ||u_n||``.
    """

    edges: list[float]
    fields: list[SeparableSum]
    time_axis: int = 0
    history: list[list[float]] = field(default_factory=list)
    seconds: float = 0.0

    def __call__(self, points: torch.Tensor) -> torch.Tensor:
        points = torch.as_tensor(points, dtype=RDTYPE)
        t = points[:, self.time_axis]
        idx = torch.bucketize(
            t.contiguous(), torch.tensor(self.edges[1:-1], dtype=RDTYPE), right=True
        )
        out = torch.zeros(points.shape[0], dtype=RDTYPE)
        for s, u in enumerate(self.fields):
            m = idx == s
            if m.any():
                out[m] = u(points[m])
        return out

    @property
    def rank(self) -> int:
        return max(u.rank for u in self.fields)

    def at_time(self, t: float) -> SeparableSum:
        """The field ``u(t, .)`` (time factor 1) from the slab holding ``t``."""
        s = min(
            max(
                0, int(torch.bucketize(torch.tensor(t), torch.tensor(self.edges[1:-1]), right=True))
            ),
            len(self.fields) - 1,
        )
        u = self.fields[s]
        return restrict_to_time(u, t, self.time_axis, u.axes)


# ---------------------------------------------------------------- the solver


def _start_from(
    model: LowRankFourierSum, g: SeparableSum, time_axis: int, gen: torch.Generator
) -> None:
    """Terms ``0..R_g-1`` of ``model`` = ``g`` held constant in time; the rest small and random."""
    with torch.no_grad():
        for j, ax in enumerate(model.axes):
            free = 1e-6 * torch.randn(model.rank, ax.n_params, dtype=CDTYPE, generator=gen)
            c = g.factors[j][: model.rank]
            k = (c.shape[1] - 1) // 2
            if k < ax.modes:
                c = torch.nn.functional.pad(c, (ax.modes - k, ax.modes - k))
            elif k > ax.modes:
                c = c[:, k - ax.modes : k + ax.modes + 1]
            free[: c.shape[0]] = (torch.linalg.pinv(model._synth(j)) @ c.T).T
            model.set_free_parameters_(j, free)


def solve_nonlinear(
    problem,
    rank: int = 8,
    modes: Sequence[int] | None = None,
    slabs: int = 20,
    picard: int = 30,
    tol: float = 1e-8,
    sweeps: int = 2,
    ic_weight: float = 1.0,
    extension: float = 2.0,
    seed: int = 0,
    max_terms: int = 600,
    progress: Callable[[int, int, float], None] | None = None,
    grow: int = 2,
) -> SlabSolution:
    """Solve ``L u + sum_p a_p u^p = f`` (a :class:`lorfs.problems.Problem` with a time axis first).

    Parameters
    ----------
    problem:
        The problem (linear problems work too: one Picard step per slab).
    rank:
        Rank ``R`` of every slab field and of the truncated nonlinear terms.
    modes:
        Modes per axis; the time entry is the modes *per slab* (default: the problem's).
    slabs:
        Number of equal time slabs.
    picard:
        Maximum Picard iterations per slab.
    tol:
        Stop a slab's iterations when ``||u_{n+1} - u_n|| / ||u_n|| < tol`` (closed form).
    sweeps:
        ALS sweeps per Picard iteration (warm-started).
    ic_weight:
        Weight of the slab's initial-condition piece.
    extension:
        Fourier-extension factor of the slab's time axis.
    seed:
        Seed of the small random start of the terms beyond the initial condition's rank.
    max_terms:
        ``D > 2``: nonlinear terms are kept exactly up to this many rank-one terms.
    progress:
        ``progress(slab, slabs, change)`` after each slab (e.g. a tqdm update).
    grow:
        Terms added per Picard iteration while a slab field has fewer than ``rank`` terms,
        seeded from the right-hand side's least represented terms (``0``: start the missing
        terms small and random instead).

    References
    ----------
    Kaminsky, Freedman, Radinsky, ICML 2026 (LoRFS representation and closed-form losses).

    Examples
    --------
    >>> from lorfs.problems import get_problem, relative_error_on
    >>> p = get_problem("reaction", rho=5.0)
    >>> sol = solve_nonlinear(p, rank=8, modes=[8, 24], slabs=10)
    >>> relative_error_on(p, sol, n=2000) < 1e-3
    True
    """
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # the block systems are tiny: extra threads only add contention
    try:
        return _solve_nonlinear(
            problem,
            rank,
            modes,
            slabs,
            picard,
            tol,
            sweeps,
            ic_weight,
            extension,
            seed,
            max_terms,
            progress,
            grow,
        )
    finally:
        torch.set_num_threads(threads)


def _solve_nonlinear(
    problem,
    rank,
    modes,
    slabs,
    picard,
    tol,
    sweeps,
    ic_weight,
    extension,
    seed,
    max_terms,
    progress,
    grow,
) -> SlabSolution:
    if problem.time_axis != 0 or problem.initial is None:
        raise ValueError(
            f"problem {problem.name!r}: time slabs need the time axis first and an initial condition"
        )
    rank = positive_int(rank, "rank")
    slabs = positive_int(slabs, "slabs")
    t0, t1 = problem.specs[0].domain
    full_axes = problem.make_axes(modes)
    k_t = full_axes[0].modes
    space = full_axes[1:]
    model_modes = [k_t] + [ax.modes for ax in space]
    gen = torch.Generator().manual_seed(seed)
    edges = [t0 + (t1 - t0) * s / slabs for s in range(slabs + 1)]
    start = time.perf_counter()
    g_full = problem.initial(full_axes)
    fields, history = [], []
    g = None
    for s in range(slabs):
        ta = FourierAxis(
            full_axes[0].name, (edges[s], edges[s + 1]), k_t, kind="extension", extension=extension
        )
        axes = [ta, *space]
        g = SeparableSum(axes, g_full.factors) if g is None else SeparableSum(axes, g.factors)
        g = truncate(crop_periodic(g, model_modes), rank)
        src = [(sv, op * -1.0) for sv, op in problem.source(axes)] if problem.source else []
        c = stabiliser(g, problem.reaction) if problem.reaction else 0.0
        op = problem.operator + Const(c)
        weight = 1.0 / max(op.scale(axes), 1e-12) ** 2
        ic_meas = ["integral"] * len(axes)
        ic_meas[0] = ("point", edges[s])
        # slab fields start from the initial condition's terms; when it has fewer than ``rank``
        # terms (the first slab), the rest are added by greedy enrichment from the Picard
        # right-hand side, ``grow`` per iteration (:func:`unrepresented_terms`)
        growing = grow > 0 and bool(problem.reaction) and g.rank < rank
        model = LowRankFourierSum(axes, min(rank, g.rank) if growing else rank)
        _start_from(model, g, 0, gen)
        w = SeparableSum(axes, [f.detach() for f in model.factors()])
        changes = []
        for _it in range(picard):
            data = None
            nl = nonlinear_term(w, problem.reaction, rank, model_modes, max_terms)
            if nl is not None and growing:
                cand = crop_periodic(nl, model_modes)
                picks = unrepresented_terms(w, cand, min(grow, rank - model.rank), skip=0)
                if picks:
                    seeds = SeparableSum(axes, [f[picks] for f in cand.factors])
                    model = _grow(model, seeds, model.rank + len(picks), gen)
                growing = bool(picks) and model.rank < rank
            if nl is not None:
                data = truncate(
                    crop_periodic(w.real_part().scaled(c) - nl, model_modes),
                    2 * rank,
                    max_terms=max_terms,
                )

            def pieces(
                u, data=data, op=op, src=src, axes=axes, weight=weight, g=g, ic_meas=ic_meas
            ):
                items = [(u, op), *src]
                if data is not None:
                    items.append((data, Identity() * -1.0))
                return [
                    Piece(items, ["integral"] * len(axes), weight=weight, name="pde"),
                    Piece(
                        [(u, Identity()), (g, Identity() * -1.0)],
                        ic_meas,
                        ic_weight,
                        name="initial",
                    ),
                ]

            als_solve(model, pieces, sweeps=sweeps if _it else 2 * sweeps)
            new = SeparableSum(axes, [f.detach() for f in model.factors()])
            change = relative_l2_error(new, w) if float(l2_norm2(w)) > 0 else 1.0
            changes.append(change)
            w = new
            if change < tol and not growing:
                break
        fields.append(w)
        history.append(changes)
        g = restrict_to_time(w, edges[s + 1], 0, axes)
        if progress is not None:
            progress(s + 1, slabs, changes[-1])
    return SlabSolution(edges, fields, 0, history, time.perf_counter() - start)
