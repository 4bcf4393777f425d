"""Advantage error against the exact advantage: the mechanism behind better values.

The paper's argument is that a more accurate state value gives a lower-variance advantage and
hence a better policy gradient. On noisy-teacher ArithChain rollouts the exact value of every
prefix is known, so the exact one-step advantage of every segment is known too, and each
estimator's segment advantages can be scored against it directly.

For a rollout with milestone states ``s_0`` (empty response), ``s_1 .. s_{K-1}`` (after each
complete number and its space) and the terminal state ``s_K`` (``V(s_K) = R``):

* estimated segment advantage (segment GAE, λ = 1): ``Â_k = R - V̂(s_k)``;
* exact one-step advantage: ``A*_k = V(s_{k+1}) - V(s_k)``.

``advantage_errors`` returns, pooled over all segments of all rollouts (unscaled, before the
group-std division):

1. ``adv_mse``: ``E[(Â - A*)²]``, the mean squared advantage error. It splits into the return
   noise ``E[(R - V(s_{k+1}))²]`` (the same for every estimator, the ``oracle`` row) plus the
   value error ``E[(V(s_k) - V̂(s_k))²]`` (cross term zero in expectation).
2. ``adv_second_moment``: ``E[Â²]``, the variance of the advantage signal the policy sees.
3. ``value_mae``: ``E|V̂(s_k) - V(s_k)|`` over the same states (every milestone, not SVEB's
   random cuts).

Value estimators, as used in training: ``group`` (the current group's mean reward, every state,
GRPO); ``numca`` (a ``NumcaTable`` filled by one earlier group of the same problem, the
persistent table after one visit; unseen states read its ``unseen_value`` 0, as in RL);
``hista`` (k-NN over the hidden-state prefixes of the *other* rollouts of the current group;
``s_0`` gets the group mean, as in ``rl_training``); ``vine`` (VinePPO-style Monte Carlo: the
mean reward of ``vine_k`` fresh teacher continuations of each ``s_k``, ``s_0`` the group mean,
optional); ``critic`` (a value head, optional);
``oracle`` (the exact values: the return-noise floor).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

from .arith_chain import NoisyTeacher, Problem, reward
from .hista_knn import HistaEstimator
from .numca import NumcaTable, extract_numbers


def milestone_prefixes(response: str) -> list[str]:
    """Prefixes ``s_0 .. s_{K-1}`` of a response: empty, then after every space.

    Examples
    --------
    >>> milestone_prefixes("7 12 15;")
    ['', '7 ', '7 12 ']
    """
    return [""] + [response[: i + 1] for i, c in enumerate(response) if c == " "]


def exact_segment_advantages(
    teacher: NoisyTeacher, problem: Problem, response: str
) -> tuple[list[float], list[float]]:
    """Exact values ``V(s_k)`` and one-step advantages ``A*_k`` of one teacher response.

    Examples
    --------
    >>> t = NoisyTeacher(p_base=0.5, p_carry=0.0)
    >>> v, a = exact_segment_advantages(t, Problem((1, 2, 3)), "3 6;")
    >>> v, a
    ([0.25, 0.5], [0.25, 0.5])
    """
    values = [teacher.exact_value(problem, p) for p in milestone_prefixes(response)]
    nxt = values[1:] + [reward(problem, response)]
    return values, [b - a for a, b in zip(values, nxt, strict=True)]


def advantage_errors(
    teacher: NoisyTeacher,
    problems: list[Problem],
    group_size: int,
    hidden_states: Callable[[list[str]], list[torch.Tensor]],
    hista: HistaEstimator,
    critic: Callable[[torch.Tensor], float] | None = None,
    seed: int = 0,
    vine_k: int = 0,
) -> dict[str, dict[str, float]]:
    """Advantage MSE / second moment / value MAE of each estimator on teacher groups.

    ``hidden_states(texts)`` returns the policy's (T, H) last-layer states of each text;
    ``critic(h)`` maps one state vector to a value; ``vine_k > 0`` adds the VinePPO row.
    """
    if group_size < 2:
        raise ValueError(f"group size must be >= 2, got {group_size}")
    rng = np.random.default_rng(seed)
    names = (
        ["group", "numca", "hista"]
        + (["vine"] if vine_k > 0 else [])
        + (["critic"] if critic is not None else [])
        + ["oracle"]
    )
    err = {n: [] for n in names}
    sq = {n: [] for n in names}
    vae = {n: [] for n in names}
    for pid, p in enumerate(problems):
        key = str(pid)
        table = NumcaTable()
        for _ in range(group_size):  # one earlier visit of this problem
            o = teacher.sample(p, rng)
            table.update(key, [n for n, _ in extract_numbers(o)], reward(p, o))
        outs = [teacher.sample(p, rng) for _ in range(group_size)]
        rs = [reward(p, o) for o in outs]
        start = len(p.prompt)
        full = hidden_states([p.prompt + o for o in outs])
        embs = [hista.embed(h.float(), start) for h in full]
        for i, o in enumerate(outs):
            prefixes = milestone_prefixes(o)
            v_exact, a_exact = exact_segment_advantages(teacher, p, o)
            pref_h = hidden_states([p.prompt + q for q in prefixes[1:]])
            pool = [e for j, e in enumerate(embs) if j != i]
            pool_r = torch.tensor([r for j, r in enumerate(rs) if j != i])
            est = {
                "group": [float(np.mean(rs))] * len(prefixes),
                "numca": [
                    table.value(key, [n for n, _ in extract_numbers(q, drop_last=False)])
                    for q in prefixes
                ],
                "hista": [float(np.mean(rs))]
                + [hista.estimate(hista.embed(h.float(), start), pool, pool_r) for h in pref_h],
                "oracle": v_exact,
            }
            if vine_k > 0:
                est["vine"] = [float(np.mean(rs))] + [
                    float(
                        np.mean(
                            [reward(p, q + teacher.continue_from(p, q, rng)) for _ in range(vine_k)]
                        )
                    )
                    for q in prefixes[1:]
                ]
            if critic is not None:
                prompt_h = hidden_states([p.prompt])[0]
                est["critic"] = [critic(prompt_h[-1])] + [critic(h[-1]) for h in pref_h]
            for n in names:
                for v_hat, v, a in zip(est[n], v_exact, a_exact, strict=True):
                    adv = rs[i] - v_hat
                    err[n].append((adv - a) ** 2)
                    sq[n].append(adv**2)
                    vae[n].append(abs(v_hat - v))
    return {
        n: {
            "adv_mse": float(np.mean(err[n])),
            "adv_second_moment": float(np.mean(sq[n])),
            "value_mae": float(np.mean(vae[n])),
            "segments": len(err[n]),
        }
        for n in names
    }


ADVANTAGE_ROWS = {
    "group": "group mean (GRPO)",
    "numca": "Numca (table after one earlier visit)",
    "hista": "Hista (other rollouts of the group)",
    "vine": "VinePPO MC K=4 (teacher continuations)",
    "critic": "PPO critic (value head)",
    "oracle": "oracle V_exact (return-noise floor)",
}


def advantage_error_table(
    teacher: NoisyTeacher,
    problems: list[Problem],
    hidden_states: Callable[[list[str]], list[torch.Tensor]],
    hista: HistaEstimator,
    critic: Callable[[torch.Tensor], float] | None = None,
    seed: int = 0,
):
    """:func:`advantage_errors` on ``problems`` x G=8 teacher rollouts (VinePPO with K=4) as a
    table: advantage MSE vs the exact advantage, its second moment, the value MAE."""
    from icml26_shared.results import Table

    res = advantage_errors(
        teacher, problems, 8, hidden_states, hista, critic=critic, seed=seed, vine_k=4
    )
    table = Table(
        "Advantage error vs the exact advantage (teacher rollouts)",
        ["value estimate", "advantage MSE vs exact", "E[A^2]", "value MAE at milestones"],
        notes=(
            f"{len(problems)} problems x G=8 noisy-teacher rollouts, "
            f"{res['group']['segments']} segments. Segment advantage A_k = R - V(s_k) "
            "(segment GAE, lambda=1, before the group-std division) scored against the exact "
            "one-step advantage V(s_k+1) - V(s_k); s_k = the prefix after k complete numbers. "
            "advantage MSE = return noise (the oracle row) + value error; E[A^2] is the "
            "second moment of the advantage signal. Lower is better."
        ),
    )
    for key, label in ADVANTAGE_ROWS.items():
        if key not in res:
            continue
        r = res[key]
        table.add_row(
            **{
                "value estimate": label,
                "advantage MSE vs exact": r["adv_mse"],
                "E[A^2]": r["adv_second_moment"],
                "value MAE at milestones": r["value_mae"],
            }
        )
    return table
