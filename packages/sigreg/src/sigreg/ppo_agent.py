"""PPO (CleanRL style) with a shared trunk and SIGReg on the trunk's hidden state.

1. vectorised rollout of ``num_envs x num_steps`` with the current policy;
2. GAE(lambda) advantages ``A_t = sum_l (gamma lambda)^l delta_{t+l}``,
   ``delta_t = r_t + gamma (1 - d_t) V(s_{t+1}) - V(s_t)`` -> :func:`gae`;
3. ``update_epochs x num_minibatches`` steps on the clipped surrogate
   ``-min(rho A, clip(rho, 1 +- eps) A) + c_v (V - R)^2 - c_e H`` plus
   ``lambda_sigreg * SIGReg(h)`` on the shared-trunk hidden state; learning rate annealed
   linearly, gradient norm clipped -> :class:`sigreg.lightning.PPOModule`.
"""

from __future__ import annotations

import torch
from torch import nn

from sigreg.encoder import make_trunk


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
