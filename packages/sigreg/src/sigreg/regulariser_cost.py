"""SIGReg's wall-clock cost: the paper's "negligible cost" claim, measured.

The paper adds ``lam * SIGReg(phi)`` to the task loss of the minibatch that is already
being trained on, so the extra work per update is the projection ``phi @ U`` (O(N D M)),
one trig pass over the ``(N, M, T)`` phases (O(N M T)), a few ``(M, T)`` reductions and
their backward; the features themselves are already computed by the forward pass.

* one update step (forward, TD-style squared loss on a linear head, optional SIGReg,
  backward, gradient clipping, RAdam) of a trunk -> :func:`update_step`
* interleaved timing of the same update with and without the regulariser over repeats;
  the overhead ratio ``t_with / t_without - 1`` per repeat, its median and spread
  -> :func:`measure_overhead`
* one PQN rollout (the part of an iteration SIGReg does not touch) and the overhead of
  a whole iteration (rollout + its updates) -> :func:`measure_rollout`,
  :func:`iteration_overhead`
* the plain-autograd form of the statistic (full symmetric grid, separate ``cos`` and
  ``sin``, autograd backward) as the unfused reference -> :func:`reference_sigreg`
* the cost table: the CPU-scale MLP trunk of PQN CartPole and the paper's Atari Nature CNN
  (D = 512, batch 128) -> :func:`cost_table`
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np
import torch
import torch.nn.functional as F
from icml26_shared.results import Table

from sigreg.encoder import make_trunk
from sigreg.sigreg_loss import SIGReg, draw_slices, frequency_grid, frequency_weights


def reference_sigreg(x: torch.Tensor, num_slices: int = 16) -> torch.Tensor:
    """The released statistic written the direct way (unfused, unfolded grid).

    >>> g = torch.Generator().manual_seed(0)
    >>> float(reference_sigreg(torch.zeros(8, 4))) > 0.1
    True
    """
    t = frequency_grid(8, 5.0, "symmetric", dtype=x.dtype).to(x.device)
    w = frequency_weights(t, "none", "symmetric")
    z = x @ draw_slices(x.shape[1], num_slices, device=x.device, dtype=x.dtype)
    zt = z.unsqueeze(-1) * t
    c, s = torch.cos(zt).mean(0), torch.sin(zt).mean(0)
    return (((c - torch.exp(-0.5 * t**2)) ** 2 + s**2) @ w).mean()


def update_step(trunk, head, opt, obs, target, reg: Callable | None, lam: float = 1.0) -> None:
    """One PQN-style update: ``0.5 (head(relu(phi)) - target)^2 [+ lam * reg(phi)]``."""
    phi = trunk(obs)
    q = head(trunk.head_input(phi))[:, 0]
    loss = 0.5 * F.mse_loss(q, target)
    if reg is not None:
        loss = loss + lam * reg(phi)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(list(trunk.parameters()) + list(head.parameters()), 10.0)
    opt.step()


def measure_overhead(
    encoder: str = "mlp",
    *,
    obs_shape: tuple[int, ...] = (4,),
    hidden: int = 128,
    depth: int = 2,
    batch: int = 64,
    repeats: int = 7,
    steps: int = 20,
    warmup: int = 3,
    seed: int = 0,
) -> dict:
    """Median and spread of the SIGReg overhead of an update, same run, interleaved.

    Each repeat runs ``steps`` rounds; a round times one update without the regulariser,
    one with the fused SIGReg and one with :func:`reference_sigreg`, in a rotating order
    (so drifts in machine load hit all three), on the same minibatch and network. A
    repeat's time is the median over its rounds; the overhead ratio of a repeat is
    ``t_with / t_without - 1``. Returns the medians over repeats (seconds per update) and
    the per-repeat ratios.

    Examples:
        >>> r = measure_overhead(hidden=16, batch=8, repeats=2, steps=2, warmup=1)
        >>> sorted(r)[:3], len(r["ratio_fused"]), len(r["wall_ratio_reference"])
        (['base_s', 'base_wall_s', 'batch'], 2, 2)
    """
    torch.manual_seed(seed)
    trunk = make_trunk(encoder, obs_shape, hidden, depth, True, feature_point="pre-relu")
    head = torch.nn.Linear(hidden, 6)
    opt = torch.optim.RAdam(list(trunk.parameters()) + list(head.parameters()), lr=1e-4)
    g = torch.Generator().manual_seed(seed)
    obs = torch.rand(batch, int(np.prod(obs_shape)), generator=g)
    if encoder == "nature-cnn":
        obs = obs * 255.0
    target = torch.randn(batch, generator=g)
    variants: dict[str, Callable | None] = {
        "base": None,
        "fused": SIGReg(),
        "reference": reference_sigreg,
    }
    for reg in variants.values():
        for _ in range(warmup):
            update_step(trunk, head, opt, obs, target, reg)
    times: dict[str, list[float]] = {k: [] for k in variants}
    walls: dict[str, list[float]] = {k: [] for k in variants}
    names = list(variants)
    for r in range(repeats):
        cpu: dict[str, list[float]] = {k: [] for k in variants}
        wall: dict[str, list[float]] = {k: [] for k in variants}
        for i in range(steps):  # one update of each variant per round, rotating order
            j = (r * steps + i) % len(names)
            for name in names[j:] + names[:j]:
                c0, w0 = time.thread_time(), time.perf_counter()
                update_step(trunk, head, opt, obs, target, variants[name])
                cpu[name].append(time.thread_time() - c0)
                wall[name].append(time.perf_counter() - w0)
        for name in names:  # median of a repeat: robust to load spikes
            times[name].append(float(np.median(cpu[name])))
            walls[name].append(float(np.median(wall[name])))
    out = {f"{k}_s": float(np.median(v)) for k, v in times.items()}
    out.update({f"{k}_wall_s": float(np.median(v)) for k, v in walls.items()})
    for k in ("fused", "reference"):
        out[f"ratio_{k}"] = (np.array(times[k]) / np.array(times["base"]) - 1.0).tolist()
        out[f"wall_ratio_{k}"] = (np.array(walls[k]) / np.array(walls["base"]) - 1.0).tolist()
    out.update(encoder=encoder, hidden=hidden, batch=batch, repeats=repeats, steps=steps)
    return out


def measure_rollout(
    env_id: str = "CartPole-v1",
    *,
    num_envs: int = 8,
    num_steps: int = 32,
    hidden: int = 128,
    repeats: int = 5,
    seed: int = 0,
) -> float:
    """Median CPU time (s) of one PQN rollout (``num_envs x num_steps`` env steps).

    The rollout (epsilon-greedy acting, environment steps, bootstrap values) is the part
    of a PQN iteration that SIGReg does not touch; with the per-update times of
    :func:`measure_overhead` it gives the overhead of a whole training iteration:
    :func:`iteration_overhead`.

    >>> measure_rollout(num_envs=2, num_steps=2, hidden=8, repeats=1) > 0
    True
    """
    from sigreg.lightning import PQNModule

    agent = PQNModule(env_id, num_envs=num_envs, num_steps=num_steps, hidden=hidden, seed=seed)
    agent.collect()  # warm-up (environment reset)
    times = []
    for _ in range(repeats):
        c0 = time.thread_time()
        agent.collect()
        times.append(time.thread_time() - c0)
    agent.env.close()
    return float(np.median(times))


def iteration_overhead(rollout_s: float, base_s: float, with_s: float, updates: int) -> float:
    """Overhead (%) of SIGReg on a whole PQN iteration: one rollout + ``updates`` updates.

    ``100 * updates (t_with - t_without) / (t_rollout + updates t_without)``.

    >>> iteration_overhead(1.0, 0.1, 0.2, 10)
    50.0
    """
    return 100.0 * updates * (with_s - base_s) / (rollout_s + updates * base_s)


def summarise(ratios) -> tuple[float, float, float]:
    """Median, 25th and 75th percentile of overhead ratios, in percent.

    >>> summarise([0.01, 0.02, 0.03, 0.04])
    (2.5, 1.75, 3.25)
    """
    r = 100 * np.asarray(ratios, dtype=float)
    return float(np.median(r)), float(np.percentile(r, 25)), float(np.percentile(r, 75))


def cost_table(repeats: int, rounds: int, cnn_rounds: int, seed: int = 0) -> Table:
    """SIGReg's cost per update: fused vs unfused, MLP (CPU scale) and the paper's CNN.

    The MLP row runs ``repeats x rounds`` (:func:`measure_overhead`), the Nature CNN row
    ``max(3, repeats - 4) x cnn_rounds``; the MLP row adds the overhead of a whole PQN
    CartPole iteration (:func:`iteration_overhead`).
    """
    pct = [
        "overhead median",
        "overhead q25",
        "overhead q75",
        "unfused overhead median",
        "unfused q25",
        "unfused q75",
        "wall overhead median",
        "overhead per PQN iteration",
    ]
    table = Table(
        "Cost of SIGReg per update (same run, interleaved)",
        ["trunk", "batch x D", "update without", "update with", *pct[:3], *pct[3:6], pct[6],
         pct[7], "repeats x rounds"],
        units={"update without": "ms", "update with": "ms", **dict.fromkeys(pct, "%")},
        notes=(
            "One PQN-style update (forward, 0.5 (Q - G)^2 on a linear head, + SIGReg "
            "(released preset, 16 slices, 8 frequencies) on the trunk output, backward, "
            "grad-clip 10, RAdam). Overhead = t_with / t_without - 1 per repeat, median and "
            "quartiles over repeats; each repeat's time is the median over rounds that time "
            "one update of each variant in rotating order. Time = the thread's CPU time "
            "(torch on 1 thread), which the other jobs on this shared machine do not "
            "inflate; 'wall overhead' is the same from wall-clock time (noisy here). "
            "'unfused' = the direct autograd form (full symmetric grid, separate cos/sin); "
            "the package's SIGReg folds the grid onto t > 0, computes cos and sin in one "
            "pass and is one autograd node with a hand-written backward. 'overhead per PQN "
            "iteration' = 8 (t_with - t_without) / (t_rollout + 8 t_without): the same "
            "updates inside a whole PQN CartPole iteration (one rollout of 8 envs x 32 "
            "steps, CPU time of PQNModule.collect, median of 5; then 2 epochs x 4 "
            "minibatches of 64), as in the CartPole table; not measured for the CNN (no "
            "Atari rollout here)."
        ),
    )  # fmt: skip
    setups = [
        ("MLP 2x128 + LN (PQN CartPole)", "mlp", (4,), 128, 64, repeats, rounds),
        ("Nature CNN, D=512 (paper's Atari encoder)", "nature-cnn", (4, 84, 84), 512, 128,
         max(3, repeats - 4), cnn_rounds),
    ]  # fmt: skip
    rollout_s = measure_rollout(num_envs=8, num_steps=32, hidden=128, seed=seed)
    for label, enc, shape, hidden, batch, n_repeats, n_rounds in setups:
        r = measure_overhead(
            enc,
            obs_shape=shape,
            hidden=hidden,
            batch=batch,
            repeats=n_repeats,
            steps=n_rounds,
            warmup=1 if enc == "nature-cnn" else 3,
            seed=seed,
        )
        med, q25, q75 = summarise(r["ratio_fused"])
        umed, uq25, uq75 = summarise(r["ratio_reference"])
        table.add_row(
            trunk=label,
            **{
                "batch x D": f"{batch} x {hidden}",
                "update without": 1e3 * r["base_s"],
                "update with": 1e3 * r["fused_s"],
                "overhead median": med,
                "overhead q25": q25,
                "overhead q75": q75,
                "unfused overhead median": umed,
                "unfused q25": uq25,
                "unfused q75": uq75,
                "wall overhead median": summarise(r["wall_ratio_fused"])[0],
                "overhead per PQN iteration": (
                    iteration_overhead(rollout_s, r["base_s"], r["fused_s"], 8)
                    if enc == "mlp"
                    else None
                ),
                "repeats x rounds": f"{n_repeats} x {n_rounds}",
            },
        )
    return table
