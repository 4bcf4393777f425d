"""PPO (CleanRL style) with a shared trunk and SIGReg on the trunk's hidden state.

1. vectorised rollout of ``num_envs x num_steps`` with the current policy;
2. GAE(lambda) advantages ``A_t = sum_l (gamma lambda)^l delta_{t+l}``,
   ``delta_t = r_t + gamma (1 - d_t) V(s_{t+1}) - V(s_t)`` -> :func:`gae`;
3. ``update_epochs x num_minibatches`` steps on the clipped surrogate
   ``-min(rho A, clip(rho, 1 +- eps) A) + c_v (V - R)^2 - c_e H`` plus
   ``lambda_sigreg * SIGReg(h)`` on the shared-trunk hidden state; learning rate annealed
   linearly, gradient norm clipped -> :class:`PPOModule`.
"""

from __future__ import annotations

import time
from typing import Literal

import gymnasium as gym
import lightning.pytorch as pl
import numpy as np
import torch
from torch import nn
from torch.distributions import Categorical

from sigreg.encoder import make_trunk
from sigreg.nonstationary_env import build_env
from sigreg.plasticity_metrics import ActivationRecorder, representation_report
from sigreg.sigreg_loss import SIGReg, combine_losses


def gae(
    rewards: torch.Tensor,
    values: torch.Tensor,
    dones: torch.Tensor,
    next_values: torch.Tensor,
    gamma: float,
    lam: float,
) -> tuple[torch.Tensor, torch.Tensor]:
    """GAE advantages and returns ``(S, E)``; ``next_values[t] = V(s_{t+1})``.

    >>> r = torch.ones(2, 1); z = torch.zeros(2, 1)
    >>> adv, ret = gae(r, z, z, z, 0.9, 1.0); [round(a, 4) for a in adv.flatten().tolist()]
    [1.9, 1.0]
    """
    adv = torch.zeros_like(rewards)
    last = torch.zeros_like(rewards[0])
    for t in range(rewards.shape[0] - 1, -1, -1):
        nonterminal = 1.0 - dones[t]
        delta = rewards[t] + gamma * nonterminal * next_values[t] - values[t]
        last = delta + gamma * lam * nonterminal * last
        adv[t] = last
    return adv, adv + values


class ActorCritic(nn.Module):
    """Shared ReLU trunk with linear policy and value heads.

    Examples:
        >>> ac = ActorCritic(4, 2, hidden=8); logits, v = ac(torch.zeros(3, 4)); logits.shape, v.shape
        (torch.Size([3, 2]), torch.Size([3]))
    """

    def __init__(
        self,
        obs_dim: int,
        n_actions: int,
        hidden: int = 64,
        depth: int = 2,
        encoder: str = "mlp",
        obs_shape: tuple[int, ...] | None = None,
    ):
        super().__init__()
        self.trunk = make_trunk(
            encoder, obs_shape or (obs_dim,), hidden, depth, False, feature_point="post-relu"
        )
        self.policy = nn.Linear(hidden, n_actions)
        self.value = nn.Linear(hidden, 1)

    def forward(self, obs: torch.Tensor):
        h = self.trunk(obs)
        return self.policy(h), self.value(h).squeeze(-1)


