"""Non-stationary control benchmark: PQN / PPO +- SIGReg on drifting CartPole / MinAtar.

* one seeded training run through ``Trainer.fit`` -> :func:`run_agent`
* return curve on a fixed step grid and its area (mean return over training, the
  paper's AUC, normalised by the run length) -> :func:`return_curve`, :func:`return_auc`
* interquartile mean and percentile-bootstrap CI over seeds (``rliable`` is used instead
  when installed) -> :func:`iqm`, :func:`bootstrap_ci`, :func:`interval_estimate`
* aggregate over tasks: IQM of the ``(runs, tasks)`` score matrix with a stratified
  bootstrap CI (runs resampled within each task) and the probability of improvement
  ``P(X > Y)`` of one method over another (``rliable`` when installed, the same
  definitions in numpy otherwise) -> :func:`aggregate_interval`,
  :func:`probability_of_improvement`
* the benchmark tables: per task, one row per (agent, lambda) with the return AUC IQM and
  its CI over seeds, final return, dormancy, srank and timings -> :func:`control_table`,
  :func:`run_control`; over tasks, the IQM of each run's AUC divided by the mean AUC of
  lambda = 0 on its task -> :func:`aggregate_table`; the return curves -> :func:`control_figure`
"""

from __future__ import annotations

import time

import lightning.pytorch as pl
import numpy as np
from icml26_shared.progress import progress
from icml26_shared.results import Table


def return_curve(episodes: list[tuple[int, float]], total_steps: int, bins: int = 20) -> np.ndarray:
    """Mean raw episode return of the episodes ending in each of ``bins`` equal step bins.

    Empty bins carry the previous bin's value (0 before the first episode).

    >>> return_curve([(1, 10.0), (3, 20.0), (4, 30.0)], 4, bins=2).tolist()
    [10.0, 25.0]
    """
    edges = np.linspace(0, total_steps, bins + 1)
    out = np.zeros(bins)
    prev = 0.0
    steps = np.array([s for s, _ in episodes], dtype=float)
    rets = np.array([r for _, r in episodes], dtype=float)
    for b in range(bins):
        sel = (steps > edges[b]) & (steps <= edges[b + 1]) if b else (steps <= edges[1])
        if sel.any():
            prev = float(rets[sel].mean())
        out[b] = prev
    return out


def return_auc(episodes: list[tuple[int, float]], total_steps: int, bins: int = 20) -> float:
    """Area under the return curve divided by its length (= mean of the binned curve)."""
    return float(return_curve(episodes, total_steps, bins).mean())


def iqm(x) -> float:
    """Interquartile mean (mean of the middle 50 %; the plain mean for < 4 values).

    >>> iqm([0, 1, 2, 3, 4, 5, 6, 100])
    3.5
    """
    x = np.sort(np.asarray(x, dtype=float))
    n = x.size
    if n < 4:
        return float(x.mean())
    lo, hi = int(np.floor(0.25 * n)), int(np.ceil(0.75 * n))
    return float(x[lo:hi].mean())


def bootstrap_ci(
    x, stat=iqm, reps: int = 2000, alpha: float = 0.05, seed: int = 0
) -> tuple[float, float]:
    """Percentile bootstrap CI of ``stat`` over seeds."""
    x = np.asarray(x, dtype=float)
    rng = np.random.default_rng(seed)
    boots = [stat(x[rng.integers(0, x.size, x.size)]) for _ in range(reps)]
    return float(np.quantile(boots, alpha / 2)), float(np.quantile(boots, 1 - alpha / 2))


def interval_estimate(scores) -> tuple[float, float, float, str]:
    """IQM and 95 % CI over seeds: ``rliable`` stratified bootstrap if installed."""
    scores = np.asarray(scores, dtype=float)
    try:
        from rliable import library as rly
        from rliable import metrics as rlm

        point, ci = rly.get_interval_estimates(
            {"x": scores[:, None]}, lambda s: np.array([rlm.aggregate_iqm(s)]), reps=2000
        )
        return float(point["x"][0]), float(ci["x"][0, 0]), float(ci["x"][1, 0]), "rliable"
    except ImportError:
        lo, hi = bootstrap_ci(scores)
        return iqm(scores), lo, hi, "bootstrap"


