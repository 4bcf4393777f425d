"""The state-value estimators compared on SVEB, behind one interface ``predict(case) -> V``.

1. ``GroupMean``: the GRPO baseline, the mean pool reward (the same for every state).
2. ``VineMC``: VinePPO-style Monte Carlo, the mean of ``K`` extra continuations of the prefix.
3. ``NumcaEstimator``: a ``NumcaTable`` filled with the pool, read at the prefix's number set
   (``prior`` / ``unseen``: the shrinkage toward the parent state and the value of an unseen
   state of :meth:`~hista.numca.NumcaTable.path_values`; ``prior=0, unseen="table"`` is the
   reference: the plain mean, 0 for an unseen state).
4. ``HistaValue``: ``HistaEstimator`` over the pool's hidden-state nodes (``include_self``
   adds the source rollout's own prefixes, the reference code's behaviour).
5. ``CriticValue``: a trained ``CriticModule`` on the encoder's state after the prefix.
6. ``Oracle``: the exact value (teacher sampler only).

``Encoder`` caches the policy's last-layer hidden states of prompt + text.
``InformativeEncoder`` appends one planted coordinate to them: ``scale`` once a written
partial sum of an ArithChain response is wrong (the information a value needs on this task,
which the tiny policy's states barely carry); it tests whether Hista's k-NN works when the
states are informative.
"""

from __future__ import annotations

import numpy as np
import torch

from .hista_knn import HistaEstimator
from .lightning import CriticModule
from .numca import NumcaTable, extract_numbers
from .policy import CausalLMPolicy, batch_ids
from .sveb import SvebCase

#: The planted coordinate of ``InformativeEncoder`` in ``hista reproduce`` (about the norm of the
#: policy's hidden states, so a wrong partial sum moves a state as far as a different context).
INFORMATIVE_SCALE = 10.0


class Encoder:
    """Hidden states (T, H) of ``prompt + text`` under a frozen policy, cached."""

    def __init__(self, policy: CausalLMPolicy):
        self.policy = policy
        self._cache: dict[str, torch.Tensor] = {}

    @torch.no_grad()
    def states(self, texts: list[str]) -> list[torch.Tensor]:
        todo = [t for t in dict.fromkeys(texts) if t not in self._cache]
        if todo:
            ids, lengths = batch_ids(todo, self.policy)
            hid = self.policy.hidden(ids)
            for i, t in enumerate(todo):
                self._cache[t] = hid[i, : int(lengths[i])]
        return [self._cache[t] for t in texts]


class InformativeEncoder:
    """Policy hidden states plus a planted coordinate: ``scale`` after a wrong partial sum.

    For ``prompt + response`` of ArithChain, position ``t`` gets ``scale`` in the extra column
    once a *complete* number (followed by a space or ``;``) in ``text[: t + 1]`` differs from
    the true running sum, else 0. (T, H) -> (T, H + 1).

    Examples
    --------
    >>> class Zeros:
    ...     def states(self, texts):
    ...         return [torch.zeros(len(t), 2) for t in texts]
    >>> enc = InformativeEncoder(Zeros(), scale=5.0)
    >>> enc.states(["3+4+5=7 13 "])[0][:, -1].tolist()
    [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 5.0]
    """

    def __init__(self, encoder, scale: float = 10.0):
        self.encoder, self.scale = encoder, float(scale)

    @staticmethod
    def wrong_flags(text: str) -> list[float]:
        """0/1 per character: has a complete written partial sum been wrong so far?"""
        if "=" not in text:
            raise ValueError(f"{text!r} is not an ArithChain prompt + response (no '=')")
        cut = text.index("=") + 1
        terms = [int(x) for x in text[: cut - 1].split("+")]
        truth = [sum(terms[: i + 2]) for i in range(len(terms) - 1)]
        flags, wrong, k, num = [], False, 0, ""
        for t, ch in enumerate(text):
            if t >= cut:
                if ch.isdigit():
                    num += ch
                elif num:
                    wrong |= k >= len(truth) or int(num) != truth[k]
                    k, num = k + 1, ""
            flags.append(float(wrong))
        return flags

    def states(self, texts: list[str]) -> list[torch.Tensor]:
        out = []
        for text, h in zip(texts, self.encoder.states(texts), strict=True):
            flag = torch.tensor(self.wrong_flags(text), dtype=h.dtype)[:, None] * self.scale
            out.append(torch.cat([h, flag], 1))
        return out


class GroupMean:
    name = "group mean (GRPO)"

    def predict(self, case: SvebCase) -> float:
        return float(np.mean(case.pool_rewards))


