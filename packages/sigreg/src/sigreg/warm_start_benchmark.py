"""Warm-started agents against a fresh agent: where PQN measurably loses plasticity, per game.

Paper: "Stable Deep Reinforcement Learning via Isotropic Gaussian Representations", Saheb et
al., ICML 2026 (arXiv 2602.19373). The paper's claim is that SIGReg keeps an agent plastic.
The ``games`` section (:mod:`sigreg.optimiser_study`) compares optimisers under observation
permutations, a protocol in which, at CPU scale, the baseline does not fall below a fresh
agent. This module is the ``plasticity`` section, where it does:

* every regularised / unregularised agent is *warm-started* from its own Q-network
  pre-trained on large-offset random targets (coordinate-shuffled frames of the same game,
  the agent's optimiser, SIGReg in the pre-training loss when the run has it), then trained
  with PQN for ``iterations`` rollouts; the reference is a *freshly initialised* agent
  trained with PQN for the same rollouts (Ash & Adams 2020; Lyle et al. 2023, 2024)
  -> :mod:`sigreg.warm_start`; all runs -> :func:`plasticity_study`
* per game the interval verdict of SIGReg against the same optimiser without it, and of
  each warm-started row against the fresh agent, both on the return AUC (mean episode
  return over the run): "above", "below" or "overlap (null)"
  -> :func:`sigreg.optimiser_study.interval_verdict`; the table -> :func:`plasticity_table`
* the aggregate over every game and seed, normalised by the fresh agent (rliable IQM,
  stratified bootstrap, probability of improvement) -> :func:`plasticity_aggregate_table`;
  the section -> :class:`PlasticitySetting`, :func:`plasticity_section`
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from icml26_shared.progress import progress
from icml26_shared.results import Table

from sigreg.optimiser_study import (
    OPTIMISER_NAMES,
    add_aggregate_rows,
    finite_interval,
    interval_verdict,
    return_curves_figure,
)
from sigreg.rl_benchmark import (
    aggregate_interval,
    run_agent,
)
from sigreg.warm_start import check_pretrain


def second_half_return(episodes: list[tuple[int, float]], total_steps: int) -> float:
    """Mean return of the episodes that end in the second half of the run (NaN if none).

    >>> second_half_return([(10, 1.0), (60, 3.0), (90, 5.0)], 100)
    4.0
    """
    rets = [r for s, r in episodes if s > total_steps / 2]
    return float(np.mean(rets)) if rets else float("nan")


def plasticity_study(
    games: list[str],
    optimisers: dict[str, float],
    lambdas: list[float],
    *,
    iterations: int,
    pretrain: dict,
    seeds: int,
    pqn: dict,
    seed: int = 0,
    workers: int = 1,
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

    ``workers > 1`` runs the jobs in that many processes (one torch thread each); every job
    is seeded on its own, so the result does not depend on ``workers``. PSGD-Kron runs
    eagerly (``torch.compile`` is disabled for the study: on a CPU its compile time would
    dominate these short runs; the arithmetic is the same).
    """
    jobs = []
    for game in games:
        for opt in optimisers:
            for lam in lambdas:
                method = "none" if lam == 0 else f"SIGReg l={lam:g}"
                jobs += [(game, opt, method, lam, k) for k in range(seeds)]
            jobs += [(game, opt, "fresh init", 0.0, k) for k in range(seeds)]
    out: dict[tuple[str, str, str], list[dict]] = {}
    calls = [(game, opt, optimisers[opt], method, lam, iterations, seed + k, pretrain, pqn)
             for game, opt, method, lam, k in jobs]  # fmt: skip
    if workers <= 1:
        results = (_study_job(c) for c in calls)
    else:  # each job is seeded on its own: the same numbers as one worker, in less wall time
        import multiprocessing as mp
        from concurrent.futures import ProcessPoolExecutor

        pool = ProcessPoolExecutor(workers, mp_context=mp.get_context("spawn"))
        results = pool.map(_study_job, calls)
    for (game, opt, method, _, _), res in zip(
        jobs, progress(results, desc="games", total=len(jobs)), strict=True
    ):
        out.setdefault((game, opt, method), []).append(res)
    if workers > 1:
        pool.shutdown()
    return out


