"""Gradient evaluations to an ``eps``-equilibrium on random games, with a step-size study (Sec. 6).

Paper: Abe et al., "Asymmetric Perturbation in Solving Bilinear Saddle-Point
Optimization", ICML 2026, Sec. 5-6: the parameter-free AsymP-GDA (Alg. 1) keeps
a linear rate, so it needs ``O(log 1/eps)`` iterations, like optimistic GDA and
extragradient (the last-iterate baselines).

Every method stops on the same LP-free target, the NashConv (duality gap)
``max_j (A^T x)_j - min_i (A y)_i <= eps`` of its pair, and is charged its
matrix-vector products with ``A`` or ``A^T`` ("gradient evaluations"): OGDA 2 per
iteration, extragradient 4, parameter-free AsymP-GDA 4 (two mirrored processes,
:data:`~asymp_gda.parameter_free.GRADIENTS_PER_ITERATION`). Step sizes are
``eta = s / ||A||_2`` for every ``s`` of the study, and a method's *best step* is the
``s`` with the lowest median over the games it solves all of.

- :func:`baseline_hitting_times` -- OGDA / EG gradient evaluations to ``eps``, one
  game, a batch of step sizes (matrix-matrix products);
- :func:`random_game_batch` -- seeded uniform ``[-1, 1]`` games of one size;
- :func:`step_size_study` -- all three methods x all step sizes on a list of games;
- :func:`random_games_table` -- the study as a table (median, quartiles) and a figure;
- :func:`large_game_table` -- large games (1000 x 1000): each method at the best step of the
  study on a smaller *proxy* size (the full study at the large size costs hours on a CPU).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from .matrix_game import MatrixGame, column_gradient, random_game, row_gradient
from .projection import project_simplex

__all__ = [
    "baseline_hitting_times",
    "random_game_batch",
    "step_size_study",
    "random_games_table",
    "large_game_table",
    "METHODS",
]

METHODS = ("parameter-free AsymP-GDA", "OGDA", "EG")
_GRADIENTS = {"OGDA": 2, "EG": 4}  # matrix-vector products per iteration


def random_game_batch(m: int, seeds: Sequence[int]) -> list[MatrixGame]:
    """``m x m`` uniform ``[-1, 1]`` games, one per seed."""
    return [random_game(m, seed=s) for s in seeds]


def baseline_hitting_times(
    game: MatrixGame,
    method: str,
    eta: Sequence[float],
    eps: float = 1e-6,
    max_gradients: int = 400_000,
    check_every: int = 50,
    progress: bool = False,
) -> torch.Tensor:
    """Gradient evaluations until OGDA's / EG's last iterate has NashConv ``<= eps``.

    Parameters
    ----------
    game:
        The matrix game.
    method:
        ``"OGDA"`` or ``"EG"``.
    eta:
        Step sizes (one run each, batched).
    eps, max_gradients, check_every:
        Target NashConv, budget in gradient evaluations, iterations between checks.
    progress:
        tqdm bar over iterations.

    Returns
    -------
    torch.Tensor
        ``(S,)`` gradient evaluations per step size, ``-1`` where the budget ran out.

    Examples
    --------
    >>> from asymp_gda.matrix_game import biased_rps
    >>> int(baseline_hitting_times(biased_rps(), "OGDA", [0.1])[0]) > 0
    True
    """
    if method not in _GRADIENTS:
        raise ValueError(f"method must be 'OGDA' or 'EG', got {method!r}")
    if not eps > 0:
        raise ValueError(f"eps must be > 0, got {eps}")
    etas = torch.as_tensor(eta, dtype=torch.float64).reshape(-1, 1)  # (S, 1)
    if not bool((etas > 0).all()):
        raise ValueError(f"step sizes must be > 0, got {eta}")
    A, (m, n), S = game.A, game.shape, etas.shape[0]
    per = _GRADIENTS[method]
    x = torch.full((S, m), 1.0 / m, dtype=torch.float64)
    y = torch.full((S, n), 1.0 / n, dtype=torch.float64)
    gx, gy = row_gradient(A, y), column_gradient(A, x)  # A y, A^T x
    hit = torch.full((S,), -1, dtype=torch.long)
    t, max_iterations = 0, max_gradients // per
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=max_iterations, desc=method, unit="it", leave=False)
    while t < max_iterations and bool((hit < 0).any()):
        for _ in range(check_every):
            ngx, ngy = row_gradient(A, y), column_gradient(A, x)
            if method == "OGDA":  # optimistic: extrapolate with the previous gradient
                x = project_simplex(x - etas * (2 * ngx - gx))
                y = project_simplex(y + etas * (2 * ngy - gy))
                gx, gy = ngx, ngy
            else:  # extragradient: look ahead, then step with the look-ahead gradient
                hx = project_simplex(x - etas * ngx)
                hy = project_simplex(y + etas * ngy)
                x = project_simplex(x - etas * row_gradient(A, hy))
                y = project_simplex(y + etas * column_gradient(A, hx))
        t += check_every
        nc = column_gradient(A, x).amax(-1) - row_gradient(A, y).amin(-1)
        newly = (hit < 0) & (nc <= eps) & torch.isfinite(nc)
        hit = torch.where(newly, torch.full_like(hit, t * per), hit)
        if bar is not None:
            bar.update(check_every)
    if bar is not None:
        bar.close()
    return hit


def step_size_study(
    games: Sequence[MatrixGame],
    eta_scales: Sequence[float] = (0.1, 0.25, 0.5, 1.0),
    eps: float = 1e-6,
    max_gradients: int = 400_000,
    progress: bool = False,
) -> dict[str, dict[float, list[int]]]:
    """Gradient evaluations to NashConv ``<= eps`` of every method and step size, per game.

    Returns ``{method: {scale: [evaluations per game, -1 = not reached]}}`` for the methods
    in :data:`METHODS`; step size ``scale / ||A||_2``. Parameter-free AsymP-GDA starts at
    ``mu = 1`` (the paper's default) and certifies without an LP.
    """
    from .parameter_free import GRADIENTS_PER_ITERATION, parameter_free

    out: dict[str, dict[float, list[int]]] = {k: {s: [] for s in eta_scales} for k in METHODS}
    for g in games:
        etas = [s / g.norm for s in eta_scales]
        pf = parameter_free(
            [g] * len(etas),
            eps=eps,
            eta=etas,
            max_iterations=max_gradients // GRADIENTS_PER_ITERATION,
            progress=progress,
        )
        evals = torch.where(pf.converged, pf.gradient_evaluations, -1)
        for s, v in zip(eta_scales, evals.tolist(), strict=True):
            out[METHODS[0]][s].append(int(v))
        for method in METHODS[1:]:
            hits = baseline_hitting_times(g, method, etas, eps, max_gradients, progress=progress)
            for s, v in zip(eta_scales, hits.tolist(), strict=True):
                out[method][s].append(int(v))
    return out


def _quartiles(values: list[int]) -> tuple[float, float, float]:
    """``(q25, median, q75)`` (inclusive method; one value gives it three times)."""
    import statistics

    if len(values) == 1:
        return float(values[0]), float(values[0]), float(values[0])
    q = statistics.quantiles(values, n=4, method="inclusive")
    return q[0], statistics.median(values), q[2]


def best_scale(runs: dict[float, list[int]]) -> float | None:
    """The step scale that solves the most games, then has the lowest median evaluations."""
    scored = []
    for s, v in runs.items():
        ok = [e for e in v if e >= 0]
        if ok:
            scored.append((-len(ok), _quartiles(ok)[1], s))
    return min(scored)[2] if scored else None


def random_games_table(
    sizes: Sequence[int], seeds: int, max_gradients: int, eps: float = 1e-6,
    eta_scales: Sequence[float] = (0.1, 0.25, 0.5, 1.0), seed: int = 0, progress: bool = False,
):  # fmt: skip
    """Gradient evaluations to NashConv ``eps`` on random games, every method x step size.

    Args:
        sizes: Game sizes ``m`` (``m x m`` uniform ``[-1, 1]`` games).
        seeds: Games per size (seeds ``seed .. seed + seeds - 1``).
        max_gradients: Budget per run in gradient evaluations.
        eps: Target NashConv.
        eta_scales: Step sizes, times ``1/||A||_2``.
        seed: First game seed.
        progress: tqdm bars.

    Returns:
        ``(table, study_table, figure)``: the best step of each method per size, the full
        step-size study, and a scatter of every game's count at each method's best step.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from icml26_shared.results import Table

    common = (
        f"{seeds} uniform[-1, 1] m x m game(s) per size (seeds {seed}..{seed + seeds - 1}), "
        f"uniform start, target NashConv <= {eps:g} of the method's own pair (no LP anywhere; "
        "checked every 50 iterations), budget "
        f"{max_gradients} gradient evaluations (matrix-vector products: OGDA 2 per iteration, "
        "EG 4, parameter-free AsymP-GDA 4 for its two mirrored processes). Step size "
        "s/||A||_2. Parameter-free AsymP-GDA: Alg. 1 from mu = 1, halving certified by the "
        "perturbed gap and the value bounds of the iterates."
    )
    best = Table(
        "Gradient evaluations to NashConv 1e-6 on random games, each method at its best step",
        ["m", "method", "best step s", "solved", "median", "q25", "q75"],
        notes=common + " Best step: most games solved, then lowest median. Quartiles over "
        "solved games.",
    )
    study = Table(
        "Step-size study: gradient evaluations to NashConv 1e-6 (median over games)",
        ["m", "method", *[f"s={s:g}" for s in eta_scales]],
        notes=common + " Entry: median over the games solved, and (k/n) when not all were.",
    )
    fig, ax = plt.subplots(figsize=(6, 4))
    for i, m in enumerate(sizes):
        games = random_game_batch(m, range(seed, seed + seeds))
        res = step_size_study(games, eta_scales, eps, max_gradients, progress)
        for j, method in enumerate(METHODS):
            runs = res[method]
            row = {"m": m, "method": method}
            for s, v in runs.items():
                ok = [e for e in v if e >= 0]
                med = _quartiles(ok)[1] if ok else None
                cell = "-" if med is None else f"{med:.4g}"
                row[f"s={s:g}"] = cell + ("" if len(ok) == len(v) else f" ({len(ok)}/{len(v)})")
            study.add_row(**row)
            s_best = best_scale(runs)
            ok = [e for e in runs[s_best] if e >= 0] if s_best is not None else []
            q25, med, q75 = _quartiles(ok) if ok else (None, None, None)
            best.add_row(m=m, method=method, **{"best step s": s_best}, solved=f"{len(ok)}/{seeds}",
                         median=med, q25=q25, q75=q75)  # fmt: skip
            xs = [i + (j - 1) * 0.25] * len(ok)
            ax.scatter(xs, ok, s=14, color=f"C{j}", label=method if i == 0 else None)
    ax.set_xticks(range(len(sizes)), [str(m) for m in sizes])
    ax.set_yscale("log")
    ax.set_xlabel("m (game size)")
    ax.set_ylabel(f"gradient evaluations to NashConv <= {eps:g}")
    ax.set_title("each method at its best step size")
    ax.legend(fontsize=8)
    return best, study, fig


def large_game_table(
    size: int, seeds: int, max_gradients: int, proxy_size: int, proxy_seeds: int,
    proxy_max_gradients: int, eps: float = 1e-6,
    eta_scales: Sequence[float] = (0.1, 0.25, 0.5, 1.0), seed: int = 0, progress: bool = False,
    steps: dict[str, float] | None = None, methods: Sequence[str] | None = None,
):  # fmt: skip
    """Gradient evaluations to NashConv ``eps`` on large random games, each method at its best step.

    The best step of every method is chosen by the full step-size study
    (:func:`step_size_study`) on ``proxy_seeds`` games of the smaller ``proxy_size``
    (:func:`best_scale`); the large games (seeds ``seed .. seed + seeds - 1``) are then run
    once per method at that step. No LP is solved anywhere: every method stops on the exact
    duality gap of its own pair.

    Args:
        size, seeds, max_gradients: The large games and the budget per run on each.
        proxy_size, proxy_seeds, proxy_max_gradients: The step-size study's games and budget.
        eps: Target NashConv.
        eta_scales: Step-size grid, times ``1/||A||_2``.
        seed: First game seed (large and proxy games use the same seeds).
        progress: tqdm bars.
        steps: ``{method: s}`` to skip the proxy study and use these steps (chosen beforehand
            by the same study, e.g. the quick run's proxy table); the proxy table is then empty.
        methods: Run only these of :data:`METHODS` (e.g. one method per process).

    Returns:
        ``(table, proxy_table, figure)``.

    Examples
    --------
    >>> t, _, _ = large_game_table(6, 1, 40_000, 4, 2, 40_000, eta_scales=(0.5, 1.0))
    >>> [r["method"] for r in t.rows] == list(METHODS)
    True
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from icml26_shared.results import Table

    from .parameter_free import GRADIENTS_PER_ITERATION, parameter_free

    methods = list(METHODS if methods is None else methods)
    if unknown := set(methods) - set(METHODS) | set(steps or {}) - set(METHODS):
        raise ValueError(f"unknown methods {sorted(unknown)}; choose from {METHODS}")
    if steps is None:
        proxy_games = random_game_batch(proxy_size, range(seed, seed + proxy_seeds))
        study = step_size_study(proxy_games, eta_scales, eps, proxy_max_gradients, progress)
    else:
        study = {}
    games = random_game_batch(size, range(seed, seed + seeds))
    common = (
        f"uniform[-1, 1] games, uniform start, target NashConv <= {eps:g} of the method's own "
        "pair, exact and LP-free (checked every 50 iterations; no LP is solved anywhere, a test "
        "makes every LP call fail). Gradient evaluations = matrix-vector products with A or "
        "A^T: OGDA 2 per iteration, EG 4, parameter-free AsymP-GDA (Alg. 1 from mu = 1) 4 for "
        "its two mirrored processes. Step size s/||A||_2."
    )
    proxy = Table(
        f"Step-size study on the {proxy_size} x {proxy_size} proxy: gradient evaluations to "
        f"NashConv {eps:g} (median over games)",
        ["m", "method", *[f"s={s:g}" for s in eta_scales], "best step s"],
        notes=f"{proxy_seeds} {proxy_size} x {proxy_size} " + common + " Budget "
        f"{proxy_max_gradients} gradient evaluations. Entry: median over the games solved, and "
        "(k/n) when not all were; best step: most games solved, then lowest median.",
    )
    table = Table(
        f"Random {size} x {size} games: gradient evaluations to NashConv {eps:g}, each method "
        f"at its best step (chosen on the {proxy_size} x {proxy_size} proxy)",
        ["m", "method", "step s", "solved", "median", "min", "max", "per game"],
        notes=f"{seeds} {size} x {size} game(s) (seeds {seed}..{seed + seeds - 1}), "
        + common
        + f" Budget {max_gradients} gradient evaluations per run; -1 = not reached. The step "
        f"of each method is its best on the {proxy_size} x {proxy_size} proxy study (the study "
        f"at {size} x {size} itself is not run: its small steps exhaust the budget).",
    )
    fig, ax = plt.subplots(figsize=(6, 4))
    if steps is not None:
        table.notes += (
            f" Steps fixed in the preset ({', '.join(f'{k} s={v:g}' for k, v in steps.items())}),"
            f" chosen beforehand by the same study on the {proxy_size} x {proxy_size} proxy "
            "(the quick run's large_game proxy table); the proxy study is not rerun here."
        )
    for j, method in enumerate(METHODS):
        if method not in methods:
            continue
        if steps is not None:
            s_best = float(steps[method])
        else:
            runs = study[method]
            s_best = best_scale(runs)
            row = {"m": proxy_size, "method": method, "best step s": s_best}
            for s, v in runs.items():
                ok = [e for e in v if e >= 0]
                cell = "-" if not ok else f"{_quartiles(ok)[1]:.4g}"
                row[f"s={s:g}"] = cell + ("" if len(ok) == len(v) else f" ({len(ok)}/{len(v)})")
            proxy.add_row(**row)
        if s_best is None:
            s_best = max(eta_scales)
        evals = []
        for g in games:
            eta = s_best / g.norm
            if j == 0:
                r = parameter_free(
                    g, eps=eps, eta=eta, progress=progress,
                    max_iterations=max_gradients // GRADIENTS_PER_ITERATION,
                )  # fmt: skip
                evals.append(int(r.gradient_evaluations[0]) if bool(r.converged[0]) else -1)
            else:
                hit = baseline_hitting_times(
                    g, method, [eta], eps, max_gradients, progress=progress
                )
                evals.append(int(hit[0]))
        ok = [e for e in evals if e >= 0]
        table.add_row(
            m=size, method=method, **{"step s": s_best}, solved=f"{len(ok)}/{len(evals)}",
            median=_quartiles(ok)[1] if ok else None, min=min(ok) if ok else None,
            max=max(ok) if ok else None, **{"per game": " ".join(str(e) for e in evals)},
        )  # fmt: skip
        ax.scatter([j] * len(ok), ok, s=18, color=f"C{j}", label=f"{method} (s={s_best:g})")
    ax.set_xticks(range(len(METHODS)), [m.replace("parameter-free ", "") for m in METHODS])
    ax.set_yscale("log")
    ax.set_ylabel(f"gradient evaluations to NashConv <= {eps:g}")
    ax.set_title(
        f"{size} x {size} random games, best step from the {proxy_size} x {proxy_size} proxy"
    )
    ax.legend(fontsize=8)
    return table, proxy, fig
