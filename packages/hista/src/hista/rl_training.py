"""RL post-training with per-token advantages from group mean, Numca or Hista.

1. ``token_advantages``: per-token advantages of a group of rollouts.
   ``group``: ``R - mean(group)`` on every token (GRPO). ``numca``: segment GAE over number
   milestones with a persistent ``NumcaTable`` (updated after the step, so a rollout never
   sees its own reward). ``hista``: node values ``[group mean, V_1..V_{m-1}]`` from the
   *other* rollouts of the group (``include_self=False``), then segment GAE with ``lam``.
   All are divided by the group reward std (``scale_rewards="group"``); a group whose rewards
   are all equal gets zero advantages (the recipe's dynamic sampling drops such groups;
   without this, Numca's ``R - V`` would be divided by ~0). Numca's unseen root (first visit
   of a problem) falls back to the current group mean.
2. ``policy_loss``: token-level surrogate for ``loss_type``: ``grpo`` (PPO clip, mean per
   sequence then over sequences), ``dapo`` (clip with ``eps_high``, mean over all tokens),
   ``dr_grpo`` (sum over tokens / (batch * max_len)), ``cispo`` (clipped, stop-gradient IS
   weight times ``log pi`` times the advantage).
3. :class:`~hista.lightning.PolicyRLModule`: a LightningModule doing ``num_iterations``
   updates per rollout batch (manual optimisation) on batches of
   :class:`~hista.lightning.ArithProblemsDataModule`; validation is held-out accuracy
   (:func:`held_out_accuracy`); :func:`~hista.lightning.train_rl` runs it on CPU for a fixed
   number of rollout steps. Besides the three modes above it takes ``vine`` (VinePPO Monte
   Carlo) and ``critic`` (a PPO value head trained online) through ``hista.advantage_provider``.

``token_advantages`` and ``token_offsets`` live in :mod:`hista.advantage_provider` (imported
here for the existing callers).
"""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import torch

from .advantage_provider import ADVANTAGES, token_advantages, token_offsets  # noqa: F401
from .arith_chain import Problem, reward
from .policy import CausalLMPolicy

#: advantage modes of ``PolicyRLModule``: the above plus the providers ``vine`` and ``critic``
RL_ADVANTAGES = (*ADVANTAGES, "vine", "critic")
LOSSES = ("grpo", "dapo", "dr_grpo", "cispo")


def policy_loss(
    logp: torch.Tensor,
    old_logp: torch.Tensor,
    adv: torch.Tensor,
    mask: torch.Tensor,
    loss_type: str = "dapo",
    eps_low: float = 0.2,
    eps_high: float = 0.28,
) -> torch.Tensor:
    """Token-level policy loss on (B, T) log-probs, advantages and response mask."""
    if loss_type not in LOSSES:
        raise ValueError(f"unknown loss type {loss_type!r}; use one of {LOSSES}")
    ratio = torch.exp(logp - old_logp)
    if loss_type == "cispo":
        w = ratio.clamp(max=1 + eps_high).detach()
        per_tok = -w * adv * logp
    else:
        high = eps_low if loss_type == "grpo" else eps_high
        per_tok = -torch.minimum(ratio * adv, ratio.clamp(1 - eps_low, 1 + high) * adv)
    per_tok = per_tok * mask
    if loss_type == "grpo":
        return (per_tok.sum(1) / mask.sum(1).clamp(min=1)).mean()
    if loss_type == "dr_grpo":
        return per_tok.sum() / mask.numel()
    return per_tok.sum() / mask.sum().clamp(min=1)


def load_policy_weights(policy: CausalLMPolicy, checkpoint: str) -> None:
    """Load ``policy.*`` weights from a Lightning checkpoint (``SFTModule`` / ``PolicyRLModule``)."""
    path = Path(checkpoint)
    if not path.is_file():
        raise ValueError(f"checkpoint {str(path)!r} does not exist")
    try:
        state = torch.load(path, map_location="cpu", weights_only=False)
    except (pickle.UnpicklingError, RuntimeError, EOFError, OSError) as err:
        detail = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise ValueError(f"cannot read checkpoint {str(path)!r}: {detail}") from None
    state = state.get("state_dict", state)
    own = {k[len("policy.") :]: v for k, v in state.items() if k.startswith("policy.")}
    if not own:
        raise ValueError(f"{str(path)!r} holds no policy weights (keys 'policy.*')")
    policy.load_state_dict(own)


def pad_ids(seqs: list[list[int]], pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Right-padded ids ``(B, T)`` of token-id lists and their lengths ``(B,)``.

    >>> ids, n = pad_ids([[1, 2, 3], [4]], 0)
    >>> ids.tolist(), n.tolist()
    ([[1, 2, 3], [4, 0, 0]], [3, 1])
    """
    length = max(len(s) for s in seqs)
    ids = torch.full((len(seqs), length), pad_id, dtype=torch.long)
    for i, s in enumerate(seqs):
        ids[i, : len(s)] = torch.tensor(s, dtype=torch.long)
    return ids, torch.tensor([len(s) for s in seqs])


@torch.no_grad()
def held_out_accuracy(
    policy: CausalLMPolicy, problems: list[Problem], samples: int = 4, seed: int = 0
) -> float:
    """Mean reward of ``samples`` sampled responses per held-out problem."""
    gen = torch.Generator().manual_seed(seed)
    outs = policy.generate_many([p.prompt for p in problems], samples, generator=gen)
    return float(
        np.mean([reward(p, o) for p, os_ in zip(problems, outs, strict=True) for o in os_])
    )
