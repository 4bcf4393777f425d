"""Token-level advantages for a group of rollouts: one interface for every estimator.

This is the drop-in piece the paper plugs into GRPO-style trainers: given the G rollouts of one
prompt (their response text, the character span of every response token, outcome rewards and,
for Hista, the policy's hidden states), return one advantage per response token.

1. ``RolloutGroup``: the inputs, validated (``G >= 2``, equal lengths, rewards in [0, 1]).
2. ``token_offsets``: character spans of a text's tokens; needs a *fast* tokenizer (offsets
   map Numca's number spans to token milestones).
3. ``GroupMeanAdvantages``: ``A = (R - mean) / std`` on every token (GRPO).
4. ``NumcaAdvantages``: segment GAE over number milestones with a persistent ``NumcaTable``;
   the table is updated *after* the advantages are computed, so no rollout reads its own reward.
   A response without any number has only the root segment: its advantage falls back to
   ``R - V(root)`` (the group mean on a problem's first visit).
5. ``HistaAdvantages``: node values ``[group mean, V_1..V_{m-1}]`` from inverse-distance k-NN over
   the *other* rollouts' hidden-state prefixes, then segment GAE (``A_i = R - V_i`` at λ = 1).

All divide by the group reward std (``scale_rewards="group"``); a group with equal rewards gets
zero advantages (the recipe's dynamic sampling drops it).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .hista_knn import HistaEstimator
from .numca import NumcaTable, extract_numbers
from .rl_training import token_advantages, token_offsets  # noqa: F401 (re-export)


@dataclass
class RolloutGroup:
    """The G rollouts of one prompt.

    ``offsets[i]``: character span of each response token of rollout i. ``hidden[i]``: optional
    (T_i, H) last-layer hidden states of prompt + response, with the response starting at
    ``response_starts[i]`` (Hista only).

    Examples
    --------
    >>> g = RolloutGroup("p", ["7 9;", "8;"], [1.0, 0.0], [[(0, 1), (1, 2)], [(0, 1)]])
    >>> g.size, g.lengths
    (2, [2, 1])
    """

    problem_id: str
    responses: list[str]
    rewards: list[float]
    offsets: list[list[tuple[int, int]]]
    hidden: list[torch.Tensor] | None = None
    response_starts: list[int] | None = None

    def __post_init__(self) -> None:
        n = len(self.responses)
        if n == 0:
            raise ValueError("empty group: no rollouts")
        if n < 2:
            raise ValueError("group size 1: a group-relative advantage needs >= 2 rollouts")
        if len(self.rewards) != n or len(self.offsets) != n:
            raise ValueError(
                f"mismatched lengths: {n} rollouts, {len(self.rewards)} rewards, "
                f"{len(self.offsets)} offset lists"
            )
        if self.hidden is not None and (
            len(self.hidden) != n or self.response_starts is None or len(self.response_starts) != n
        ):
            raise ValueError(
                f"mismatched lengths: {n} rollouts but {len(self.hidden)} hidden-state tensors "
                f"and {None if self.response_starts is None else len(self.response_starts)} "
                "response starts"
            )
        bad = [r for r in self.rewards if not 0.0 <= float(r) <= 1.0]
        if bad:
            raise ValueError(f"rewards must lie in [0, 1] (verifier outcomes), got {bad[0]}")
        if any(len(o) == 0 for o in self.offsets):
            raise ValueError("a rollout has no response tokens")

    @property
    def size(self) -> int:
        return len(self.responses)

    @property
    def lengths(self) -> list[int]:
        return [len(o) for o in self.offsets]


class GroupMeanAdvantages:
    """GRPO: ``(R - mean) / std`` on every token.

    Examples
    --------
    >>> g = RolloutGroup("p", ["1;", "2;"], [1.0, 0.0], [[(0, 1), (1, 2)], [(0, 1)]])
    >>> [a.tolist() for a in GroupMeanAdvantages()(g)]  # doctest: +ELLIPSIS
    [[0.70..., 0.70...], [-0.70...]]
    """

    name = "group"

    def __call__(self, group: RolloutGroup) -> list[torch.Tensor]:
        return token_advantages(
            "group", group.problem_id, group.responses, group.rewards, group.lengths
        )


class NumcaAdvantages:
    """Numca: milestones at new numbers, values from a persistent table (updated after use).

    Examples
    --------
    >>> prov = NumcaAdvantages(merge_threshold=1)
    >>> g = RolloutGroup("p", ["7 9;", "8 9;"], [1.0, 0.0], [[(i, i + 1) for i in range(4)]] * 2)
    >>> len(prov(g)[0]), prov.table.value("p", ["7"])
    (4, 1.0)
    """

    name = "numca"

    def __init__(
        self, table: NumcaTable | None = None, merge_threshold: int = 50, lam: float = 1.0
    ):
        self.table = table if table is not None else NumcaTable()
        self.merge_threshold, self.lam = int(merge_threshold), float(lam)

    def __call__(self, group: RolloutGroup) -> list[torch.Tensor]:
        rewards = [float(r) for r in group.rewards]
        std = float(torch.tensor(rewards).std())
        if std == 0.0:
            adv = [torch.zeros(n) for n in group.lengths]
        else:
            mean = sum(rewards) / len(rewards)
            adv = [
                self.table.segment_advantages(
                    group.problem_id,
                    resp,
                    offs,
                    r,
                    self.merge_threshold,
                    self.lam,
                    root_fallback=mean,
                )
                / (std + 1e-4)
                for resp, offs, r in zip(group.responses, group.offsets, rewards, strict=True)
            ]
        for resp, r in zip(group.responses, rewards, strict=True):
            self.table.update(group.problem_id, [n for n, _ in extract_numbers(resp)], r)
        return adv


class HistaAdvantages:
    """Hista: k-NN node values over the other rollouts' hidden-state prefixes.

    Examples
    --------
    >>> est = HistaEstimator(alpha=0.5, mean_window=1, min_interval=1, min_distance=0.1, k=2)
    >>> hid = [torch.randn(5, 4) for _ in range(3)]
    >>> g = RolloutGroup("p", ["a;"] * 3, [1.0, 0.0, 1.0], [[(0, 1), (1, 2)]] * 3, hid, [3] * 3)
    >>> [len(a) for a in HistaAdvantages(est)(g)]
    [2, 2, 2]
    """

    name = "hista"

    def __init__(self, estimator: HistaEstimator | None = None, lam: float = 1.0):
        self.est = estimator if estimator is not None else HistaEstimator()
        if self.est.include_self:
            raise ValueError("HistaAdvantages uses disjoint rollouts; include_self must be False")
        self.lam = float(lam)

    def __call__(self, group: RolloutGroup) -> list[torch.Tensor]:
        if group.hidden is None or group.response_starts is None:
            raise ValueError("hista advantages need the policy's hidden states of every rollout")
        embs = []
        for h, s, n in zip(group.hidden, group.response_starts, group.lengths, strict=True):
            if h.shape[0] - s != n:
                raise ValueError(
                    f"mismatched lengths: {h.shape[0] - s} response hidden states for {n} tokens"
                )
            embs.append(self.est.embed(h.float(), s))
        return token_advantages(
            "hista",
            group.problem_id,
            group.responses,
            group.rewards,
            group.lengths,
            embeddings=embs,
            hista=self.est,
            lam=self.lam,
        )


PROVIDERS = {"group": GroupMeanAdvantages, "numca": NumcaAdvantages, "hista": HistaAdvantages}


def make_provider(name: str, **kwargs):
    """Provider by name (``group``, ``numca``, ``hista``)."""
    if name not in PROVIDERS:
        raise ValueError(f"unknown estimator {name!r}; use one of {sorted(PROVIDERS)}")
    return PROVIDERS[name](**kwargs)
