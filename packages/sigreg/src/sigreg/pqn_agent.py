"""PQN (parallel Q-learning with LayerNorm and Q(lambda)) with SIGReg on its trunk.

CleanRL-style PQN (Gallici et al., 2025), as used by the paper:

1. vectorised epsilon-greedy rollout of ``num_envs x num_steps`` transitions, epsilon
   linearly annealed from ``start_e`` to ``end_e`` over ``exploration_fraction`` of the run;
2. Q(lambda) targets, computed backwards:
   ``G_T = r_T + gamma (1 - d_T) max_a Q(s_{T+1}, a)``,
   ``G_t = r_t + gamma (1 - d_t) [lambda G_{t+1} + (1 - lambda) max_a Q(s_{t+1}, a)]``
   -> :func:`q_lambda_returns`;
3. ``num_epochs x num_minibatches`` updates of ``0.5 (Q(s, a) - G)^2`` plus
   ``lambda_sigreg * SIGReg(phi)`` on the trunk output (LayerNorm'd, before the Q-head's
   ReLU and Linear), gradient clipping, RAdam -> :class:`PQNModule`.
"""

from __future__ import annotations

import time
from typing import Literal

import gymnasium as gym
import lightning.pytorch as pl
import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from sigreg.encoder import make_trunk
from sigreg.nonstationary_env import build_env
from sigreg.plasticity_metrics import ActivationRecorder, representation_report
from sigreg.sigreg_loss import SIGReg, combine_losses


def q_lambda_returns(
    rewards: torch.Tensor,
    dones: torch.Tensor,
    next_values: torch.Tensor,
    gamma: float,
    q_lambda: float,
) -> torch.Tensor:
    """Q(lambda) targets ``(S, E)``; ``next_values[t] = max_a Q(s_{t+1}, a)``.

    With ``q_lambda = 0`` these are one-step targets:

    >>> r = torch.ones(3, 1); d = torch.zeros(3, 1); v = torch.full((3, 1), 2.0)
    >>> q_lambda_returns(r, d, v, 0.5, 0.0).flatten().tolist()
    [2.0, 2.0, 2.0]
    """
    steps = rewards.shape[0]
    out = torch.zeros_like(rewards)
    nonterminal = 1.0 - dones
    out[-1] = rewards[-1] + gamma * nonterminal[-1] * next_values[-1]
    for t in range(steps - 2, -1, -1):
        blend = q_lambda * out[t + 1] + (1 - q_lambda) * next_values[t]
        out[t] = rewards[t] + gamma * nonterminal[t] * blend
    return out


class QNetwork(nn.Module):
    """Trunk ``[Linear -> LayerNorm -> ReLU] x depth`` (last without ReLU) + ReLU-Linear head.

    Examples:
        >>> q = QNetwork(4, 2, hidden=8); q(torch.zeros(3, 4)).shape
        torch.Size([3, 2])
    """

    def __init__(
        self,
        obs_dim: int,
        n_actions: int,
        hidden: int = 128,
        depth: int = 2,
        layer_norm: bool = True,
        encoder: str = "mlp",
        obs_shape: tuple[int, ...] | None = None,
    ):
        super().__init__()
        self.trunk = make_trunk(
            encoder, obs_shape or (obs_dim,), hidden, depth, layer_norm, feature_point="pre-relu"
        )
        self.head = nn.Linear(hidden, n_actions)

    def features(self, obs: torch.Tensor) -> torch.Tensor:
        return self.trunk(obs)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.head(self.trunk.head_input(self.trunk(obs)))


