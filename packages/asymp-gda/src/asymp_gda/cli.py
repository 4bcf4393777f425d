"""Command line of asymp-gda: ``asymp-gda --help``.

``fit/validate/test/predict`` (LightningCLI over :class:`SaddlePointModule` and
:class:`GameDataModule`), ``reproduce``, and the package commands ``solve``
(one game, any method), ``sweep-mu`` (the strength sweep), ``threshold`` (the
invariance threshold and the least-norm equilibrium) and ``benchmark`` (random
games: LP-free parameter-free AsymP-GDA vs OGDA and EG over a step-size study). ``solve
--out DIR`` writes ``result.json``, ``strategies.json``, ``trace.json`` and ``convergence.png``
(:mod:`asymp_gda.solution`).

Games are named (``brps``, ``bmp``, ``m_ne``, ``random<m>``, ``random<m>x<n>``,
or an OpenSpiel game such as ``kuhn_poker`` for ``solve``) or read from a file
with ``--payoff`` (``.npy``, or comma/space separated text): the **row player's
payoff**, the row player maximising, as in the paper's tables. ``--payoff_col``
optionally gives the column player's payoff; it must be the negative of the row
payoff (zero-sum games only).

Nothing heavy is imported until a command runs (string targets in ``build_cli()``), and only
``fit/validate/test/predict`` import lightning: ``solve`` and the other package commands run
the solvers on torch alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from icml26_shared.cli import PaperCLI, UsageError

from .paper import PAPER

MATRIX_METHODS = ("asymp", "param_free", "symp", "symp_halving", "gda", "ogda", "eg", "mwu", "omwu")
EFG_METHODS = ("asymp", "param_free", "dgda", "dogda", "domwu", "dmwu", "cfr_plus", "dcfr", "lcfr")


def _read_matrix(path: Path, what: str):
    import numpy as np

    path = Path(path)
    if not path.is_file():
        raise UsageError(f"{what} file {str(path)!r} does not exist")
    try:
        if path.suffix == ".npy":
            arr = np.load(path, allow_pickle=False)
        else:
            text = path.read_text(encoding="utf-8").replace(",", " ")
            arr = np.array(
                [[float(v) for v in line.split()] for line in text.splitlines() if line.strip()],
            )
    except ValueError as err:
        raise UsageError(f"cannot read {what} file {str(path)!r}: {err}") from err
    return arr


def _matrix_game(game: str, payoff: Path | None, payoff_col: Path | None, seed: int):
    from .matrix_game import MatrixGame, game_by_name

    if payoff is None:
        if payoff_col is not None:
            raise UsageError("--payoff_col needs --payoff (the row player's payoff)")
        return game_by_name(game, seed=seed)
    P = _read_matrix(payoff, "payoff")
    if payoff_col is None:
        return MatrixGame.from_maximizer_payoff(P, name=Path(payoff).stem)
    return MatrixGame.from_bimatrix(P, _read_matrix(payoff_col, "payoff_col"), Path(payoff).stem)


def _efg(game: str):
    from .sequence_form import SequenceFormGame

    try:
        import pyspiel
    except ImportError as err:
        raise UsageError(
            f"unknown matrix game {game!r} (brps, bmp, m_ne, random<m>); OpenSpiel games need "
            "pip install 'asymp-gda[bench]'"
        ) from err
    if game.split("(")[0] not in pyspiel.registered_names():
        raise UsageError(
            f"unknown game {game!r}: neither a matrix game (brps, bmp, m_ne, random<m>, "
            "random<m>x<n>) nor an OpenSpiel game (kuhn_poker, leduc_poker, ...)"
        )
    return SequenceFormGame.from_openspiel(game)


def _is_matrix_name(game: str) -> bool:
    from .matrix_game import GAMES

    key = game.lower().replace("-", "_")
    return key in GAMES or key.startswith("random")


def solve(
    game: str = "brps",
    payoff: Path | None = None,
    payoff_col: Path | None = None,
    method: str = "asymp",
    mu: float = 1.0,
    eta: float = 0.01,
    iterations: int = 10_000,
    side: Literal["x", "y", "both"] = "both",
    n_trials: int = 1,
    init: Literal["uniform", "random"] = "uniform",
    seed: int = 0,
    x0: list[float] | None = None,
    y0: list[float] | None = None,
    eps: float = 1e-6,
    out: Path | None = None,
) -> None:
    """Solve one game: a payoff file or a named game, OpenSpiel games included.

    Args:
        game: brps, bmp, m_ne, random<m>, random<m>x<n>, or an OpenSpiel game string
            (kuhn_poker, leduc_poker, "liars_dice(dice_sides=3)", ...).
        payoff: File with the row player's payoff matrix (overrides --game).
        payoff_col: File with the column player's payoff (must be -payoff: zero-sum only).
        method: Matrix games: asymp, param_free (Alg. 1, no LP; --eta is then a multiple of
            1/||A||_2), symp, symp_halving, gda, ogda, eg, mwu, omwu. OpenSpiel games: asymp
            (AsymP-DGDA), param_free (Alg. 1 in sequence form, no LP; --mu is mu_init), dgda, dogda, domwu, dmwu, cfr_plus, dcfr, lcfr.
        mu: Perturbation strength (> 0; initial strength for param_free).
        eta: Step size (> 0; a warning is printed above the stability bound).
        iterations: Iterations T (param_free: the budget).
        side: Perturb x, y, or run both mirrored processes (asymp).
        n_trials: Batch of initialisations (matrix games; files report the first).
        init: uniform or random (Dirichlet(1)) starts (matrix games).
        seed: Seed of random starts and random games.
        x0: Initial x strategy (must lie on the simplex).
        y0: Initial y strategy (must lie on the simplex).
        eps: NashConv target: converged = (reported NashConv <= eps).
        out: Folder for result.json, strategies.json, trace.json and convergence.png.
    """
    import torch

    from .trajectory import show_progress

    torch.set_num_threads(1)
    with show_progress(True):
        if payoff is None and not _is_matrix_name(game):
            record, strategies, updates, curve = _solve_efg(
                game, method, mu, eta, iterations, side, eps
            )
        else:
            record, strategies, updates, curve = _solve_matrix(
                game, payoff, payoff_col, method, mu, eta, iterations, side, n_trials, init, seed,
                x0, y0, eps,
            )  # fmt: skip
    from .solution import solution_record, write_solution

    record = solution_record(curve[-1], eps, **record)
    print(
        f"{record['game']}: {record['method']}, {record['updates']} strategy updates, "
        f"NashConv {record['nash_conv']:.3e} (eps {eps:g}: converged={record['converged']})"
    )
    if "x" in strategies and len(strategies["x"]) <= 12:
        print(f"  x = {[round(v, 6) for v in strategies['x']]}")
        print(f"  y = {[round(v, 6) for v in strategies['y']]}")
    if out is not None:
        write_solution(out, record, strategies, updates, curve)
        print(f"wrote {Path(out) / 'result.json'}, strategies.json, trace.json, convergence.png")


def _solve_matrix(game, payoff, payoff_col, method, mu, eta, iterations, side, n_trials, init,
                  seed, x0, y0, eps):  # fmt: skip
    g = _matrix_game(game, payoff, payoff_col, seed)
    if method not in MATRIX_METHODS:
        raise UsageError(
            f"unknown method {method!r} for a matrix game; choose from {MATRIX_METHODS}"
        )
    base = {"game": g.name, "shape": list(g.shape), "method": method, "iterations": iterations}
    if method == "param_free":
        from .parameter_free import GRADIENTS_PER_ITERATION, parameter_free

        if x0 is not None or y0 is not None:
            raise UsageError("param_free always starts from the uniform strategy; drop --x0/--y0")
        r, log = parameter_free(g, eps=eps, mu_init=mu, eta_scale=eta, max_iterations=iterations,
                                progress=True, trace=True)  # fmt: skip
        # the trace holds the certified NashConv of the best pair; its last entry is r.nash_conv
        curve = [row[0] for row in log["nash_conv"]]
        record = {**base, "method": "param_free (Alg. 1, LP-free)", "mu_init": mu,
                  "eta_scale": eta, "updates": GRADIENTS_PER_ITERATION * int(r.iterations[0]),
                  "gradient_evaluations": int(r.gradient_evaluations[0]),
                  "final_mu_x": float(r.mu_x[0]), "final_mu_y": float(r.mu_y[0])}  # fmt: skip
        updates = [GRADIENTS_PER_ITERATION * it for it in log["iterations"]]
        strategies = {"x": r.x[0].tolist(), "y": r.y[0].tolist()}
        return record, strategies, updates, curve
    from . import baselines
    from .asymp_gda import asymp_gda

    start = {"n_trials": n_trials, "init": init, "seed": seed, "x0": x0, "y0": y0}
    runs = {
        "asymp": lambda: asymp_gda(g, mu=mu, eta=eta, iterations=iterations, side=side, **start),
        "symp": lambda: baselines.symp_gda(g, mu=mu, eta=eta, iterations=iterations, **start),
        "symp_halving": lambda: baselines.symp_gda(
            g, mu=mu, eta=eta, iterations=iterations, schedule="halving",
            halve_every=max(1, iterations // 10), **start,
        ),
        "gda": lambda: baselines.gda(g, eta=eta, iterations=iterations, **start),
        "ogda": lambda: baselines.ogda(g, eta=eta, iterations=iterations, **start),
        "eg": lambda: baselines.extragradient(g, eta=eta, iterations=iterations, **start),
        "mwu": lambda: baselines.mwu(g, eta=eta, iterations=iterations, **start),
        "omwu": lambda: baselines.omwu(g, eta=eta, iterations=iterations, **start),
    }  # fmt: skip
    tr = runs[method]()
    record = {**base, "method": tr.method, "eta": eta, "updates": iterations * tr.updates_per_step}
    if method.startswith(("asymp", "symp")):
        record["mu"] = mu
    if method == "asymp":
        record["side"] = side
    # NashConv of the reported pair, whatever the side
    curve = tr.curve("nash_conv")[:, 0].tolist()
    updates = [t * tr.updates_per_step for t in tr.steps]
    strategies = {"x": tr.x[0].tolist(), "y": tr.y[0].tolist()}
    return record, strategies, updates, curve


def _solve_efg(
    game: str, method: str, mu: float, eta: float, iterations: int, side: str, eps: float
):
    from .cfr_anchors import cfr_anchor
    from .dilated_baselines import dilated_mirror_descent
    from .dilated_gda import asymp_dgda, parameter_free_dgda

    g = _efg(game)
    if method not in EFG_METHODS:
        raise UsageError(
            f"unknown method {method!r} for an OpenSpiel game; choose from {EFG_METHODS}"
        )
    if method in ("cfr_plus", "dcfr", "lcfr"):
        variant = {"cfr_plus": "CFR+", "dcfr": "DCFR", "lcfr": "LCFR"}[method]
        tr = cfr_anchor(g, variant, iterations=iterations, progress=True)
        pol = tr.info["policy"]
    else:
        if method == "asymp":
            tr = asymp_dgda(g, mu=mu, eta=eta, iterations=iterations, side=side)
        elif method == "param_free":
            tr = parameter_free_dgda(g, eps=eps, mu_init=mu, eta=eta, iterations=iterations)
        else:
            tr = dilated_mirror_descent(g, method.upper(), eta=eta, iterations=iterations)
        pol = g.to_policy(tr.x, tr.y)
    strategies = {"policy": {k: pol.policy_for_key(k).tolist() for k in pol.state_lookup}}
    record = {"game": game, "method": tr.method, "iterations": iterations, "eta": eta,
              "updates": iterations * tr.updates_per_step}  # fmt: skip
    if method == "asymp":
        record.update(mu=mu, side=side)
    if method == "param_free":  # stops at NashConv <= eps: the iterations actually run
        record.update(mu_init=mu, iterations=tr.info["iterations"], final_mu_x=tr.info["mu_x"],
                      final_mu_y=tr.info["mu_y"], updates=4 * tr.info["iterations"])  # fmt: skip
    curve = tr.curve("nash_conv")[:, 0].tolist()
    return record, strategies, [t * tr.updates_per_step for t in tr.steps], curve


def sweep_mu(
    game: str = "brps",
    payoff: Path | None = None,
    mus: list[float] = [0.5, 1.0, 2.0, 3.0, 4.0],  # noqa: B006 - jsonargparse needs a literal
    eta: float = 0.01,
    iterations: int = 100_000,
) -> None:
    """Strength sweep: AsymP-GDA's last iterate and the exact QP solution for each mu.

    Args:
        game: brps, bmp, m_ne, random<m> or random<m>x<n>.
        payoff: File with the row player's payoff matrix (overrides --game).
        mus: Strengths mu to run (each > 0).
        eta: Step size.
        iterations: Iterations per strength.
    """
    import torch

    from .perturbed_solution import invariance_threshold
    from .strength_sweep import strength_sweep

    torch.set_num_threads(1)
    g = _matrix_game(game, payoff, None, 0)
    print(f"{g.name}: invariance threshold (bisection on the QP) = {invariance_threshold(g):.4g}")
    print(f"{'mu':>8} {'expl(x_T)':>11} {'expl(x^mu)':>11} {'|x_T-x^mu|_1':>13}")
    for r in strength_sweep(g, mus, eta=eta, iterations=iterations):
        print(f"{r.mu:8.4g} {r.expl_dynamics:11.3e} {r.expl_qp:11.3e} {r.distance:13.3e}")


def threshold(game: str = "brps", payoff: Path | None = None, tol: float = 1e-9) -> None:
    """Invariance threshold of mu (bisection on the exact QP) and the least-norm equilibrium.

    Args:
        game: brps, bmp, m_ne, random<m> or random<m>x<n>.
        payoff: File with the row player's payoff matrix (overrides --game).
        tol: Exploitability below which x^mu counts as an equilibrium.
    """
    from .perturbed_solution import invariance_threshold, least_norm_equilibrium

    g = _matrix_game(game, payoff, None, 0)
    print(f"{g.name} {g.shape}: value (x player's loss) {g.value:.6g}")
    print(f"  invariance threshold mu* = {invariance_threshold(g, tol=tol):.4g}")
    print(
        f"  least-norm equilibrium x = {[round(v, 6) for v in least_norm_equilibrium(g).tolist()]}"
    )


def benchmark(
    sizes: list[int] = [5, 10],  # noqa: B006 - jsonargparse needs a literal
    seeds: int = 3,
    eps: float = 1e-6,
    eta_scales: list[float] = [0.1, 0.25, 0.5, 1.0],  # noqa: B006
    max_gradients: int = 200_000,
    seed: int = 0,
) -> None:
    """Gradient evaluations to NashConv eps on random m x m games: Alg. 1 (LP-free), OGDA, EG.

    Args:
        sizes: Game sizes m.
        seeds: Games per size.
        eps: Target NashConv.
        eta_scales: Step sizes of every method, times 1/||A||_2.
        max_gradients: Budget per run (matrix-vector products).
        seed: First seed.
    """
    import torch

    from .hitting_time import random_games_table

    torch.set_num_threads(1)
    if seeds < 1 or any(m < 1 for m in sizes):
        raise UsageError("seeds and every size must be >= 1")
    if not eta_scales or any(not s > 0 for s in eta_scales):
        raise UsageError("eta_scales must be a non-empty list of positive numbers")
    best, study, _ = random_games_table(sizes, seeds, max_gradients, eps, eta_scales, seed,
                                        progress=True)  # fmt: skip
    print(study.to_markdown())
    print(best.to_markdown())


def build_cli() -> PaperCLI:
    """The package's CLI (nothing heavy is imported until a command runs)."""
    return PaperCLI(
        PAPER,
        model_class="asymp_gda.lightning:SaddlePointModule",
        datamodule_class="asymp_gda.lightning:GameDataModule",
        commands={
            "solve": "asymp_gda.cli:solve",
            "sweep-mu": "asymp_gda.cli:sweep_mu",
            "threshold": "asymp_gda.cli:threshold",
            "benchmark": "asymp_gda.cli:benchmark",
        },
    )


def main(args: Sequence[str] | None = None) -> int:
    """Entry point of the ``asymp-gda`` console script."""
    return build_cli().main(args)
