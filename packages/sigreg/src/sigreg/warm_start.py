"""Warm starting from random-target pre-training: the RL plasticity protocol of the games study.

Paper: "Stable Deep Reinforcement Learning via Isotropic Gaussian Representations", Saheb et
al., ICML 2026 (arXiv 2602.19373). The paper's claim is that SIGReg keeps a network
*plastic*: able to learn a new target as well as a freshly initialised one. At CPU scale the
continual protocol of :mod:`sigreg.nonstationary_env` (observation permutations every few
thousand steps) does not make a PQN agent fall below a fresh one: in one short phase the
fresh agent hardly learns either. The games study therefore uses the warm-start protocol
with which plasticity loss is established (Ash & Adams, "On warm-starting neural network
training", NeurIPS 2020; Lyle et al., "Understanding plasticity in neural networks", ICML
2023, who pre-train on random targets; Lyle et al. 2024, "Disentangling the causes of
plasticity loss", on the role of the target scale):

1. pre-train the agent's Q-network by regression of every action's output onto fixed random
   targets, one per observation, on observations of the same game collected by a uniformly
   random policy, with the agent's optimiser and (for a SIGReg run) the same SIGReg term on
   the trunk features -> :func:`pretrain_on_random_targets`;
2. train the warm-started agent with PQN on the game and compare its return with a freshly
   initialised agent's over the same number of environment steps (below it = plasticity
   lost) -> :func:`sigreg.rl_benchmark.run_agent` with ``pretrain=...``.

The observations of step 1 come from a separate copy of the environment (seed ``seed +
10_007``), so the agent's own environment stream is the fresh agent's.
"""

from __future__ import annotations

import inspect

import numpy as np
import torch
import torch.nn.functional as F

from sigreg.sigreg_loss import combine_losses


def pretrain_defaults() -> dict:
    """The pre-training settings of :func:`pretrain_on_random_targets` with their defaults
    (every keyword but ``seed``).

    >>> pretrain_defaults()["updates"]
    500
    """
    sig = inspect.signature(pretrain_on_random_targets).parameters
    return {k: v.default for k, v in sig.items() if k not in ("module", "seed")}


def check_pretrain(pretrain: dict) -> None:
    """Refuse pre-training settings that :func:`pretrain_on_random_targets` does not take.

    >>> check_pretrain({"updates": 10})
    >>> check_pretrain({"update": 10})
    Traceback (most recent call last):
    ...
    ValueError: unknown pretrain setting(s) ['update']; choose from ['observations', 'updates', 'batch_size', 'target_scale', 'target_offset', 'reset_head', 'normalise_loss', 'permute_inputs', 'optimizer', 'lr']
    """
    names = list(pretrain_defaults())
    unknown = sorted(set(pretrain) - set(names))
    if unknown:
        raise ValueError(f"unknown pretrain setting(s) {unknown}; choose from {names}")
    for key in ("observations", "updates", "batch_size"):
        if key in pretrain and not (isinstance(pretrain[key], int) and pretrain[key] >= 1):
            raise ValueError(f"pretrain {key} must be an integer >= 1, got {pretrain[key]!r}")
    from sigreg.lightning import OPTIMIZERS

    if pretrain.get("optimizer") not in (None, *OPTIMIZERS):
        raise ValueError(
            f"pretrain optimizer must be one of {list(OPTIMIZERS)}, got {pretrain['optimizer']!r}"
        )
    if "lr" in pretrain and not (isinstance(pretrain["lr"], int | float) and pretrain["lr"] > 0):
        raise ValueError(f"pretrain lr must be > 0, got {pretrain['lr']!r}")


