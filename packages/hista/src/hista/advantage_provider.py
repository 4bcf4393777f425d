"""Token-level advantages for a group of rollouts: one interface for every estimator.

This is the drop-in piece the paper plugs into GRPO-style trainers: given the G rollouts of one
prompt (their response text, the character span of every response token, outcome rewards and,
for Hista, the policy's hidden states), return one advantage per response token.

1. ``RolloutGroup``: the inputs, validated (``G >= 2``, equal lengths, rewards in [0, 1]).
2. ``token_offsets``: character spans of a text's tokens; needs a *fast* tokenizer (offsets
   map Numca's number spans to token milestones).
3. ``GroupMeanAdvantages``: ``A = (R - mean) / std`` on every token (GRPO).
4. ``NumcaAdvantages``: segment GAE over number milestones with a persistent ``NumcaTable``.
   ``update`` says when the group enters the table (``NUMCA_UPDATES``): ``"before"`` the
   advantages, as the authors' trainer does (every state of the group is then seen, and a
   rollout's own reward is part of its values), ``"loo"`` before, but each rollout reads the
   table without its own visit (leave-one-out: no self-reward), ``"after"`` (values only from
   earlier steps). Milestones sit where a number starts (``at="start"``, the reference);
   unseen states and an unseen root are worth the group mean (``unseen="fallback"``).
5. ``HistaAdvantages``: node values ``[group mean, V_1..V_{m-1}]`` from inverse-distance k-NN over
   the *other* rollouts' hidden-state prefixes, then segment GAE (``A_i = R - V_i`` at λ = 1).
6. ``VineAdvantages``: VinePPO-style Monte Carlo: at every Numca milestone, the mean reward of
   ``k`` fresh continuations of the response prefix (``sampler``); root = group mean.
7. ``CriticAdvantages``: the PPO-critic baseline: a value head on the last-layer hidden state
   before every response token, token-level GAE (γ = 1; ``A_t = R - V(s_t)`` at λ = 1).

All divide by the group reward std (``scale_rewards="group"``); a group with equal rewards gets
zero advantages (the recipe's dynamic sampling drops it).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from .hista_knn import HistaEstimator
from .numca import NumcaTable, extract_numbers, milestones
from .segment_gae import segment_gae


def token_offsets(tokenizer, text: str) -> list[tuple[int, int]]:
    """Character span ``(start, end)`` of every token of ``text`` (no special tokens).

    Raises ``ValueError`` for a tokenizer without offsets (a slow, pure-Python tokenizer).
    """
    if not getattr(tokenizer, "is_fast", False):
        raise ValueError(
            f"a fast tokenizer is required (token offsets map numbers to milestones); "
            f"got {type(tokenizer).__name__}"
        )
    enc = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
    return [tuple(map(int, span)) for span in enc["offset_mapping"]]


ADVANTAGES = ("group", "numca", "hista")
#: When a group enters the Numca table: before its advantages (the reference), before with
#: leave-one-out reads, or after.
NUMCA_UPDATES = ("before", "loo", "after")


def _numca_update(table: NumcaTable, problem_id: str, responses, rewards) -> None:
    for resp, r in zip(responses, rewards, strict=True):
        table.update(problem_id, [n for n, _ in extract_numbers(resp)], r)


def _hista_advantages(
    embs: list[torch.Tensor], rewards: list[float], est: HistaEstimator, lam: float
) -> list[torch.Tensor]:
    base = float(np.mean(rewards))
    node_values = est.group_values(embs, rewards)  # one vectorised k-NN pass for the group
    out = []
    for emb, vals, r in zip(embs, node_values, rewards, strict=True):
        length = emb.shape[0]
        nodes = est.query_nodes(length)
        values = [base] + vals.tolist()
        bounds = [0] + [n * est.mean_window for n in nodes]
        keep = [0] + [b for b in range(1, len(bounds)) if bounds[b] > bounds[b - 1]]
        out.append(
            segment_gae(
                torch.tensor(values)[keep],
                [bounds[b] for b in keep],
                length * est.mean_window,
                r,
                lam,
            )
        )
    return out


def token_advantages(
    mode: str,
    problem_id: str,
    responses: list[str],
    rewards: list[float],
    lengths: list[int],
    table: NumcaTable | None = None,
    embeddings: list[torch.Tensor] | None = None,
    hista: HistaEstimator | None = None,
    lam: float = 1.0,
    merge_threshold: int = 2,
    eps: float = 1e-4,
    offsets: list[list[tuple[int, int]]] | None = None,
    scale: bool = True,
    numca_update: str | None = None,
    numca_at: str = "end",
    numca_unseen: str = "table",
    numca_loo: bool = False,
) -> list[torch.Tensor]:
    """Per-token advantages (one tensor of ``lengths[i]`` per rollout), group-std scaled.

    ``offsets[i]``: character span of each response token of rollout ``i`` (default: one token
    per character). ``scale=False`` returns the raw ``R - V`` advantages (no std division and
    no zeroing of equal-reward groups), for diagnostics. Numca: ``numca_update`` (one of
    ``NUMCA_UPDATES``, or ``None``: the caller updates the table) adds the group to ``table``
    before or after the advantages (also for an equal-reward group); ``numca_at`` and
    ``numca_unseen`` (``"fallback"``: the group mean) as in
    :meth:`~hista.numca.NumcaTable.segment_advantages`.
    """
    if mode not in ADVANTAGES:
        raise ValueError(f"unknown advantage estimator {mode!r}; use one of {ADVANTAGES}")
    if numca_update is not None and numca_update not in NUMCA_UPDATES:
        raise ValueError(f"unknown numca_update {numca_update!r}; use one of {NUMCA_UPDATES}")
    if not len(responses) == len(rewards) == len(lengths) or len(responses) < 2:
        raise ValueError(
            f"need >= 2 rollouts with matching rewards and lengths, got "
            f"{len(responses)}, {len(rewards)}, {len(lengths)}"
        )
    if offsets is None:
        offsets = [[(k, k + 1) for k in range(n)] for n in lengths]
    elif len(offsets) != len(lengths) or any(
        len(o) != n for o, n in zip(offsets, lengths, strict=True)
    ):
        raise ValueError("need one (start, end) span per response token of every rollout")
    if mode == "numca" and numca_update is not None:
        if table is None:
            raise ValueError("numca advantages need a NumcaTable")
        if numca_update in ("before", "loo"):
            _numca_update(table, problem_id, responses, rewards)
        out = token_advantages(
            mode, problem_id, responses, rewards, lengths, table, None, None, lam,
            merge_threshold, eps, offsets, scale, None, numca_at, numca_unseen,
            numca_loo=numca_update == "loo",
        )  # fmt: skip
        if numca_update == "after":
            _numca_update(table, problem_id, responses, rewards)
        return out
    std = float(np.std(rewards, ddof=1))
    if scale and std == 0.0:  # dynamic sampling: no learning signal in this group
        return [torch.zeros(n) for n in lengths]
    std = std + eps if scale else 1.0
    if mode == "group":
        mean = float(np.mean(rewards))
        adv = [torch.full((n,), r - mean) for r, n in zip(rewards, lengths, strict=True)]
    elif mode == "numca":
        if table is None:
            raise ValueError("numca advantages need a NumcaTable")
        adv = [
            table.segment_advantages(
                problem_id,
                resp,
                offs,
                r,
                merge_threshold,
                lam,
                root_fallback=float(np.mean(rewards)),
                at=numca_at,
                unseen=numca_unseen,
                exclude_self=numca_loo,
            )
            for resp, offs, r in zip(responses, offsets, rewards, strict=True)
        ]
    else:
        if embeddings is None or hista is None or len(embeddings) != len(responses):
            raise ValueError("hista advantages need one embedding per rollout and an estimator")
        adv = [
            a[:n]
            for a, n in zip(
                _hista_advantages(embeddings, rewards, hista, lam), lengths, strict=True
            )
        ]
    return [a / std for a in adv]


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

    Parameters
    ----------
    table: the persistent table (a fresh one by default). merge_threshold: milestones closer
    than this many tokens merge (50 in the paper). lam: GAE lambda over segments. update:
    ``"before"`` (the reference), ``"loo"`` or ``"after"`` (``NUMCA_UPDATES``). at: milestone
    at a number's ``"start"`` (the reference) or ``"end"``. unseen: ``"fallback"`` (the group
    mean), ``"table"`` (the table's ``unseen_value``, 0) or ``"parent"``.
    """

    name = "numca"

    def __init__(
        self,
        table: NumcaTable | None = None,
        merge_threshold: int = 50,
        lam: float = 1.0,
        update: str = "before",
        at: str = "start",
        unseen: str = "fallback",
    ):
        if update not in NUMCA_UPDATES:
            raise ValueError(f"unknown update {update!r}; use one of {NUMCA_UPDATES}")
        self.table = table if table is not None else NumcaTable()
        self.merge_threshold, self.lam = int(merge_threshold), float(lam)
        self.update, self.at, self.unseen = update, at, unseen

    def __call__(self, group: RolloutGroup) -> list[torch.Tensor]:
        return token_advantages(
            "numca", group.problem_id, group.responses, [float(r) for r in group.rewards],
            group.lengths, self.table, lam=self.lam, merge_threshold=self.merge_threshold,
            offsets=group.offsets, numca_update=self.update, numca_at=self.at,
            numca_unseen=self.unseen,
        )  # fmt: skip


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