class VineMC:
    def __init__(self, k: int):
        self.k = k
        self.name = f"VinePPO MC K={k}"

    def predict(self, case: SvebCase) -> float:
        if len(case.vine_rewards) < self.k:
            raise ValueError(f"case has {len(case.vine_rewards)} vine rollouts, need {self.k}")
        return float(np.mean(case.vine_rewards[: self.k]))


class NumcaEstimator:
    """Numca's value of an SVEB state from a table of the pool rollouts.

    Parameters
    ----------
    prior: pseudo-visits shrinking a state's mean toward its parent's value (0: reference).
    unseen: ``"table"`` (0, the reference), ``"parent"`` or ``"fallback"`` (the group mean).
    name: row label.

    Reference: Chen et al., "Hista and Numca", ICML 2026 (arXiv 2605.29782), Numca.

    Examples
    --------
    >>> from hista.sveb import SvebCase
    >>> case = SvebCase(0, (1, 2), ["3 5;", "4 6;"], [1.0, 0.0], "3 5;", 1.0, "3 ", [1.0], [])
    >>> NumcaEstimator().predict(case), NumcaEstimator(prior=1.0).predict(case)
    (1.0, 0.75)
    """

    def __init__(self, prior: float = 0.0, unseen: str = "table", name: str | None = None):
        self.prior, self.unseen = float(prior), unseen
        self.name = name or (
            "Numca"
            if prior == 0 and unseen == "table"
            else f"Numca (prior {prior:g}, unseen: {unseen})"
        )

    def predict(self, case: SvebCase) -> float:
        table = NumcaTable()
        pid = str(case.problem_id)
        for resp, r in zip(case.pool, case.pool_rewards, strict=True):
            table.update(pid, [n for n, _ in extract_numbers(resp)], r)
        seen: list[str] = []
        states = []
        for n, _ in extract_numbers(case.prefix, drop_last=False):
            if str(int(n)) not in seen:
                seen.append(str(int(n)))
                states.append(list(seen))
        group = float(np.mean(case.pool_rewards))
        return table.path_values(pid, states, group, self.unseen, self.prior)[-1]


class HistaValue:
    """Hista's value of an SVEB state: :class:`~hista.hista_knn.HistaEstimator` over the pool.

    Parameters
    ----------
    encoder: hidden states of ``prompt + text`` (``Encoder`` or ``InformativeEncoder``).
    estimator: the k-NN estimator (its options: distance, ``k``, EMA rate, length window,
    one node per rollout, group-mean weight). name: row label.
    cache: optional dict shared between ``HistaValue`` objects of the same encoder: response
    embeddings keyed by text and EMA settings (a validation grid embeds each text once per
    ``alpha``).

    Reference: Chen et al., "Hista and Numca", ICML 2026 (arXiv 2605.29782), Hista (SVEB).
    """

    def __init__(
        self,
        encoder: Encoder,
        estimator: HistaEstimator,
        name: str | None = None,
        cache: dict | None = None,
    ):
        self.encoder, self.est = encoder, estimator
        self.cache = {} if cache is None else cache
        self.name = name or (
            "Hista" + (" (include_self, reference)" if estimator.include_self else "")
        )

    def _embed(self, texts: list[str], start: int) -> list[torch.Tensor]:
        e = self.est
        key = (e.alpha, e.ema_init, e.mean_window, start, e.prompt_in_prefix)
        todo = [t for t in dict.fromkeys(texts) if (t, key) not in self.cache]
        for t, h in zip(todo, self.encoder.states(todo), strict=True):
            self.cache[(t, key)] = e.embed(h, start)
        return [self.cache[(t, key)] for t in texts]

    def predict(self, case: SvebCase) -> float:
        prompt = case.problem.prompt
        texts = [prompt + r for r in case.pool] + [prompt + case.prefix, prompt + case.source]
        embs = self._embed(texts, len(prompt))
        return self.est.estimate(
            embs[-2], embs[: len(case.pool)], torch.tensor(case.pool_rewards), embs[-1],
            case.source_reward, prompt_units=self.est.prompt_units(len(prompt)),
        )  # fmt: skip


class CriticValue:
    name = "PPO critic (value head)"

    def __init__(self, encoder: Encoder, critic: CriticModule):
        self.encoder, self.critic = encoder, critic

    @torch.no_grad()
    def predict(self, case: SvebCase) -> float:
        h = self.encoder.states([case.problem.prompt + case.prefix])[0]
        return float(self.critic(h[-1][None])[0])


class Oracle:
    name = "oracle (exact value)"

    def predict(self, case: SvebCase) -> float:
        if case.exact is None:
            raise ValueError("the oracle needs cases with exact values (teacher sampler)")
        return float(case.exact)