def _stratified_boot(matrix: np.ndarray, stat, reps: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    n = matrix.shape[0]
    cols = np.arange(matrix.shape[1])
    return np.array([stat(matrix[rng.integers(0, n, matrix.shape), cols]) for _ in range(reps)])


def aggregate_interval(
    scores: dict[str, np.ndarray], reps: int = 2000, seed: int = 0
) -> dict[str, tuple[float, float, float, str]]:
    """IQM over all runs and tasks of each ``(runs, tasks)`` matrix, stratified-bootstrap 95 % CI.

    Uses ``rliable`` (``get_interval_estimates`` with ``aggregate_iqm``) when installed,
    else the same estimator in numpy. Returns ``{method: (iqm, low, high, how)}``.

    >>> m = np.array([[1.0, 10.0], [2.0, 20.0], [3.0, 30.0], [4.0, 40.0]])
    >>> point, lo, hi, how = aggregate_interval({"a": m}, reps=200)["a"]
    >>> point, lo <= point <= hi
    (9.25, True)
    """
    scores = {k: np.asarray(v, dtype=float) for k, v in scores.items()}
    for k, v in scores.items():
        if v.ndim != 2 or v.shape[0] < 1:
            raise ValueError(f"scores[{k!r}] must be a (runs, tasks) matrix, got {v.shape}")
    try:
        from rliable import library as rly
        from rliable import metrics as rlm
    except ImportError:
        out = {}
        for k, v in scores.items():
            boots = _stratified_boot(v, lambda m: iqm(m.ravel()), reps, seed)
            lo, hi = np.quantile(boots, [0.025, 0.975])
            out[k] = (iqm(v.ravel()), float(lo), float(hi), "bootstrap")
        return out
    np.random.seed(seed)  # rliable draws from numpy's global generator
    point, ci = rly.get_interval_estimates(
        scores, lambda m: np.array([rlm.aggregate_iqm(m)]), reps=reps
    )
    return {
        k: (float(point[k][0]), float(ci[k][0, 0]), float(ci[k][1, 0]), "rliable") for k in scores
    }


def probability_of_improvement(x: np.ndarray, y: np.ndarray) -> float:
    """``P(X > Y)`` averaged over tasks (ties count 1/2): rliable's probability of improvement.

    ``x`` and ``y`` are ``(runs, tasks)`` score matrices of two methods.

    >>> probability_of_improvement(np.array([[2.0], [3.0]]), np.array([[1.0], [3.0]]))
    0.625
    """
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if x.ndim != 2 or y.ndim != 2 or x.shape[1] != y.shape[1]:
        raise ValueError(
            f"need (runs, tasks) matrices over the same tasks, got {x.shape}, {y.shape}"
        )
    per_task = [
        float(((xi[:, None] > yi[None]) + 0.5 * (xi[:, None] == yi[None])).mean())
        for xi, yi in zip(x.T, y.T, strict=True)
    ]
    return float(np.mean(per_task))


def run_agent(
    agent: str = "pqn",
    *,
    env_id: str = "CartPole-v1",
    sigreg_lambda: float = 0.0,
    sigreg_preset: str = "isogaussian-drl",
    iterations: int = 100,
    ns_period: int | None = None,
    ns_kinds: tuple[str, ...] = ("permute", "sign"),
    seed: int = 0,
    pretrain: dict | None = None,
    **overrides,
) -> dict:
    """Train one agent for ``iterations`` rollouts; episodes, AUC, diagnostics, timings.

    ``pretrain`` (PQN only): keyword arguments of
    :func:`sigreg.warm_start.pretrain_on_random_targets`; the agent is then warm-started from
    a network pre-trained on random targets (the games study's plasticity protocol) and the
    result holds ``pretrain`` (its losses and the diagnostics right after pre-training).
    """
    from icml26_shared.trainer import quiet_trainer

    from sigreg.lightning import PPOModule, PQNModule, RolloutDataModule

    pl.seed_everything(seed, verbose=False)
    kw = dict(
        env_id=env_id,
        sigreg_lambda=sigreg_lambda,
        sigreg_preset=sigreg_preset,
        ns_period=ns_period,
        ns_kinds=ns_kinds,
        seed=seed,
    )
    kw.update(overrides)
    if agent == "pqn":
        module = PQNModule(**kw)
        module.hparams.total_timesteps = (
            iterations * module.hparams.num_envs * module.hparams.num_steps
        )
    elif agent == "ppo":
        module = PPOModule(iterations=iterations, **kw)
    else:
        raise ValueError(f"unknown agent {agent!r}; choose 'pqn' or 'ppo'")
    pre = None
    if pretrain is not None:
        if agent != "pqn":
            raise ValueError("pretrain is defined for the PQN agent only")
        from sigreg.warm_start import pretrain_on_random_targets, random_policy_observations

        pre = pretrain_on_random_targets(module, seed=seed, **pretrain)
        probe = random_policy_observations(env_id, 256, seed + 20_011)
        pre["diagnostics"] = module.diagnose(probe)
    trainer = quiet_trainer(max_epochs=1)
    t0 = time.perf_counter()
    trainer.fit(module, datamodule=RolloutDataModule(iterations))
    wall = time.perf_counter() - t0
    total = module.env_steps
    episodes = list(module.env.episodes)
    diag = module.diagnose()
    return {
        "episodes": episodes,
        "total_steps": total,
        "auc": return_auc(episodes, total),
        "final": float(np.mean([r for _, r in episodes[-20:]])) if episodes else 0.0,
        "wall_s": wall,
        "update_s": module.update_time,
        "reg_s": module.reg_time,
        "diagnostics": diag,
        "pretrain": pre,
    }


def control_table(title: str, notes: str) -> Table:
    """An empty per-task table of :func:`run_control` rows."""
    return Table(
        title,
        ["agent", "method", "return AUC IQM", "CI low", "CI high", "final return",
         "dormant % tau=0", "srank", "wall", "SIGReg fwd share of update", "seeds"],
        units={"wall": "s", "SIGReg fwd share of update": "%"},
        notes=notes,
    )  # fmt: skip


def run_control(
    table: Table,
    plans: list[tuple[str, str, int, int, dict]],
    env_id: str,
    *,
    lambdas,
    phase_iterations: int,
    seed: int = 0,
    desc: str = "control",
) -> dict[tuple[str, float], list[dict]]:
    """Run every (agent, lambda, seed) of ``plans``; add one row per (agent, lambda) to ``table``.

    ``plans`` holds ``(row name, agent, iterations, number of seeds, agent keyword arguments)``
    (the keyword arguments must hold ``num_steps``); the observation changes every
    ``phase_iterations`` rollouts. Seeds are ``seed, seed + 1, ...``. Returns
    ``{(row name, lambda): [run_agent results]}``.
    """
    jobs = [
        (name, agent, iters, kw, lam, k)
        for name, agent, iters, n_seeds, kw in plans
        for lam in lambdas
        for k in range(n_seeds)
    ]
    results: dict[tuple, list] = {}
    for name, agent, iters, kw, lam, k in progress(jobs, desc=desc, total=len(jobs)):
        res = run_agent(
            agent,
            env_id=env_id,
            sigreg_lambda=lam,
            iterations=iters,
            ns_period=phase_iterations * kw["num_steps"],
            seed=seed + k,
            **kw,
        )
        results.setdefault((name, lam), []).append(res)
    for (name, lam), runs in results.items():
        point, lo, hi, how = interval_estimate([r["auc"] for r in runs])
        diag = [r["diagnostics"] for r in runs if r["diagnostics"]]
        share = 100 * float(
            np.sum([r["reg_s"] for r in runs]) / max(np.sum([r["update_s"] for r in runs]), 1e-9)
        )
        table.add_row(
            agent=name,
            method="none" if lam == 0 else f"SIGReg l={lam}",
            **{
                "return AUC IQM": point,
                "CI low": lo,
                "CI high": hi,
                "final return": float(np.mean([r["final"] for r in runs])),
                "dormant % tau=0": 100 * float(np.mean([d["dormant_tau0"] for d in diag]))
                if diag
                else None,
                "srank": float(np.mean([d["srank"] for d in diag])) if diag else None,
                "wall": float(np.mean([r["wall_s"] for r in runs])),
                "SIGReg fwd share of update": share,
                "seeds": f"{len(runs)} ({how})",
            },
        )
    return results


def aggregate_table(tasks: dict[str, dict], lambdas, agent: str = "PQN") -> Table:
    """IQM over (runs x tasks) of baseline-normalised AUC, stratified bootstrap, P(improvement).

    ``tasks`` maps a task name to the :func:`run_control` results of that task; the score of
    a run is its AUC divided by the mean AUC of ``agent`` at lambda = 0 on its task.
    """
    names = list(tasks)
    n_runs = min(len(res[(agent, lam)]) for res in tasks.values() for lam in lambdas)
    mats = {}
    for lam in lambdas:
        cols = []
        for task in names:
            base = np.mean([r["auc"] for r in tasks[task][(agent, 0.0)]])
            runs = tasks[task][(agent, lam)][:n_runs]
            cols.append([r["auc"] / max(base, 1e-9) for r in runs])
        mats[lam] = np.array(cols).T  # (runs, tasks)
    est = aggregate_interval({str(lam): m for lam, m in mats.items()})
    table = Table(
        f"Aggregate over tasks: {agent} return AUC normalised by the lambda = 0 mean of each task",
        ["method", "IQM", "CI low", "CI high", "P(improvement over none)", "runs x tasks", "how"],
        notes=(
            f"Tasks: {', '.join(names)}; score = run AUC / mean AUC of lambda = 0 on that "
            "task (1 = the baseline's mean). IQM over all runs and tasks, 95 % stratified "
            "bootstrap CI (runs resampled within each task, 2000 reps; rliable's "
            "get_interval_estimates + aggregate_iqm where installed); P(improvement) = "
            "P(X > Y) over run pairs, averaged over tasks (rliable's definition)."
        ),
    )
    for lam, m in mats.items():
        point, lo, hi, how = est[str(lam)]
        table.add_row(
            method="none" if lam == 0 else f"SIGReg l={lam}",
            IQM=point,
            **{
                "CI low": lo,
                "CI high": hi,
                "P(improvement over none)": probability_of_improvement(m, mats[0.0]),
                "runs x tasks": f"{m.shape[0]} x {m.shape[1]}",
                "how": how,
            },
        )
    return table


def control_figure(tasks: dict[str, dict]):
    """Mean return curve (20 step bins) per (agent, lambda), one panel per task."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(tasks), figsize=(6 * len(tasks), 4), squeeze=False)
    for ax, (task, results) in zip(axes[0], tasks.items(), strict=True):
        for (name, lam), runs in results.items():
            curve = np.mean([return_curve(r["episodes"], r["total_steps"]) for r in runs], axis=0)
            ax.plot(curve, label=f"{name} lambda={lam}")
        ax.set_xlabel("training progress (20 bins)")
        ax.set_ylabel("episode return")
        ax.set_title(f"non-stationary {task}")
        ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def control_benchmark(
    lambdas,
    phase_iterations: int,
    pqn: dict,
    ppo: dict,
    *,
    pqn_iterations: int,
    pqn_seeds: int,
    ppo_iterations: int,
    ppo_seeds: int,
    minatar_iterations: int,
    minatar_seeds: int,
    seed: int = 0,
) -> tuple[list[Table], dict[str, dict], list[str]]:
    """PQN / PPO +- SIGReg on non-stationary CartPole and (with ``minatar``) MinAtar Breakout.

    ``pqn`` / ``ppo`` are the agents' keyword arguments (with ``lr``, ``num_envs`` and
    ``num_steps``); every ``lambdas`` value runs for every seed. Returns the tables
    (CartPole, MinAtar when installed, the aggregate over tasks), ``{task: run_control
    results}`` for :func:`control_figure`, and notes on what was skipped.
    """
    run = dict(lambdas=lambdas, phase_iterations=phase_iterations)
    bench = "(`pip install sigreg[bench]`)"
    cartpole = control_table(
        "Non-stationary CartPole: PQN / PPO with and without SIGReg",
        "CartPole-v1; the observation is re-permuted and its signs re-flipped every "
        f"{phase_iterations} rollouts (phase 0 = unchanged). Return AUC = mean raw episode "
        "return over 20 equal step bins of the run; IQM and 95 % bootstrap CI over seeds "
        f"(rliable where installed). PQN: {pqn['num_envs']} envs x {pqn['num_steps']} steps, "
        f"2 epochs x 4 minibatches, RAdam {pqn['lr']:g}, LayerNorm, Q(lambda)=0.65, SIGReg on "
        "the LayerNorm'd trunk output before the head's ReLU; PPO: "
        f"{ppo['num_envs']} envs x {ppo['num_steps']} steps, Adam {ppo['lr']:g} annealed, shared "
        f"trunk, SIGReg on its hidden state. lambda in {lambdas}; final return = mean of the "
        "last 20 episodes; dormant/srank on the last rollout's observations. 'SIGReg fwd share' "
        "= wall time of the SIGReg forward / wall time of the updates (backward excluded; see "
        "the cost table).",
    )  # fmt: skip
    plans = [("PQN", "pqn", pqn_iterations, pqn_seeds, pqn),
             ("PPO", "ppo", ppo_iterations, ppo_seeds, ppo)]  # fmt: skip
    tasks = {"CartPole-v1": run_control(cartpole, plans, "CartPole-v1", seed=seed, **run)}
    tables, notes = [cartpole], []
    try:
        import minatar  # noqa: F401
    except ImportError:
        notes.append(f"minatar is not installed: MinAtar Breakout was skipped {bench}.")
    else:
        env = "MinAtar/Breakout-v1"
        minatar_table = control_table(
            "Non-stationary MinAtar Breakout: PQN with and without SIGReg",
            f"{env} (MinAtar 10x10x4 binary frames, sticky actions 0.1, minimal action set), "
            f"{minatar_iterations} rollouts of {pqn['num_envs']} envs x {pqn['num_steps']} "
            f"steps ({minatar_iterations * pqn['num_envs'] * pqn['num_steps']} env steps); the "
            f"flattened observation is re-permuted and sign-flipped every {phase_iterations} "
            "rollouts. PQN as in the CartPole table (MLP trunk 2 x 128 on the flattened frame, "
            "not the paper's CNN).",
        )  # fmt: skip
        plan = [("PQN", "pqn", minatar_iterations, minatar_seeds, pqn)]
        tasks[env] = run_control(minatar_table, plan, env, seed=seed, desc="minatar", **run)
        tables.append(minatar_table)
    tables.append(aggregate_table(tasks, lambdas))
    return tables, tasks, notes
