"""The optimiser x SIGReg study on several MinAtar games, with a fresh-init plasticity reference.

Paper: "Stable Deep Reinforcement Learning via Isotropic Gaussian Representations", Saheb et
al., ICML 2026 (arXiv 2602.19373). The paper compares SIGReg with second-order /
preconditioned optimisers (which also counter the ill-conditioning that non-stationarity
causes) and combines the two; here PQN runs on ``>= 3`` MinAtar games with each optimiser,
with and without SIGReg, over several seeds, in a protocol where the agent without a
regulariser measurably loses plasticity:

* the optimisers: Adam, RAdam (PQN's) and PSGD-Kron (``kron-torch``)
  -> :func:`sigreg.lightning.make_optimizer`
* the plasticity protocol: every regularised / unregularised agent is *warm-started* from
  its own network pre-trained on large-offset random targets (observations of the same
  game, the agent's optimiser, and SIGReg in the pre-training loss when the run has it),
  then trained with PQN for ``iterations`` rollouts; the reference is a *freshly
  initialised* agent trained with PQN for the same ``iterations`` rollouts (Ash & Adams
  2020; Lyle et al. 2023, 2024) -> :mod:`sigreg.warm_start`. Below the fresh agent =
  plasticity lost.
* per game the interval verdict of SIGReg against the same optimiser without it, and of
  each warm-started row against the fresh agent, both on the return AUC (mean episode
  return over the run): "above", "below" or "overlap (null)" of the two 95 % intervals
  -> :func:`interval_verdict`
* the table over games, optimisers and methods -> :func:`optimiser_table`; the aggregate over
  every game and seed (rliable IQM, stratified bootstrap, probability of improvement)
  -> :func:`optimiser_aggregate_table`; all of it (``reproduce``'s ``games`` section)
  -> :func:`games_benchmark`

(Until issue #44's second round the reference was compared with agents whose observation
was re-permuted every few thousand steps; at CPU scale a fresh agent learns too little in
one such phase for that protocol to show plasticity loss in any game: see the CHANGELOG.)
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


def second_half_return(episodes: list[tuple[int, float]], total_steps: int) -> float:
    """Mean return of the episodes that end in the second half of the run (NaN if none).

    >>> second_half_return([(10, 1.0), (60, 3.0), (90, 5.0)], 100)
    4.0
    """
    rets = [r for s, r in episodes if s > total_steps / 2]
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


def optimiser_study(
    games: list[str],
    optimisers: dict[str, float],
    lambdas: list[float],
    *,
    iterations: int,
    pretrain: dict,
    seeds: int,
    pqn: dict,
    seed: int = 0,
) -> dict[tuple[str, str, str], list[dict]]:
    """Run PQN for every game x optimiser x lambda x seed, and the fresh-init reference.

    ``optimisers`` maps an optimiser name (:data:`sigreg.lightning.OPTIMIZERS`) to its
    learning rate; ``pqn`` holds the other :class:`~sigreg.lightning.PQNModule` arguments
    (with ``num_envs`` and ``num_steps``); ``pretrain`` the keyword arguments of
    :func:`sigreg.warm_start.pretrain_on_random_targets`. Every lambda's run is warm-started
    from that pre-training (with the run's lambda in its loss); the ``"fresh init"`` run is
    a new agent. All runs last ``iterations`` rollouts on the stationary game. Returns
    ``{(game, optimiser, method): [runs]}`` with ``method`` in ``"none"``,
    ``"SIGReg l=<lambda>"``, ``"fresh init"``; each run also holds ``second_half``.

    PSGD-Kron runs eagerly (``torch.compile`` is disabled for the study: on a CPU its
    compile time would dominate these short runs; the arithmetic is the same).
    """
    import torch._dynamo

    jobs = []
    for game in games:
        for opt in optimisers:
            for lam in lambdas:
                method = "none" if lam == 0 else f"SIGReg l={lam:g}"
                jobs += [(game, opt, method, lam, k) for k in range(seeds)]
            jobs += [(game, opt, "fresh init", 0.0, k) for k in range(seeds)]
    out: dict[tuple[str, str, str], list[dict]] = {}
    with torch._dynamo.config.patch(disable=True):
        for game, opt, method, lam, k in progress(jobs, desc="games", total=len(jobs)):
            res = run_agent(
                "pqn",
                env_id=game,
                sigreg_lambda=lam,
                iterations=iterations,
                ns_period=None,
                seed=seed + k,
                optimizer=opt,
                pretrain=None if method == "fresh init" else dict(pretrain),
                **{**pqn, "lr": optimisers[opt]},
            )
            res["second_half"] = second_half_return(res["episodes"], res["total_steps"])
            out.setdefault((game, opt, method), []).append(res)
    return out


def _ci(values) -> tuple[float, float, float, str]:
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    if v.size == 0:
        return float("nan"), float("nan"), float("nan"), "none"
    return interval_estimate(v)


def optimiser_table(
    runs: dict[tuple[str, str, str], list[dict]],
    *,
    iterations: int,
    pretrain: dict,
    pqn: dict,
    optimisers: dict[str, float],
) -> Table:
    """One row per (game, optimiser, method) with intervals and the per-game verdicts."""
    steps = iterations * pqn["num_envs"] * pqn["num_steps"]
    import inspect

    from sigreg.warm_start import pretrain_on_random_targets

    sig = inspect.signature(pretrain_on_random_targets).parameters
    p = {k: v.default for k, v in sig.items() if v.default is not inspect.Parameter.empty}
    p.update(pretrain)
    table = Table(
        "MinAtar games: optimiser x SIGReg, warm-started agents against a fresh-init agent",
        ["game", "optimiser", "method", "return AUC IQM", "AUC CI low", "AUC CI high",
         "2nd-half return IQM", "SIGReg vs none (AUC)", "vs fresh init (AUC)",
         "srank after pre-training", "dormant % after pre-training", "srank", "dormant % tau=0",
         "wall", "seeds"],
        units={"wall": "s"},
        notes=(
            f"PQN ({pqn['num_envs']} envs x {pqn['num_steps']} steps, 2 epochs x 4 "
            "minibatches, LayerNorm, Q(lambda)=0.65, MLP trunk 2 x 128 on the flattened "
            f"frame), every run {iterations} rollouts ({steps} env steps) on the stationary "
            "game. Learning rates: "
            + ", ".join(f"{OPTIMISER_NAMES[k]} {v:g}" for k, v in optimisers.items())
            + " (PSGD-Kron: kron-torch defaults, run eagerly). 'none' and 'SIGReg' agents are "
            "warm-started: their Q-network is first fitted to random targets "
            f"({p['target_offset']:g} + {p['target_scale']:g} N(0, 1) per observation and "
            f"action; {p['observations']} random-policy observations of the game"
            + (" with their coordinates shuffled (another task)" if p["permute_inputs"] else "")
            + f"; {p['updates']} minibatch updates of {p['batch_size']} with the run's "
            "optimiser, loss in units of the targets' second moment, and for SIGReg the SIGReg "
            "term"
            + ("; then the head is re-initialised" if p["reset_head"] else "")
            + "), then trained with PQN. 'fresh init' = a new agent trained with PQN "
            "for the same rollouts (below it = plasticity lost). Return AUC = mean episode "
            "return over the run; IQM and 95 % bootstrap CI over seeds (rliable). 'SIGReg vs "
            "none': the SIGReg row's AUC interval against the same optimiser's none row; 'vs "
            "fresh init': the row's AUC interval against the same optimiser's fresh-init row. "
            "'overlap (null)' = the intervals overlap: no difference resolved. srank/dormant "
            "after pre-training on 256 random-policy observations; srank/dormant (tau=0) at the "
            "end on the last rollout's observations; all on the trunk output."
        ),
    )  # fmt: skip
    stats = {key: _ci([r["auc"] for r in rs]) for key, rs in runs.items()}
    for (game, opt, method), rs in runs.items():
        a, alo, ahi, how = stats[(game, opt, method)]
        vs_none = vs_fresh = ""
        if method.startswith("SIGReg") and (game, opt, "none") in stats:
            _, blo, bhi, _ = stats[(game, opt, "none")]
            vs_none = interval_verdict(alo, ahi, blo, bhi)
        if method != "fresh init" and (game, opt, "fresh init") in stats:
            _, flo, fhi, _ = stats[(game, opt, "fresh init")]
            vs_fresh = interval_verdict(alo, ahi, flo, fhi)
        diag = [r["diagnostics"] for r in rs if r["diagnostics"]]
        pre = [r["pretrain"]["diagnostics"] for r in rs if r.get("pretrain")]
        table.add_row(
            game=game.split("/")[-1].removesuffix("-v1"),
            optimiser=OPTIMISER_NAMES[opt],
            method=method,
            **{
                "return AUC IQM": a,
                "AUC CI low": alo,
                "AUC CI high": ahi,
                "2nd-half return IQM": _ci([r["second_half"] for r in rs])[0],
                "SIGReg vs none (AUC)": vs_none,
                "vs fresh init (AUC)": vs_fresh,
                "srank after pre-training": float(np.mean([d["srank"] for d in pre]))
                if pre
                else None,
                "dormant % after pre-training": 100
                * float(np.mean([d["dormant_tau0"] for d in pre]))
                if pre
                else None,
                "srank": float(np.mean([d["srank"] for d in diag])),
                "dormant % tau=0": 100 * float(np.mean([d["dormant_tau0"] for d in diag])),
                "wall": float(np.mean([r["wall_s"] for r in rs])),
                "seeds": f"{len(rs)} ({how})",
            },
        )
    return table


def optimiser_aggregate_table(
    runs: dict[tuple[str, str, str], list[dict]], reference: str = "adam"
) -> Table:
    """IQM over every game and seed of the AUC normalised by ``reference``'s fresh agent.

    Score = run AUC / mean AUC of ``reference``'s fresh-init runs on that game (1 = a fresh
    agent; below 1 = plasticity lost). Stratified bootstrap CI (seeds resampled within each
    game) and the probability that a run beats a run of the same optimiser's warm-started
    baseline without SIGReg (rliable's definitions).
    """
    games = sorted({g for g, _, _ in runs})
    methods = [(o, m) for g, o, m in runs if g == games[0]]
    n = min(len(runs[(g, o, m)]) for g in games for o, m in methods)
    base = {g: np.mean([r["auc"] for r in runs[(g, reference, "fresh init")]]) for g in games}
    mats = {
        (o, m): np.array(
            [[r["auc"] / max(base[g], 1e-9) for r in runs[(g, o, m)][:n]] for g in games]
        ).T
        for o, m in methods
    }
    est = aggregate_interval({f"{o}|{m}": v for (o, m), v in mats.items()})
    table = Table(
        "Aggregate over games: IQM of the fresh-normalised return AUC (every game and seed)",
        ["optimiser", "method", "IQM", "CI low", "CI high", "P(improvement over same optimiser, none)",
         "runs x games", "how"],
        notes=(
            f"Games: {', '.join(g.split('/')[-1] for g in games)}; score = run AUC / mean AUC "
            f"of {OPTIMISER_NAMES[reference]}'s fresh-init agents on that game (1 = a fresh "
            "agent, below 1 = plasticity lost; 'none' and 'SIGReg' are warm-started). IQM over "
            "all runs "
            "and games with a 95 % stratified bootstrap CI (2000 reps; rliable's "
            "get_interval_estimates + aggregate_iqm); P(improvement) = P(X > Y) over run "
            "pairs, averaged over games."
        ),
    )  # fmt: skip
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
    return table


def optimiser_figure(runs: dict[tuple[str, str, str], list[dict]]):
    """Mean return curve per (optimiser, method), one panel per game."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from sigreg.rl_benchmark import return_curve

    games = sorted({g for g, _, _ in runs})
    fig, axes = plt.subplots(1, len(games), figsize=(5 * len(games), 3.8), squeeze=False)
    for ax, game in zip(axes[0], games, strict=True):
        for (g, o, m), rs in runs.items():
            if g != game:
                continue
            curve = np.mean([return_curve(r["episodes"], r["total_steps"]) for r in rs], axis=0)
            ax.plot(curve, label=f"{OPTIMISER_NAMES[o]} {m}")
        ax.set_xlabel("training progress (20 bins)")
        ax.set_ylabel("episode return")
        ax.set_title(f"{game.split('/')[-1]}: warm-started vs fresh")
        ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def games_benchmark(
    games: list[str],
    optimisers: dict[str, float],
    lambdas: list[float],
    iterations: int,
    pretrain: dict,
    seeds: int,
    pqn: dict,
    seed: int = 0,
) -> tuple[list[Table], dict, list[str]]:
    """The study, its two tables and its figure; skipped (with a note) without MinAtar/Kron.

    Returns ``(tables, {"games.png": figure}, notes)``; the aggregate is normalised by Adam's
    fresh agent when Adam is among ``optimisers`` (else by the first optimiser's).
    """
    try:
        import kron_torch  # noqa: F401
        import minatar  # noqa: F401
    except ImportError as err:
        return [], {}, [f"{err.name} is not installed: the games were skipped (sigreg[bench])."]
    runs = optimiser_study(
        games, optimisers, lambdas, iterations=iterations, pretrain=pretrain, seeds=seeds,
        pqn=pqn, seed=seed,
    )  # fmt: skip
    table = optimiser_table(
        runs, iterations=iterations, pretrain=pretrain, pqn=pqn, optimisers=optimisers,
    )  # fmt: skip
    reference = "adam" if "adam" in optimisers else next(iter(optimisers))
    aggregate = optimiser_aggregate_table(runs, reference)
    return [table, aggregate], {"games.png": optimiser_figure(runs)}, []