def _study_job(call: tuple) -> dict:
    """One run of the study (a module-level function, so a process pool can run it)."""
    import torch
    import torch._dynamo

    game, opt, lr, method, lam, iterations, seed, pretrain, pqn = call
    torch.set_num_threads(1)
    with torch._dynamo.config.patch(disable=True):
        res = run_agent(
            "pqn",
            env_id=game,
            sigreg_lambda=lam,
            iterations=iterations,
            ns_period=None,
            seed=seed,
            optimizer=opt,
            pretrain=None if method == "fresh init" else dict(pretrain),
            **{**pqn, "lr": lr},
        )
    res["second_half"] = second_half_return(res["episodes"], res["total_steps"])
    return res


def plasticity_table(
    runs: dict[tuple[str, str, str], list[dict]],
    *,
    iterations: int,
    pretrain: dict,
    pqn: dict,
    optimisers: dict[str, float],
) -> Table:
    """One row per (game, optimiser, method) with intervals and the per-game verdicts."""
    steps = iterations * pqn["num_envs"] * pqn["num_steps"]
    from sigreg.warm_start import pretrain_defaults

    p = {**pretrain_defaults(), **pretrain}
    pre_opt = "the run's optimiser"
    if p["optimizer"]:
        pre_lr = f"lr {p['lr']:g}" if p["lr"] else "the run's lr"
        pre_opt = f"{OPTIMISER_NAMES[p['optimizer']]} ({pre_lr}) for every optimiser's runs"
    table = Table(
        "MinAtar plasticity: warm-started agents (with / without SIGReg) against a fresh agent",
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
            + f"; {p['updates']} minibatch updates of {p['batch_size']} with "
            + pre_opt
            + ", loss in units of the targets' second moment, and for SIGReg the SIGReg "
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
    stats = {key: finite_interval([r["auc"] for r in rs]) for key, rs in runs.items()}
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
                "2nd-half return IQM": finite_interval([r["second_half"] for r in rs])[0],
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


def plasticity_aggregate_table(
    runs: dict[tuple[str, str, str], list[dict]], reference: str | None = None
) -> Table:
    """IQM over every game and seed of the AUC normalised by a fresh agent, with verdicts.

    Score = run AUC / mean AUC of the fresh-init runs of the *same optimiser* on that game
    (``reference=None``; or of ``reference``'s fresh-init runs for every optimiser): 1 = a
    fresh agent, below 1 = plasticity lost. Stratified bootstrap CI (seeds resampled within
    each game), the probability that a run beats a run of the same optimiser's warm-started
    baseline without SIGReg (rliable's definitions), and the interval verdicts of each
    warm-started row against the same optimiser's fresh agent and of each SIGReg row against
    the same optimiser's baseline (:func:`sigreg.optimiser_study.interval_verdict`).
    """
    games = sorted({g for g, _, _ in runs})
    methods = [(o, m) for g, o, m in runs if g == games[0]]
    n = min(len(runs[(g, o, m)]) for g in games for o, m in methods)
    base = {
        (g, o): np.mean([r["auc"] for r in runs[(g, reference or o, "fresh init")]])
        for g in games
        for o, _ in methods
    }
    mats = {
        (o, m): np.array(
            [[r["auc"] / max(base[(g, o)], 1e-9) for r in runs[(g, o, m)][:n]] for g in games]
        ).T
        for o, m in methods
    }
    est = aggregate_interval({f"{o}|{m}": v for (o, m), v in mats.items()})
    by = "the same optimiser's" if reference is None else f"{OPTIMISER_NAMES[reference]}'s"
    table = Table(
        "Aggregate over games: IQM of the fresh-normalised return AUC (every game and seed)",
        ["optimiser", "method", "IQM", "CI low", "CI high", "P(improvement over same optimiser, none)",
         "vs fresh init", "SIGReg vs none", "runs x games", "how"],
        notes=(
            f"Games: {', '.join(g.split('/')[-1] for g in games)}; score = run AUC / mean AUC "
            f"of {by} fresh-init agents on that game (1 = a fresh "
            "agent, below 1 = plasticity lost; 'none' and 'SIGReg' are warm-started). IQM over "
            "all runs "
            "and games with a 95 % stratified bootstrap CI (2000 reps; rliable's "
            "get_interval_estimates + aggregate_iqm); P(improvement) = P(X > Y) over run "
            "pairs, averaged over games. 'vs fresh init': the row's interval against the same "
            "optimiser's fresh-init interval; 'SIGReg vs none': the SIGReg row's interval "
            "against the same optimiser's none row ('overlap (null)' = no difference resolved)."
        ),
    )  # fmt: skip
    add_aggregate_rows(table, mats, est)
    for row, (o, m) in zip(table.rows, mats, strict=True):
        _, lo, hi, _ = est[f"{o}|{m}"]
        _, flo, fhi, _ = est[f"{o}|fresh init"]
        _, blo, bhi, _ = est[f"{o}|none"]
        row["vs fresh init"] = interval_verdict(lo, hi, flo, fhi) if m != "fresh init" else ""
        row["SIGReg vs none"] = interval_verdict(lo, hi, blo, bhi) if m.startswith("SIGReg") else ""
    return table


def plasticity_figure(runs: dict[tuple[str, str, str], list[dict]]):
    """Mean return curve per (optimiser, method), one panel per game."""
    return return_curves_figure(runs, lambda game: f"{game}: warm-started vs fresh")


def plasticity_benchmark(
    games: list[str],
    optimisers: dict[str, float],
    lambdas: list[float],
    iterations: int,
    pretrain: dict,
    seeds: int,
    pqn: dict,
    seed: int = 0,
    workers: int = 1,
) -> tuple[list[Table], dict, list[str]]:
    """The study, its two tables and its figure; skipped (with a note) without MinAtar/Kron.

    Returns ``(tables, {"plasticity.png": figure}, notes)``; the aggregate normalises each
    optimiser's runs by that optimiser's fresh agent.
    """
    try:
        import kron_torch  # noqa: F401
        import minatar  # noqa: F401
    except ImportError as err:
        return [], {}, [f"{err.name} is not installed: the games were skipped (sigreg[bench])."]
    runs = plasticity_study(
        games, optimisers, lambdas, iterations=iterations, pretrain=pretrain, seeds=seeds,
        pqn=pqn, seed=seed, workers=workers,
    )  # fmt: skip
    table = plasticity_table(
        runs, iterations=iterations, pretrain=pretrain, pqn=pqn, optimisers=optimisers,
    )  # fmt: skip
    aggregate = plasticity_aggregate_table(runs)
    return [table, aggregate], {"plasticity.png": plasticity_figure(runs)}, []


@dataclass
class PlasticitySetting:
    """Sizes of the ``plasticity`` section (``configs/reproduce/*.yaml``)."""

    games: list[str]  # MinAtar ids (>= 3 for the claim)
    optimisers: dict  # optimiser name (radam, adam, kron) -> learning rate
    lambdas: list[float]  # 0 = no regulariser
    iterations: int  # PQN rollouts per run (warm-started and fresh alike)
    pretrain: dict  # random-target pre-training of the warm-started agents (sigreg.warm_start)
    seeds: int
    pqn: dict  # the other PQNModule arguments (with num_envs, num_steps)
    workers: int = 1  # processes (each job seeded on its own: same numbers for any count)

    def __post_init__(self):  # one line and exit 2 on a bad setting, before any work
        from sigreg.lightning import OPTIMIZERS

        check_pretrain(self.pretrain)
        unknown = sorted(set(self.optimisers) - set(OPTIMIZERS))
        if unknown or not self.optimisers:
            raise ValueError(f"unknown optimiser(s) {unknown}; choose from {sorted(OPTIMIZERS)}")
        if any(lam < 0 for lam in self.lambdas):
            raise ValueError(f"lambdas must be >= 0, got {self.lambdas}")
        for key in ("iterations", "seeds", "workers"):
            if not (isinstance(getattr(self, key), int) and getattr(self, key) >= 1):
                raise ValueError(f"{key} must be an integer >= 1, got {getattr(self, key)!r}")


def plasticity_section(s: PlasticitySetting, seed: int):
    """``reproduce``'s ``plasticity`` section."""
    import torch
    from icml26_shared.experiment import SectionResult

    torch.set_num_threads(1)
    return SectionResult(*plasticity_benchmark(**vars(s), seed=seed))