def _scaled(group: RolloutGroup, adv: list[torch.Tensor], eps: float = 1e-4) -> list[torch.Tensor]:
    """Divide by the group reward std; an equal-reward group gets zeros (dynamic sampling)."""
    std = float(torch.tensor([float(r) for r in group.rewards]).std())
    if std == 0.0:
        return [torch.zeros(n) for n in group.lengths]
    return [a / (std + eps) for a in adv]


class VineAdvantages:
    """VinePPO-style Monte Carlo values at Numca's milestones.

    ``sampler(problem_id, response_prefix, k)`` returns the rewards of ``k`` fresh
    continuations of ``response_prefix`` (the policy resamples the rest and the verifier
    scores it). Segment ``i`` starts at milestone ``i`` (the token after a new number, merged
    within ``merge_threshold`` tokens) with value ``mean(k rewards)``; the root segment gets
    the group mean. Costs ``k`` extra generations per milestone.

    Examples
    --------
    >>> prov = VineAdvantages(lambda pid, prefix, k: [1.0] * k, k=2, merge_threshold=1)
    >>> g = RolloutGroup("p", ["7 9;", "8 9;"], [1.0, 0.0], [[(i, i + 1) for i in range(4)]] * 2)
    >>> [[round(x, 2) for x in a.tolist()] for a in prov(g)]  # R - V: 0.5 on root, then R - 1
    [[0.71, 0.0, 0.0, 0.0], [-0.71, -1.41, -1.41, -1.41]]
    """

    name = "vine"

    def __init__(
        self,
        sampler: Callable[[str, str, int], list[float]],
        k: int = 4,
        merge_threshold: int = 50,
        lam: float = 1.0,
    ):
        if not callable(sampler):
            raise ValueError("vine advantages need a sampler(problem_id, prefix, k) -> rewards")
        if k < 1:
            raise ValueError(f"k (continuations per milestone) must be >= 1, got {k}")
        self.sampler, self.k = sampler, int(k)
        self.merge_threshold, self.lam = int(merge_threshold), float(lam)

    def __call__(self, group: RolloutGroup) -> list[torch.Tensor]:
        mean = sum(float(r) for r in group.rewards) / group.size
        adv = []
        for resp, offs, r in zip(group.responses, group.offsets, group.rewards, strict=True):
            bounds, values = [0], [mean]
            for pos, _ in milestones(resp, offs, self.merge_threshold):
                rs = [
                    float(x)
                    for x in self.sampler(group.problem_id, resp[: offs[pos - 1][1]], self.k)
                ]
                if len(rs) != self.k or any(not 0.0 <= x <= 1.0 for x in rs):
                    raise ValueError(
                        f"the sampler must return {self.k} rewards in [0, 1], got {rs}"
                    )
                bounds.append(pos)
                values.append(sum(rs) / self.k)
            adv.append(segment_gae(torch.tensor(values), bounds, len(offs), float(r), self.lam))
        return _scaled(group, adv)