def random_policy_observations(env_id: str, n: int, seed: int, num_envs: int = 8) -> torch.Tensor:
    """``n`` flattened observations of ``env_id`` under a uniformly random policy.

    >>> random_policy_observations("CartPole-v1", 10, seed=0).shape
    torch.Size([10, 4])
    """
    from sigreg.nonstationary_env import build_env

    env = build_env(env_id, num_envs, period=None, seed=seed)
    rng = np.random.default_rng(seed)
    obs, _ = env.reset(seed=seed)
    rows = []
    while len(rows) * num_envs < n:
        rows.append(np.asarray(obs, dtype=np.float32).reshape(num_envs, -1))
        obs, *_ = env.step(rng.integers(0, int(env.single_action_space.n), num_envs))
    env.close()
    return torch.as_tensor(np.concatenate(rows)[:n])


def pretrain_on_random_targets(
    module,
    *,
    observations: int = 2048,
    updates: int = 500,
    batch_size: int = 128,
    target_scale: float = 10.0,
    target_offset: float = 100.0,
    reset_head: bool = False,
    normalise_loss: bool = True,
    permute_inputs: bool = True,
    optimizer: str | None = None,
    lr: float | None = None,
    seed: int = 0,
) -> dict[str, float]:
    """Fit ``module.q`` (a :class:`~sigreg.lightning.PQNModule`'s network) to random targets.

    Every one of ``observations`` random-policy observations gets a fixed target vector
    ``target_scale * N(0, I)`` (one value per action); ``updates`` minibatch steps of
    ``0.5 * MSE`` with a fresh optimiser of the module's kind and learning rate (or of
    ``optimizer`` / ``lr`` when given: the same warm start for agents that then train with
    different optimisers; PSGD-Kron at lr 3e-4 barely moves the outputs toward the offset
    in 500 updates, see ``docs/rl_plasticity_protocol.md``), plus
    ``module.hparams.sigreg_lambda`` times SIGReg on the trunk features when the module
    has a regulariser (the same loss form as the agent's updates), gradient norm clipped
    at the agent's ``max_grad_norm``. Returns the first and last minibatch losses (in units
    of the targets' second moment when ``normalise_loss``: about 0.5 at the start, near 0
    once the targets are fitted).

    Examples:
        >>> from sigreg.lightning import PQNModule
        >>> agent = PQNModule(num_envs=2, num_steps=4, hidden=16)
        >>> out = pretrain_on_random_targets(agent, observations=64, updates=20, batch_size=32)
        >>> sorted(out)
        ['first_loss', 'last_loss']
    """
    from sigreg.lightning import make_optimizer

    hp = module.hparams
    gen = torch.Generator().manual_seed(seed + 10_007)
    # the regression loss in units of the targets' second moment: O(1) at the start, as the
    # agent's TD loss on clipped rewards is, so lambda weighs SIGReg as in the RL updates
    norm = (target_offset**2 + target_scale**2) if normalise_loss else 1.0
    norm = max(norm, 1e-12)
    obs = random_policy_observations(hp.env_id, observations, seed + 10_007)
    if permute_inputs:  # another task: the same frames with their coordinates shuffled
        obs = obs[:, torch.randperm(obs.shape[1], generator=gen)]
    targets = target_offset + target_scale * torch.randn(
        obs.shape[0], module.n_actions, generator=gen
    )
    q = module.q
    opt = make_optimizer(optimizer or hp.optimizer, q.parameters(), lr or hp.lr)
    first = last = float("nan")
    for step in range(updates):
        idx = torch.randint(0, obs.shape[0], (min(batch_size, obs.shape[0]),), generator=gen)
        phi = q.features(obs[idx])
        loss = 0.5 * F.mse_loss(q.head(q.trunk.head_input(phi)), targets[idx]) / norm
        first = float(loss.detach()) if step == 0 else first
        last = float(loss.detach())
        if module.reg is not None:
            loss = combine_losses(loss, module.reg(phi), hp.sigreg_lambda, hp.lambda_convention)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(q.parameters(), hp.max_grad_norm)
        opt.step()
    if reset_head:
        q.head.reset_parameters()
    return {"first_loss": first, "last_loss": last}
