"""Parameter-free AsymP-GDA (Alg. 1 of the paper), without a linear programme.

Paper: Abe et al., "Asymmetric Perturbation in Solving Bilinear Saddle-Point
Optimization", ICML 2026, Sec. 5, Alg. 1.

The invariance threshold of ``mu`` (Cor. 3.2) is unknown in practice, so Alg. 1
starts from ``mu_init`` and repeats:

1. run AsymP-GDA (Eq. (3)) on the ``mu``-perturbed game, warm-started from the
   previous iterate, until it has (nearly) reached the perturbed saddle point;
2. if the strategies are ``eps``-optimal in the *original* game, stop;
3. otherwise ``mu <- mu / 2`` and go to 1.

Below the threshold step 2 succeeds, so only O(log(mu_init / mu*)) halvings happen and
each stage converges linearly (Thm 4.1).

**Everything is computed from quantities the algorithm already has; no LP is solved.**
Both mirrored processes run side by side (the x-perturbed one, whose x converges to an
equilibrium strategy, and the y-perturbed one for y; Sec. 4, "both players"). Every
iterate certifies a bound on the unknown value ``v*`` of ``min_x max_y x^T A y``:

    v* <= U = min over x iterates of max_j (A^T x)_j,
    v* >= L = max over y iterates of min_i (A y)_i,

so the best pair ``(x_best, y_best)`` found so far has NashConv ``U - L`` *exactly*
(:func:`~asymp_gda.exploitability.nash_conv`), and step 2 is ``U - L <= eps``
(:func:`certified_nash_conv` is that test). Step 1's stop uses the perturbed duality gap
(:func:`~asymp_gda.exploitability.perturbed_gap`): by ``mu``-strong convexity
``||x - x^mu||_2 <= sqrt(2 gap / mu)``. A process counts as converged once
``sqrt(2 gap / mu) <= nash_conv / (4 max|A|)`` (:func:`stage_tolerance`): it is then close
to ``x^mu`` on the scale of the error still to remove, so if the pair is still not
certified, ``mu`` is (most likely) above the threshold. This test is a heuristic -- the
worst-case version replaces ``max|A|`` by the largest column norm of ``A`` and was
measured 5x slower on 100 x 100 games -- but it cannot make the answer wrong: the returned
NashConv is always exact, a premature halving only costs iterations.

Design choices of this implementation (not fixed by the paper), stated in the README:

- the two processes halve in lockstep: a process halves when it has converged, the pair is
  not yet certified, and its ``mu`` is not below the other process's (neither certificate
  tells which side is still biased; halving an exact side costs little, since below the
  threshold its ``x^mu`` does not move);
- checks every ``check_every`` iterations; gradient evaluations are counted as matrix-vector
  products with ``A`` or ``A^T`` in the updates, 4 per iteration (2 per process). The checks
  reuse the products of the neighbouring updates (``A y`` of the next x step, ``A^T x`` of the
  last y step) and are not counted;
- batched: many games of one shape (``(B, m, n)``) run together, each with its own ``mu`` and
  step size (a step-size study is one batch of the same game with different ``eta``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from .asymp_gda import asymp_gda_step, check_strength
from .matrix_game import MatrixGame, column_gradient, row_gradient
from .projection import project_simplex

__all__ = [
    "ParameterFreeResult",
    "parameter_free",
    "certified_nash_conv",
    "stage_tolerance",
    "GRADIENTS_PER_ITERATION",
]

GRADIENTS_PER_ITERATION = 4
"""Matrix-vector products per iteration of the two mirrored processes (2 each, Eq. (3))."""


@dataclass
class ParameterFreeResult:
    """Outcome of :func:`parameter_free`, one entry per game (row of the batch).

    Attributes
    ----------
    x, y:
        ``(B, m)``, ``(B, n)``: the best certified pair (the x iterate with the lowest
        ``max_j (A^T x)_j`` and the y iterate with the highest ``min_i (A y)_i`` seen).
    nash_conv:
        ``(B,)`` NashConv of ``(x, y)``, ``max_j (A^T x)_j - min_i (A y)_i`` -- exact, and an
        upper bound on either player's exploitability.
    converged:
        ``(B,)`` bool, exactly ``nash_conv <= eps``.
    iterations:
        ``(B,)`` iterations of the two processes (each iteration updates both).
    gradient_evaluations:
        ``(B,)`` matrix-vector products with ``A`` / ``A^T`` (``4 * iterations``).
    mu_x, mu_y:
        ``(B,)`` final strengths of the x-perturbed and the y-perturbed process.
    halvings:
        ``(B,)`` halvings of both processes together.
    """

    x: torch.Tensor
    y: torch.Tensor
    nash_conv: torch.Tensor
    converged: torch.Tensor
    iterations: torch.Tensor
    gradient_evaluations: torch.Tensor
    mu_x: torch.Tensor
    mu_y: torch.Tensor
    halvings: torch.Tensor


def _stack(games) -> tuple[torch.Tensor, list[MatrixGame]]:
    games = [games] if isinstance(games, MatrixGame) else list(games)
    if not games:
        raise ValueError("parameter_free needs at least one game")
    shapes = {g.shape for g in games}
    if len(shapes) != 1:
        raise ValueError(f"all games of a batch must have one shape, got {sorted(shapes)}")
    return torch.stack([g.A for g in games]), games


def certified_nash_conv(upper: torch.Tensor, lower: torch.Tensor) -> torch.Tensor:
    """Alg. 1, step 2 without ``v*``: NashConv ``U - L`` of the best pair from value bounds.

    ``upper`` = the best ``max_j (A^T x)_j`` over x iterates (``>= v*``), ``lower`` = the best
    ``min_i (A y)_i`` over y iterates (``<= v*``); ``(B,)`` each.

    Examples
    --------
    >>> import torch
    >>> round(float(certified_nash_conv(torch.tensor([0.3]), torch.tensor([0.1]))[0]), 6)
    0.2
    """
    return upper - lower


def stage_tolerance(
    mu: torch.Tensor, nash_conv: torch.Tensor, scale: torch.Tensor, floor: float = 1e-14
) -> torch.Tensor:
    """Perturbed-gap tolerance of one stage of Alg. 1 (step 1), ``(B,)``.

    ``mu/2 (nash_conv / (4 c))^2``, i.e. ``c sqrt(2 gap / mu) <= nash_conv / 4`` where
    ``sqrt(2 gap / mu)`` bounds ``||x - x^mu||_2``; ``c`` = ``scale`` (we use ``max|A_ij|``).
    Floored at ``floor`` (round-off of the gap).

    Examples
    --------
    >>> import torch
    >>> round(float(stage_tolerance(torch.tensor([2.0]), torch.tensor([0.4]), torch.tensor([1.0]))[0]), 6)
    0.01
    """
    return torch.clamp(0.5 * mu * (nash_conv / (4.0 * scale)) ** 2, min=floor)


def _gap_terms(A, x, y, mu):
    """``(max_j (A^T x)_j, min_i (A y)_i, perturbed gap)`` of the x-perturbed game, rows of a batch."""
    ax = column_gradient(A, x)  # (B, n) = A^T x
    ay = row_gradient(A, y)  # (B, m) = A y
    upper = ax.amax(-1) + 0.5 * mu * (x * x).sum(-1)  # max_y' f(x, y')
    xb = project_simplex(-ay / mu[:, None])  # argmin_x' f(x', y)
    lower = (xb * ay).sum(-1) + 0.5 * mu * (xb * xb).sum(-1)
    return ax.amax(-1), ay.amin(-1), upper - lower


def parameter_free(
    games: MatrixGame | Sequence[MatrixGame],
    eps: float = 1e-6,
    mu_init: float = 1.0,
    eta: float | Sequence[float] | torch.Tensor | None = None,
    eta_scale: float = 0.5,
    max_iterations: int = 1_000_000,
    check_every: int = 50,
    progress: bool = False,
    trace: bool = False,
) -> ParameterFreeResult | tuple[ParameterFreeResult, dict]:
    """Parameter-free AsymP-GDA (Alg. 1), LP-free, on one game or a batch of same-shape games.

    Parameters
    ----------
    games:
        A :class:`~asymp_gda.matrix_game.MatrixGame` or a list of games of one shape.
    eps:
        Target NashConv of the returned pair (certified, no LP).
    mu_init:
        Initial strength of both processes (paper default 1); halved until certified.
    eta:
        Step size: one float, one per game, or ``None`` for ``eta_scale / ||A||_2`` per game.
    eta_scale:
        Step size relative to ``1 / ||A||_2`` when ``eta`` is not given (``> 0``).
    max_iterations, check_every:
        Budget per game and how often the certificate and the gaps are checked.
    progress:
        Show a tqdm bar (iterations of the slowest game, and its certified NashConv).
    trace:
        Also return ``{"iterations": [...], "nash_conv": [[...] per check], "mu_x": ...}``.

    Returns
    -------
    ParameterFreeResult
        (and the trace dict when ``trace=True``).

    References
    ----------
    Abe et al. (ICML 2026), Alg. 1, Thm 3.1 (invariance), Thm 4.1 (linear rate).

    Examples
    --------
    >>> from asymp_gda.matrix_game import random_game
    >>> from asymp_gda.exploitability import nash_conv
    >>> g = random_game(5, seed=0)
    >>> r = parameter_free(g, eps=1e-6)
    >>> bool(r.converged[0]), float(r.nash_conv[0]) <= 1e-6
    (True, True)
    >>> abs(float(nash_conv(g, r.x, r.y)[0] - r.nash_conv[0])) < 1e-12  # the reported value is exact
    True
    """
    if not (eps > 0):
        raise ValueError(f"eps must be > 0, got {eps}")
    check_strength(mu_init, "mu_init")
    if check_every < 1 or max_iterations < 1:
        raise ValueError("check_every and max_iterations must be >= 1")
    A, glist = _stack(games)
    B, m, n = A.shape
    norms = torch.tensor([g.norm for g in glist], dtype=torch.float64)
    if eta is None:
        if not eta_scale > 0:
            raise ValueError(f"eta_scale must be > 0, got {eta_scale}")
        eta_t = eta_scale / norms
    else:
        eta_t = torch.as_tensor(eta, dtype=torch.float64).reshape(-1).expand(B).clone()
        if not bool((eta_t > 0).all() & torch.isfinite(eta_t).all()):
            raise ValueError(f"step size eta must be > 0 and finite, got {eta}")
    eta_t = eta_t.view(B, 1)
    amax = A.abs().flatten(1).amax(-1)  # (B,) max |A_ij|, the scale of the stage tolerance
    if all(g.A is glist[0].A for g in glist):
        A = glist[0].A  # one game (e.g. a step-size study): matrix-matrix products
    At = -A.transpose(-1, -2).contiguous()  # the role-swapped game: its x player is y

    def uniform(k: int) -> torch.Tensor:
        return torch.full((B, k), 1.0 / k, dtype=torch.float64)

    px = (uniform(m), uniform(n))  # x-perturbed process (x, y)
    py = (uniform(n), uniform(m))  # y-perturbed process, role-swapped (y, x)
    mu_x = torch.full((B,), float(mu_init), dtype=torch.float64)
    mu_y = mu_x.clone()
    best_x, best_y = px[0].clone(), py[0].clone()
    upper = column_gradient(A, best_x).amax(-1)
    lower = row_gradient(A, best_y).amin(-1)
    done = (upper - lower) <= eps
    iters = torch.zeros(B, dtype=torch.long)
    halvings = torch.zeros(B, dtype=torch.long)
    log = {"iterations": [0], "nash_conv": [(upper - lower).tolist()], "mu_x": [mu_x.tolist()]}
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=max_iterations, desc="Alg. 1 (LP-free)", unit="it", leave=False)
    while not bool(done.all()) and int(iters.max()) < max_iterations:
        active = ~done
        px0, py0, mx, my = px, py, mu_x[:, None], mu_y[:, None]
        for _ in range(check_every):
            px = asymp_gda_step(A, *px, mx, eta_t)
            py = asymp_gda_step(At, *py, my, eta_t)
        if not bool(active.all()):  # finished games keep their iterates
            a = active[:, None]
            px = tuple(torch.where(a, new, old) for new, old in zip(px, px0, strict=True))
            py = tuple(torch.where(a, new, old) for new, old in zip(py, py0, strict=True))
        iters += active.long() * check_every
        # value bounds from all four iterates; the gaps of both perturbed games
        ux, ly_px, gap_x = _gap_terms(A, px[0], px[1], mu_x)
        neg_ly, neg_ux_py, gap_y = _gap_terms(At, py[0], py[1], mu_y)
        cands_u = torch.stack([ux, -neg_ux_py])  # max(A^T x) of x_px and of x_py
        cands_l = torch.stack([-neg_ly, ly_px])  # min(A y) of y_py and of y_px
        xs, ys = torch.stack([px[0], py[1]]), torch.stack([py[0], px[1]])
        iu, il = cands_u.argmin(0), cands_l.argmax(0)
        cu, cl = cands_u.gather(0, iu[None])[0], cands_l.gather(0, il[None])[0]
        better_u, better_l = active & (cu < upper), active & (cl > lower)
        best_x = torch.where(better_u[:, None], xs[iu, torch.arange(B)], best_x)
        best_y = torch.where(better_l[:, None], ys[il, torch.arange(B)], best_y)
        upper, lower = torch.where(better_u, cu, upper), torch.where(better_l, cl, lower)
        nc = certified_nash_conv(upper, lower)
        done |= active & (nc <= eps)  # Alg. 1, step 2
        # Alg. 1, step 3: halve a converged process while the pair is not certified
        conv_x = gap_x <= stage_tolerance(mu_x, nc, amax)
        conv_y = gap_y <= stage_tolerance(mu_y, nc, amax)
        halve_x = active & ~done & conv_x & (mu_x >= mu_y)
        halve_y = active & ~done & conv_y & (mu_y >= mu_x)
        mu_x = torch.where(halve_x, 0.5 * mu_x, mu_x)
        mu_y = torch.where(halve_y, 0.5 * mu_y, mu_y)
        halvings += halve_x.long() + halve_y.long()
        if trace:
            log["iterations"].append(int(iters.max()))
            log["nash_conv"].append(nc.tolist())
            log["mu_x"].append(mu_x.tolist())
        if bar is not None:
            bar.n = int(iters.max())
            bar.set_postfix(nash_conv=f"{float(nc.max()):.2e}", refresh=False)
            bar.update(0)
    if bar is not None:
        bar.close()
    nc = certified_nash_conv(upper, lower)
    result = ParameterFreeResult(
        x=best_x,
        y=best_y,
        nash_conv=nc,
        converged=nc <= eps,
        iterations=iters,
        gradient_evaluations=GRADIENTS_PER_ITERATION * iters,
        mu_x=mu_x,
        mu_y=mu_y,
        halvings=halvings,
    )
    return (result, log) if trace else result
