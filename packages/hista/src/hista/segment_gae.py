"""Segment GAE and the group-average (GRPO) baseline.

1. ``segment_gae``: node values ``V_0..V_{m-1}`` at segment starts and the final reward ``R``;
   ``delta_i = V_{i+1} - V_i`` (``delta_{m-1} = R - V_{m-1}``), ``A_i = delta_i + lam * A_{i+1}``,
   broadcast to every token of segment ``i``. With ``lam = 1``: ``A_i = R - V_i``.
2. ``group_advantages``: ``(r - mean(group)) / std(group)`` (``scale="group"``, TRL's
   ``scale_rewards="group"``) or unscaled (``scale="none"``).
"""

from __future__ import annotations

import torch


def segment_gae(
    values: torch.Tensor, boundaries: list[int], length: int, final_reward: float, lam: float = 1.0
) -> torch.Tensor:
    """Per-token advantages (length,) of one response from segment-start values.

    Args:
        values: (m,) value of the state at the start of each segment.
        boundaries: Token index where each segment starts; ``boundaries[0] == 0``, increasing.
        length: Number of response tokens.
        final_reward: Outcome reward ``R`` of the response.
        lam: GAE lambda over segments (gamma = 1).

    Examples
    --------
    >>> [round(a, 3) for a in segment_gae(torch.tensor([0.5, 0.8]), [0, 2], 4, 1.0).tolist()]
    [0.5, 0.5, 0.2, 0.2]
    """
    values = torch.as_tensor(values, dtype=torch.float32)
    if values.ndim != 1 or len(values) != len(boundaries):
        raise ValueError(f"{len(values)} values for {len(boundaries)} segment boundaries")
    if (
        not boundaries
        or boundaries[0] != 0
        or any(b <= a for a, b in zip(boundaries, boundaries[1:], strict=False))
    ):
        raise ValueError(f"boundaries must start at 0 and increase, got {boundaries}")
    if boundaries[-1] >= length:
        raise ValueError(f"boundary {boundaries[-1]} is not inside a response of {length} tokens")
    nxt = torch.cat([values[1:], torch.tensor([float(final_reward)])])
    delta = nxt - values
    adv = torch.zeros_like(values)
    running = 0.0
    for i in range(len(values) - 1, -1, -1):
        running = delta[i] + lam * running
        adv[i] = running
    ends = [*boundaries[1:], length]
    return torch.cat(
        [adv[i].repeat(e - b) for i, (b, e) in enumerate(zip(boundaries, ends, strict=True))]
    )


def group_advantages(
    rewards: torch.Tensor, scale: str = "group", eps: float = 1e-4
) -> torch.Tensor:
    """GRPO advantages of a (n_groups, G) reward matrix.

    Examples
    --------
    >>> group_advantages(torch.tensor([[1.0, 0.0, 0.0, 1.0]]), scale="none").tolist()
    [[0.5, -0.5, -0.5, 0.5]]
    """
    rewards = torch.as_tensor(rewards, dtype=torch.float32)
    if rewards.ndim != 2 or rewards.shape[1] < 2:
        raise ValueError(
            f"need rewards of shape (n_groups, G) with G >= 2, got {tuple(rewards.shape)}"
        )
    centred = rewards - rewards.mean(1, keepdim=True)
    if scale == "none":
        return centred
    if scale == "group":
        return centred / (rewards.std(1, keepdim=True) + eps)
    raise ValueError(f"unknown scale {scale!r}; use 'group' or 'none'")
