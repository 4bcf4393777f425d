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
   ReLU and Linear), gradient clipping, RAdam -> :class:`sigreg.lightning.PQNModule`.
"""

from __future__ import annotations

import torch
from torch import nn

from sigreg.encoder import make_trunk


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