class CriticAdvantages:
    """PPO-critic advantages: a value head on the hidden state before every response token.

    ``critic`` maps (N, H) hidden states to (N,) values (e.g. a trained
    :class:`~hista.critic.CriticModule`). The state before response token ``t`` is the hidden
    state at position ``response_start + t - 1``; ``V`` of every token then goes through GAE
    with γ = 1 (``segment_gae`` with one segment per token): ``A_t = R - V(s_t)`` at λ = 1.

    Examples
    --------
    >>> head = lambda h: torch.full((h.shape[0],), 0.25)
    >>> hid = [torch.randn(5, 4) for _ in range(2)]
    >>> g = RolloutGroup("p", ["7;", "8;"], [1.0, 0.0], [[(0, 1), (1, 2)]] * 2, hid, [3, 3])
    >>> [[round(x, 2) for x in a.tolist()] for a in CriticAdvantages(head)(g)]
    [[1.06, 1.06], [-0.35, -0.35]]
    """

    name = "critic"

    def __init__(self, critic: Callable[[torch.Tensor], torch.Tensor], lam: float = 1.0):
        if not callable(critic):
            raise ValueError("critic advantages need a value head: critic(hidden (N, H)) -> (N,)")
        self.critic, self.lam = critic, float(lam)

    @torch.no_grad()
    def __call__(self, group: RolloutGroup) -> list[torch.Tensor]:
        if group.hidden is None or group.response_starts is None:
            raise ValueError("critic advantages need the policy's hidden states of every rollout")
        adv = []
        for h, s, n, r in zip(
            group.hidden, group.response_starts, group.lengths, group.rewards, strict=True
        ):
            if s < 1 or h.shape[0] - s != n:
                raise ValueError(
                    f"mismatched lengths: {h.shape[0] - s} response hidden states for {n} tokens "
                    f"(response start {s} must be >= 1)"
                )
            values = torch.as_tensor(self.critic(h[s - 1 : s - 1 + n].float())).float().cpu()
            if values.shape != (n,):
                raise ValueError(f"the critic returned shape {tuple(values.shape)}, want ({n},)")
            adv.append(segment_gae(values, list(range(n)), n, float(r), self.lam))
        return _scaled(group, adv)


PROVIDERS = {
    "group": GroupMeanAdvantages,
    "numca": NumcaAdvantages,
    "hista": HistaAdvantages,
    "vine": VineAdvantages,
    "critic": CriticAdvantages,
}


def make_provider(name: str, **kwargs):
    """Provider by name (``group``, ``numca``, ``hista``; ``vine`` needs ``sampler=``,
    ``critic`` needs ``critic=``)."""
    if name not in PROVIDERS:
        raise ValueError(f"unknown estimator {name!r}; use one of {sorted(PROVIDERS)}")
    needs = {"vine": "sampler", "critic": "critic"}.get(name)
    if needs and needs not in kwargs:
        raise ValueError(f"the {name} estimator needs {needs}=...")
    return PROVIDERS[name](**kwargs)