class PQNModule(pl.LightningModule):
    """PQN agent (manual optimisation; one ``training_step`` = one rollout + its updates).

    Args:
        env_id: Gymnasium id with a discrete action space (``CartPole-v1``, ``MinAtar/*``).
        num_envs, num_steps: Rollout size per iteration.
        total_timesteps: For the epsilon schedule (iterations = total / (envs * steps)).
        lr, gamma, q_lambda, num_epochs, num_minibatches, max_grad_norm: PQN settings.
        start_e, end_e, exploration_fraction: Epsilon schedule.
        hidden, depth, layer_norm: Q-network.
        encoder: ``mlp`` (flattened observation) or ``nature-cnn`` (Atari frame stacks, the
            paper's encoder; use ``hidden=512``).
        sigreg_lambda, sigreg_preset, lambda_convention: The regulariser (0: plain PQN).
        ns_period, ns_kinds: Non-stationarity (vector steps per phase, kinds).
        seed: Environment seed.

    Examples:
        >>> agent = PQNModule(num_envs=2, num_steps=4, hidden=8)
        >>> agent(torch.zeros(1, 4)).shape
        torch.Size([1, 2])
    """

    def __init__(
        self,
        env_id: str = "CartPole-v1",
        num_envs: int = 16,
        num_steps: int = 32,
        total_timesteps: int = 100_000,
        lr: float = 2.5e-4,
        gamma: float = 0.99,
        q_lambda: float = 0.65,
        num_epochs: int = 2,
        num_minibatches: int = 4,
        max_grad_norm: float = 10.0,
        start_e: float = 1.0,
        end_e: float = 0.05,
        exploration_fraction: float = 0.2,
        hidden: int = 128,
        depth: int = 2,
        layer_norm: bool = True,
        encoder: Literal["mlp", "nature-cnn"] = "mlp",
        sigreg_lambda: float = 0.0,
        sigreg_preset: str = "isogaussian-drl",
        lambda_convention: Literal["additive", "convex"] = "additive",
        ns_period: int | None = None,
        ns_kinds: tuple[str, ...] = ("permute", "sign"),
        seed: int = 0,
    ) -> None:
        super().__init__()
        if sigreg_lambda < 0:
            raise ValueError(f"sigreg_lambda must be >= 0, got {sigreg_lambda}")
        self.save_hyperparameters()
        self.automatic_optimization = False
        self.env = build_env(env_id, num_envs, period=ns_period, kinds=ns_kinds, seed=seed)
        if not isinstance(self.env.single_action_space, gym.spaces.Discrete):
            raise ValueError(
                f"PQN needs a discrete action space; {env_id!r} has {self.env.single_action_space}"
            )
        self.obs_dim = self.env.obs_dim
        self.n_actions = int(self.env.single_action_space.n)
        self.q = QNetwork(
            self.obs_dim,
            self.n_actions,
            hidden,
            depth,
            layer_norm,
            encoder=encoder,
            obs_shape=self.env.raw_obs_shape,
        )
        self.reg = SIGReg(sigreg_preset) if sigreg_lambda > 0 else None
        self.rng = np.random.default_rng(seed)
        self._obs = None
        self.env_steps = 0
        self.reg_time = 0.0
        self.update_time = 0.0
        self.last_features: torch.Tensor | None = None

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.q(obs)

    def epsilon(self) -> float:
        total = self.hparams.exploration_fraction * self.hparams.total_timesteps
        frac = min(self.env_steps / max(total, 1.0), 1.0)
        return self.hparams.start_e + frac * (self.hparams.end_e - self.hparams.start_e)

    @torch.no_grad()
    def collect(self) -> dict[str, torch.Tensor]:
        """One vectorised rollout with epsilon-greedy actions."""
        hp = self.hparams
        if self._obs is None:
            self._obs, _ = self.env.reset(seed=hp.seed)
        s, e = hp.num_steps, hp.num_envs
        obs = torch.zeros(s, e, self.obs_dim)
        actions = torch.zeros(s, e, dtype=torch.long)
        rewards = torch.zeros(s, e)
        dones = torch.zeros(s, e)
        next_values = torch.zeros(s, e)
        for t in range(s):
            o = torch.as_tensor(self._obs, dtype=torch.float32)
            obs[t] = o
            greedy = self.q(o.to(self.device)).argmax(-1).cpu().numpy()
            explore = self.rng.random(e) < self.epsilon()
            a = np.where(explore, self.rng.integers(0, self.n_actions, e), greedy)
            self._obs, r, term, trunc, _ = self.env.step(a)
            self.env_steps += e
            actions[t] = torch.as_tensor(a)
            rewards[t] = torch.as_tensor(r)
            dones[t] = torch.as_tensor(np.logical_or(term, trunc), dtype=torch.float32)
            # same-step autoreset: the returned obs after a done is a reset obs, and its value
            # is masked by (1 - done) in the targets, so it can stand in for s_{t+1}
            next_values[t] = (
                self.q(torch.as_tensor(self._obs, dtype=torch.float32).to(self.device))
                .max(-1)
                .values.cpu()
            )
        return {
            "obs": obs,
            "actions": actions,
            "rewards": rewards,
            "dones": dones,
            "next_values": next_values,
        }

    def training_step(self, batch, batch_idx):
        hp = self.hparams
        roll = self.collect()
        returns = q_lambda_returns(
            roll["rewards"], roll["dones"], roll["next_values"], hp.gamma, hp.q_lambda
        )
        obs = roll["obs"].reshape(-1, self.obs_dim).to(self.device)
        actions = roll["actions"].reshape(-1).to(self.device)
        returns = returns.reshape(-1).to(self.device)
        opt = self.optimizers()
        n = obs.shape[0]
        mb = max(n // hp.num_minibatches, 2)
        t_start = time.perf_counter()
        for _ in range(hp.num_epochs):
            perm = torch.randperm(n, device=self.device)
            for k in range(hp.num_minibatches):
                idx = perm[k * mb : (k + 1) * mb]
                phi = self.q.features(obs[idx])
                qsa = (
                    self.q.head(self.q.trunk.head_input(phi))
                    .gather(1, actions[idx, None])
                    .squeeze(1)
                )
                td = 0.5 * F.mse_loss(qsa, returns[idx])
                loss = td
                if self.reg is not None:
                    t0 = time.perf_counter()
                    reg = self.reg(phi)
                    loss = combine_losses(td, reg, hp.sigreg_lambda, hp.lambda_convention)
                    self.reg_time += time.perf_counter() - t0
                opt.zero_grad()
                self.manual_backward(loss)
                self.clip_gradients(
                    opt, gradient_clip_val=hp.max_grad_norm, gradient_clip_algorithm="norm"
                )
                opt.step()
        self.update_time += time.perf_counter() - t_start
        self.last_features = obs[-256:].detach()
        self.log("train/td_loss", td.detach(), prog_bar=True)
        self.log("train/epsilon", self.epsilon())
        if self.env.episodes:
            self.log("train/episode_return", self.env.episodes[-1][1], prog_bar=True)

    @torch.no_grad()
    def diagnose(self, obs: torch.Tensor | None = None) -> dict[str, float]:
        """Representation diagnostics of the trunk on recent observations."""
        obs = self.last_features if obs is None else obs
        if obs is None:
            raise ValueError("no observations to diagnose yet (train first)")
        with ActivationRecorder(self.q.trunk, [nn.ReLU]) as rec:
            phi = self.q.features(obs.to(self.device))
        acts = dict(rec.outputs)
        acts["head_relu"] = torch.relu(phi)
        return representation_report(phi, acts)

    def configure_optimizers(self):
        return torch.optim.RAdam(self.parameters(), lr=self.hparams.lr)
