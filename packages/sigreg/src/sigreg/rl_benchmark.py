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
"""

from __future__ import annotations

import time

import lightning.pytorch as pl
import numpy as np


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
    **overrides,
) -> dict:
    """Train one agent for ``iterations`` rollouts; episodes, AUC, diagnostics, timings."""
    from sigreg.ppo_agent import PPOModule
    from sigreg.pqn_agent import PQNModule
    from sigreg.rollout_data import RolloutDataModule

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
    trainer = pl.Trainer(
        accelerator="cpu",
        devices=1,
        max_epochs=1,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
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
    }
