"""The PPO-style critic baseline: a value head on the frozen policy, trained by regression.

SVEB's "ppo-1" critic (research notes C1): the action model is frozen and a value head on its
last-layer hidden states is regressed onto the final rewards of labelled responses, at every
response token. :func:`rollout_features` builds that labelled data from ArithChain rollouts of
a policy; :class:`~hista.lightning.CriticModule` is the value head (MSE, sigmoid output in
[0, 1]), :class:`~hista.lightning.ArithCriticDataModule` serves the data and
:func:`~hista.lightning.train_critic` fits it.
"""

from __future__ import annotations

import torch

from .arith_chain import Problem, reward
from .policy import CausalLMPolicy, batch_ids


@torch.no_grad()
def rollout_features(
    policy: CausalLMPolicy, problems: list[Problem], group_size: int, generator: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor, list[tuple[Problem, str, float]]]:
    """Per-token (hidden state, final reward) pairs of ``group_size`` rollouts per problem."""
    feats, targets, rollouts = [], [], []
    for p in problems:
        outs = policy.generate(p.prompt, group_size, generator=generator)
        texts = [p.prompt + o for o in outs]
        ids, lengths = batch_ids(texts, policy)
        hid = policy.hidden(ids)
        start = len(policy.encode(p.prompt))
        for i, o in enumerate(outs):
            r = reward(p, o)
            rollouts.append((p, o, r))
            # states after the prompt and after every response token but the last
            h = hid[i, start - 1 : int(lengths[i]) - 1]
            feats.append(h)
            targets.append(torch.full((h.shape[0],), r))
    return torch.cat(feats), torch.cat(targets), rollouts
