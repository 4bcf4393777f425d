"""The optimiser x SIGReg study on several MinAtar games, with a fresh-init plasticity reference.

Paper: "Stable Deep Reinforcement Learning via Isotropic Gaussian Representations", Saheb et
al., ICML 2026 (arXiv 2602.19373). The paper compares SIGReg with second-order /
preconditioned optimisers (which also counter the ill-conditioning that non-stationarity
causes) and combines the two; here PQN runs on ``>= 3`` non-stationary MinAtar games with
each optimiser, with and without SIGReg, over several seeds:

* the optimisers: Adam, RAdam (PQN's) and PSGD-Kron (``kron-torch``)
  -> :func:`sigreg.lightning.make_optimizer`
* the plasticity reference: a *freshly initialised* agent trained for one phase only. For an
  MLP whose first layer is initialised i.i.d. and sign-symmetrically (PyTorch's default),
  a permuted and sign-flipped observation is the same learning problem in distribution as
  the raw one, so the fresh agent is trained on the stationary game; its mean return over
  that phase is compared with the continually trained agent's mean return over its *last*
  phase (the same number of steps): below it = plasticity lost -> :func:`last_phase_return`
* per game the interval verdict of SIGReg against the same optimiser without it (return
  AUC) and of the baseline against the fresh agent (last-phase return): "above", "below" or
  "overlap (null)" of the two 95 % intervals -> :func:`interval_verdict`
* the table over games, optimisers and methods -> :func:`optimiser_table`; the aggregate over
  every game and seed (rliable IQM, stratified bootstrap, probability of improvement)
  -> :func:`optimiser_aggregate_table`; all of it (``reproduce``'s ``games`` section)
  -> :func:`games_benchmark`
"""

from __future__ import annotations

import numpy as np
from icml26_shared.progress import progress
from icml26_shared.results import Table

from sigreg.rl_benchmark import (
    aggregate_interval,
    interval_estimate,
    probability_of_improvement,
    run_agent,
)

OPTIMISER_NAMES = {"adam": "Adam", "radam": "RAdam", "kron": "PSGD-Kron"}


def last_phase_return(
    episodes: list[tuple[int, float]], total_steps: int, phase_steps: int
) -> float:
    """Mean return of the episodes that end in the last ``phase_steps`` environment steps.

    NaN when no episode ends there.

    >>> last_phase_return([(10, 1.0), (60, 3.0), (90, 5.0)], 100, 50)
    4.0
    """
    rets = [r for s, r in episodes if s > total_steps - phase_steps]
    return float(np.mean(rets)) if rets else float("nan")


def interval_verdict(lo: float, hi: float, ref_lo: float, ref_hi: float) -> str:
    """``above`` / ``below`` when the interval ``[lo, hi]`` clears ``[ref_lo, ref_hi]``.

    Otherwise ``overlap (null)``: the difference is not resolved at this many seeds.

    >>> interval_verdict(2, 3, 0, 1), interval_verdict(0, 1, 2, 3), interval_verdict(0, 2, 1, 3)
    ('above', 'below', 'overlap (null)')
    """
    if lo > ref_hi:
        return "above"
    if hi < ref_lo:
        return "below"
    return "overlap (null)"


def _run(game, optimiser, lr, lam, iterations, ns_period, seed, pqn) -> dict:
    kw = dict(pqn)
    kw["lr"] = lr
    res = run_agent(
        "pqn",
        env_id=game,
        sigreg_lambda=lam,
        iterations=iterations,
        ns_period=ns_period,
        seed=seed,
        optimizer=optimiser,
        **kw,
    )
    return res


def optimiser_study(
    games: list[str],
    optimisers: dict[str, float],
    lambdas: list[float],
    *,
    iterations: int,
    phase_iterations: int,
    seeds: int,
    pqn: dict,
    seed: int = 0,
) -> dict[tuple[str, str, str], list[dict]]:
    """Run PQN for every game x optimiser x lambda x seed, and the fresh-init reference.

    ``optimisers`` maps an optimiser name (:data:`sigreg.lightning.OPTIMIZERS`) to its
    learning rate; ``pqn`` holds the other :class:`~sigreg.lightning.PQNModule` arguments
    (with ``num_envs`` and ``num_steps``). Continual runs last ``iterations`` rollouts with
    the observation re-permuted and sign-flipped every ``phase_iterations``; fresh runs last
    ``phase_iterations`` rollouts (stationary: see the module docstring). Returns
    ``{(game, optimiser, method): [runs]}`` with ``method`` in ``"none"``,
    ``"SIGReg l=<lambda>"``, ``"fresh init"``; each run also holds ``last_phase``.

    PSGD-Kron runs eagerly (``torch.compile`` is disabled for the study: on a CPU its
    compile time would dominate these short runs; the arithmetic is the same).
    """
    import torch._dynamo

    steps = pqn["num_envs"] * pqn["num_steps"]
    jobs = []
    for game in games:
        for opt in optimisers:
            for lam in lambdas:
                method = "none" if lam == 0 else f"SIGReg l={lam:g}"
                jobs += [(game, opt, method, lam, iterations, k) for k in range(seeds)]
            jobs += [(game, opt, "fresh init", 0.0, phase_iterations, k) for k in range(seeds)]
    out: dict[tuple[str, str, str], list[dict]] = {}
    with torch._dynamo.config.patch(disable=True):
        for game, opt, method, lam, iters, k in progress(jobs, desc="games", total=len(jobs)):
            fresh = method == "fresh init"
            res = _run(
                game,
                opt,
                optimisers[opt],
                lam,
                iters,
                None if fresh else phase_iterations * pqn["num_steps"],
                seed + k,
                pqn,
            )
            res["last_phase"] = last_phase_return(
                res["episodes"], res["total_steps"], phase_iterations * steps
            )
            out.setdefault((game, opt, method), []).append(res)
    return out