class PPOModule(pl.LightningModule):
    """PPO agent (manual optimisation; one ``training_step`` = one rollout + its updates).

    Args:
        env_id: Gymnasium id with a discrete action space.
        num_envs, num_steps, iterations: Rollout size and number of rollouts (for the lr
            annealing).
        lr, gamma, gae_lambda, clip_coef, ent_coef, vf_coef, max_grad_norm,
        update_epochs, num_minibatches: PPO settings (CleanRL classic-control defaults).
        hidden, depth: Shared trunk.
        encoder: ``mlp`` or ``nature-cnn`` (Atari; use ``hidden=512``).
        sigreg_lambda, sigreg_preset, lambda_convention: The regulariser.
        ns_period, ns_kinds: Non-stationarity.
        seed: Environment seed.

    Examples:
        >>> agent = PPOModule(num_envs=2, num_steps=4, hidden=8)
        >>> logits, value = agent(torch.zeros(1, 4)); logits.shape
        torch.Size([1, 2])
    """

    def __init__(
        self,
        env_id: str = "CartPole-v1",
        num_envs: int = 4,
        num_steps: int = 128,
        iterations: int = 100,
        lr: float = 2.5e-4,
        gamma: float = 0.99,
        gae_lambda: float = 0.95,
        clip_coef: float = 0.2,
        ent_coef: float = 0.01,
        vf_coef: float = 0.5,
        max_grad_norm: float = 0.5,
        update_epochs: int = 4,
        num_minibatches: int = 4,
        hidden: int = 64,
        depth: int = 2,
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
                f"this PPO needs a discrete action space; {env_id!r} has {self.env.single_action_space}"
            )
        self.obs_dim = self.env.obs_dim
        self.agent = ActorCritic(
            self.obs_dim,
            int(self.env.single_action_space.n),
            hidden,
            depth,
            encoder=encoder,
            obs_shape=self.env.raw_obs_shape,
        )
        self.reg = SIGReg(sigreg_preset) if sigreg_lambda > 0 else None
        self._obs = None
        self.env_steps = 0
        self.reg_time = 0.0
        self.update_time = 0.0
        self.last_features: torch.Tensor | None = None

    def forward(self, obs: torch.Tensor):
        return self.agent(obs)

    @torch.no_grad()
    def diagnose(self, obs: torch.Tensor | None = None) -> dict[str, float]:
        """Representation diagnostics (dormancy, srank, isotropy) of the shared trunk."""
        obs = self.last_features if obs is None else obs
        if obs is None:
            raise ValueError("no observations to diagnose yet (train first)")
        with ActivationRecorder(self.agent.trunk, [nn.ReLU]) as rec:
            phi = self.agent.trunk(obs.to(self.device))
        return representation_report(phi, dict(rec.outputs))

    @torch.no_grad()
    def collect(self) -> dict[str, torch.Tensor]:
        hp = self.hparams
        if self._obs is None:
            self._obs, _ = self.env.reset(seed=hp.seed)
        s, e = hp.num_steps, hp.num_envs
        buf = {k: torch.zeros(s, e) for k in ("rewards", "dones", "values", "next_values", "logp")}
        buf["obs"] = torch.zeros(s, e, self.obs_dim)
        buf["actions"] = torch.zeros(s, e, dtype=torch.long)
        for t in range(s):
            o = torch.as_tensor(self._obs, dtype=torch.float32)
            logits, v = self.agent(o.to(self.device))
            dist = Categorical(logits=logits)
            a = dist.sample()
            self._obs, r, term, trunc, _ = self.env.step(a.cpu().numpy())
            self.env_steps += e
            buf["obs"][t] = o
            buf["actions"][t] = a.cpu()
            buf["logp"][t] = dist.log_prob(a).cpu()
            buf["values"][t] = v.cpu()
            buf["rewards"][t] = torch.as_tensor(r)
            buf["dones"][t] = torch.as_tensor(np.logical_or(term, trunc), dtype=torch.float32)
            buf["next_values"][t] = self.agent(
                torch.as_tensor(self._obs, dtype=torch.float32).to(self.device)
            )[1].cpu()
        return buf

    def training_step(self, batch, batch_idx):
        hp = self.hparams
        opt = self.optimizers()
        frac = 1.0 - batch_idx / max(hp.iterations, 1)  # linear lr annealing
        for group in opt.param_groups:
            group["lr"] = max(frac, 0.0) * hp.lr
        roll = self.collect()
        adv, ret = gae(
            roll["rewards"],
            roll["values"],
            roll["dones"],
            roll["next_values"],
            hp.gamma,
            hp.gae_lambda,
        )
        flat = {k: v.reshape(-1, *v.shape[2:]).to(self.device) for k, v in roll.items()}
        adv, ret = adv.reshape(-1).to(self.device), ret.reshape(-1).to(self.device)
        self.last_features = flat["obs"][-256:].detach()
        n = adv.shape[0]
        mb = max(n // hp.num_minibatches, 2)
        t_start = time.perf_counter()
        for _ in range(hp.update_epochs):
            perm = torch.randperm(n, device=self.device)
            for k in range(hp.num_minibatches):
                idx = perm[k * mb : (k + 1) * mb]
                h = self.agent.trunk(flat["obs"][idx])
                logits, v = self.agent.policy(h), self.agent.value(h).squeeze(-1)
                dist = Categorical(logits=logits)
                logp = dist.log_prob(flat["actions"][idx])
                ratio = (logp - flat["logp"][idx]).exp()
                a = adv[idx]
                a = (a - a.mean()) / (a.std() + 1e-8)
                pg = torch.max(
                    -a * ratio, -a * ratio.clamp(1 - hp.clip_coef, 1 + hp.clip_coef)
                ).mean()
                vloss = 0.5 * ((v - ret[idx]) ** 2).mean()
                loss = pg - hp.ent_coef * dist.entropy().mean() + hp.vf_coef * vloss
                if self.reg is not None:
                    t0 = time.perf_counter()
                    loss = combine_losses(loss, self.reg(h), hp.sigreg_lambda, hp.lambda_convention)
                    self.reg_time += time.perf_counter() - t0
                opt.zero_grad()
                self.manual_backward(loss)
                self.clip_gradients(
                    opt, gradient_clip_val=hp.max_grad_norm, gradient_clip_algorithm="norm"
                )
                opt.step()
        self.update_time += time.perf_counter() - t_start
        self.log("train/loss", loss.detach(), prog_bar=True)
        if self.env.episodes:
            self.log("train/episode_return", self.env.episodes[-1][1], prog_bar=True)

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=self.hparams.lr, eps=1e-5)