def finite_interval(values) -> tuple[float, float, float, str]:
    """``interval_estimate`` of the finite ``values`` (NaNs and ``'none'`` when there are none)."""
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    if v.size == 0:
        return float("nan"), float("nan"), float("nan"), "none"
    return interval_estimate(v)


def optimiser_table(
    runs: dict[tuple[str, str, str], list[dict]],
    *,
    iterations: int,
    phase_iterations: int,
    pqn: dict,
    optimisers: dict[str, float],
) -> Table:
    """One row per (game, optimiser, method) with intervals and the per-game verdicts."""
    table = Table(
        "MinAtar games: optimiser x SIGReg, with a fresh-init plasticity reference",
        ["game", "optimiser", "method", "return AUC IQM", "AUC CI low", "AUC CI high",
         "last-phase return IQM", "LP CI low", "LP CI high", "dormant % tau=0", "srank",
         "SIGReg vs none (AUC)", "vs fresh init (last phase)", "wall", "seeds"],
        units={"wall": "s"},
        notes=(
            f"PQN ({pqn['num_envs']} envs x {pqn['num_steps']} steps, 2 epochs x 4 "
            "minibatches, LayerNorm, Q(lambda)=0.65, MLP trunk 2 x 128 on the flattened "
            f"frame); continual runs: {iterations} rollouts "
            f"({iterations * pqn['num_envs'] * pqn['num_steps']} env steps), observation "
            f"re-permuted and sign-flipped every {phase_iterations} rollouts "
            f"({iterations // phase_iterations} phases). Learning rates: "
            + ", ".join(f"{OPTIMISER_NAMES[k]} {v:g}" for k, v in optimisers.items())
            + " (PSGD-Kron: kron-torch defaults, run eagerly). 'fresh init' = a new agent "
            f"trained for one phase ({phase_iterations} rollouts, its own epsilon schedule); "
            "its 'last-phase return' is its mean return over that phase, the continual runs' "
            "is their mean return over their last phase. IQM and 95 % bootstrap CI over seeds "
            "(rliable). 'SIGReg vs none': the SIGReg row's AUC interval against the same "
            "optimiser's none row; 'vs fresh init': the row's last-phase interval against the "
            "same optimiser's fresh-init row (below = plasticity lost). 'overlap (null)' = the "
            "intervals overlap: no difference resolved. Dormant/srank on the trunk output of "
            "the last rollout's observations."
        ),
    )  # fmt: skip
    stats = {key: (finite_interval([r["auc"] for r in rs]), finite_interval([r["last_phase"] for r in rs]))
             for key, rs in runs.items()}  # fmt: skip
    for (game, opt, method), rs in runs.items():
        (a, alo, ahi, how), (lp, llo, lhi, _) = stats[(game, opt, method)]
        vs_none = vs_fresh = ""
        if method.startswith("SIGReg") and (game, opt, "none") in stats:
            _, blo, bhi, _ = stats[(game, opt, "none")][0]
            vs_none = interval_verdict(alo, ahi, blo, bhi)
        if method != "fresh init" and (game, opt, "fresh init") in stats:
            _, flo, fhi, _ = stats[(game, opt, "fresh init")][1]
            vs_fresh = interval_verdict(llo, lhi, flo, fhi)
        diag = [r["diagnostics"] for r in rs if r["diagnostics"]]
        table.add_row(
            game=game.split("/")[-1].removesuffix("-v1"),
            optimiser=OPTIMISER_NAMES[opt],
            method=method,
            **{
                "return AUC IQM": a,
                "AUC CI low": alo,
                "AUC CI high": ahi,
                "last-phase return IQM": lp,
                "LP CI low": llo,
                "LP CI high": lhi,
                "dormant % tau=0": 100 * float(np.mean([d["dormant_tau0"] for d in diag])),
                "srank": float(np.mean([d["srank"] for d in diag])),
                "SIGReg vs none (AUC)": vs_none,
                "vs fresh init (last phase)": vs_fresh,
                "wall": float(np.mean([r["wall_s"] for r in rs])),
                "seeds": f"{len(rs)} ({how})",
            },
        )
    return table


def optimiser_aggregate_table(
    runs: dict[tuple[str, str, str], list[dict]], reference: str = "adam"
) -> Table:
    """IQM over every game and seed of the AUC normalised by ``reference``'s none row per game.

    Stratified bootstrap CI (seeds resampled within each game) and the probability that a
    SIGReg run beats a run of the same optimiser without it (rliable's definitions).
    """
    games = sorted({g for g, _, _ in runs})
    methods = [(o, m) for g, o, m in runs if g == games[0] and m != "fresh init"]
    n = min(len(runs[(g, o, m)]) for g in games for o, m in methods)
    base = {g: np.mean([r["auc"] for r in runs[(g, reference, "none")]]) for g in games}
    mats = {
        (o, m): np.array(
            [[r["auc"] / max(base[g], 1e-9) for r in runs[(g, o, m)][:n]] for g in games]
        ).T
        for o, m in methods
    }
    est = aggregate_interval({f"{o}|{m}": v for (o, m), v in mats.items()})
    table = Table(
        "Aggregate over games: IQM of the normalised return AUC (every game and seed)",
        ["optimiser", "method", "IQM", "CI low", "CI high", "P(improvement over same optimiser, none)",
         "runs x games", "how"],
        notes=(
            f"Games: {', '.join(g.split('/')[-1] for g in games)}; score = run AUC / mean AUC "
            f"of {OPTIMISER_NAMES[reference]} without SIGReg on that game. IQM over all runs "
            "and games with a 95 % stratified bootstrap CI (2000 reps; rliable's "
            "get_interval_estimates + aggregate_iqm); P(improvement) = P(X > Y) over run "
            "pairs, averaged over games."
        ),
    )  # fmt: skip
    add_aggregate_rows(table, mats, est)
    return table


def add_aggregate_rows(table: Table, mats: dict, est: dict) -> None:
    """One row per (optimiser, method): IQM, its interval and P(improvement) over ``none``.

    ``mats[(o, m)]`` is the (runs, games) score matrix, ``est`` the output of
    :func:`aggregate_interval` keyed ``"o|m"``.
    """
    for (o, m), v in mats.items():
        point, lo, hi, how = est[f"{o}|{m}"]
        table.add_row(
            optimiser=OPTIMISER_NAMES[o],
            method=m,
            IQM=point,
            **{
                "CI low": lo,
                "CI high": hi,
                "P(improvement over same optimiser, none)": probability_of_improvement(
                    v, mats[(o, "none")]
                )
                if m != "none"
                else None,
                "runs x games": f"{v.shape[0]} x {v.shape[1]}",
                "how": how,
            },
        )


def optimiser_figure(runs: dict[tuple[str, str, str], list[dict]]):
    """Mean return curve per (optimiser, method), one panel per game (fresh runs left out)."""
    return return_curves_figure(runs, lambda game: f"non-stationary {game}", leave_out="fresh init")


def return_curves_figure(runs: dict[tuple[str, str, str], list[dict]], title, leave_out=None):
    """Mean return curve per (optimiser, method) of ``runs[(game, optimiser, method)]``, one
    panel per game titled ``title(game name)``; the method ``leave_out`` is not drawn."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from sigreg.rl_benchmark import return_curve

    games = sorted({g for g, _, _ in runs})
    fig, axes = plt.subplots(1, len(games), figsize=(5 * len(games), 3.8), squeeze=False)
    for ax, game in zip(axes[0], games, strict=True):
        for (g, o, m), rs in runs.items():
            if g != game or m == leave_out:
                continue
            curve = np.mean([return_curve(r["episodes"], r["total_steps"]) for r in rs], axis=0)
            ax.plot(curve, label=f"{OPTIMISER_NAMES[o]} {m}")
        ax.set_xlabel("training progress (20 bins)")
        ax.set_ylabel("episode return")
        ax.set_title(title(game.split("/")[-1]))
        ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def games_benchmark(
    games: list[str],
    optimisers: dict[str, float],
    lambdas: list[float],
    iterations: int,
    phase_iterations: int,
    seeds: int,
    pqn: dict,
    seed: int = 0,
) -> tuple[list[Table], dict, list[str]]:
    """The study, its two tables and its figure; skipped (with a note) without MinAtar/Kron.

    Returns ``(tables, {"games.png": figure}, notes)``; the aggregate is normalised by Adam's
    baseline when Adam is among ``optimisers`` (else by the first optimiser's).
    """
    try:
        import kron_torch  # noqa: F401
        import minatar  # noqa: F401
    except ImportError as err:
        return [], {}, [f"{err.name} is not installed: the games were skipped (sigreg[bench])."]
    runs = optimiser_study(
        games, optimisers, lambdas, iterations=iterations, phase_iterations=phase_iterations,
        seeds=seeds, pqn=pqn, seed=seed,
    )  # fmt: skip
    table = optimiser_table(
        runs, iterations=iterations, phase_iterations=phase_iterations, pqn=pqn,
        optimisers=optimisers,
    )  # fmt: skip
    reference = "adam" if "adam" in optimisers else next(iter(optimisers))
    aggregate = optimiser_aggregate_table(runs, reference)
    return [table, aggregate], {"games.png": optimiser_figure(runs)}, []
