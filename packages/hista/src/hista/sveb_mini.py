"""SVEB-mini: the paper's value-estimation comparison on ArithChain, with its ppo-1 critics.

Paper: "Hista and Numca: Estimate State Value Effectively for LLM Reinforcement Learning",
Chen et al., ICML 2026 (arXiv 2605.29782), SVEB (research notes C1) at CPU scale.
:func:`sveb_mini` builds two case sets from the same problems:

(a) the SFT policy's own rollouts, target = Monte-Carlo mean of ``M`` continuations;
(b) the noisy teacher's rollouts, where the exact value of every prefix is known (the policy
    serves as the hidden-state encoder there),

trains a PPO-style critic (:func:`~hista.lightning.train_critic`, value head on the frozen
policy) on labelled rollouts of problems outside the benchmark for each ("ppo-1"), and scores
group mean, critic, VinePPO MC (K=2, 4), Numca, Hista (disjoint pool and the reference's
``include_self``), Hista on informative states and, on (b), the exact oracle, plus the MC noise
floor (:func:`~hista.sveb.sveb_table`).
"""

from __future__ import annotations

import numpy as np
import torch

from .arith_chain import NoisyTeacher, reward, sample_problems
from .estimators import (
    INFORMATIVE_SCALE,
    CriticValue,
    Encoder,
    GroupMean,
    HistaValue,
    InformativeEncoder,
    NumcaEstimator,
    Oracle,
    VineMC,
)
from .hista_knn import ARITH_HISTA, HistaEstimator
from .lightning import CriticModule, train_critic
from .policy import CausalLMPolicy
from .sveb import build_cases, sveb_table

POLICY_ROLLOUTS = "policy rollouts"
TEACHER_ROLLOUTS = "teacher rollouts (exact values)"


def sveb_estimators(enc: Encoder, critic: CriticModule, exact: bool) -> list:
    """The estimators of the SVEB-mini tables (the oracle only where exact values exist)."""
    ests = [
        GroupMean(),
        CriticValue(enc, critic),
        VineMC(2),
        VineMC(4),
        NumcaEstimator(),
        HistaValue(enc, HistaEstimator(**ARITH_HISTA)),
        HistaValue(enc, HistaEstimator(**ARITH_HISTA, include_self=True)),
        HistaValue(
            InformativeEncoder(enc, INFORMATIVE_SCALE),
            HistaEstimator(**ARITH_HISTA),
            "Hista, informative states (+ planted wrong-sum coordinate)",
        ),
    ]
    return ests + ([Oracle()] if exact else [])


def sveb_mini(
    policy: CausalLMPolicy,
    problems: int,
    group_size: int,
    n_mc: int,
    cases_per_problem: int,
    critic_problems: int,
    critic_epochs: int,
    seed: int = 0,
) -> tuple[list, dict[str, CriticModule]]:
    """The two SVEB-mini tables (policy rollouts, teacher rollouts) and the ppo-1 critics.

    One torch generator (policy samples) and one numpy generator (teacher samples), both
    seeded with ``seed``, run through both case sets in order, so the critic of the teacher
    rollouts is the same object :func:`~hista.advantage_variance.advantage_error_table` scores.
    """
    teacher = NoisyTeacher()
    gen = torch.Generator().manual_seed(seed)
    rng = np.random.default_rng(seed)
    enc = Encoder(policy)

    def policy_sampler(p, prefix, n):
        return policy.generate(p.prompt + prefix, n, generator=gen)

    def teacher_sampler(p, prefix, n):
        return [teacher.continue_from(p, prefix, rng) for _ in range(n)]

    def critic_for(sampler):  # labelled rollouts of problems outside SVEB, per-token regression
        feats, targets = [], []
        for p in sample_problems(critic_problems, seed=seed + 101):
            outs = sampler(p, "", 8)
            for o, h in zip(outs, enc.states([p.prompt + o for o in outs]), strict=True):
                f = h[len(p.prompt) - 1 : -1]
                feats.append(f)
                targets.append(torch.full((f.shape[0],), reward(p, o)))
        return train_critic(torch.cat(feats), torch.cat(targets), critic_epochs, seed)

    chosen = sample_problems(problems, seed=seed + 1)
    tables, critics = [], {}
    for label, sampler, exact in (
        (POLICY_ROLLOUTS, policy_sampler, None),
        (TEACHER_ROLLOUTS, teacher_sampler, teacher.exact_value),
    ):
        cases = build_cases(sampler, chosen, group_size, n_mc, 4, cases_per_problem, seed, exact)
        critics[label] = critic_for(sampler)
        mean_r = float(np.mean([r for c in cases[::cases_per_problem] for r in c.pool_rewards]))
        notes = (
            f"{len(cases)} states from {problems} problems, G={group_size} pool "
            f"rollouts per problem (disjoint from the cut source), V_MC from M={n_mc} "
            f"continuations; mean pool reward {mean_r:.3f}. Lower MAE is better; "
            "within-problem std = mean std of the predictions over the states of one "
            "problem (0 = collapsed to a per-problem constant)."
        )
        ests = sveb_estimators(enc, critics[label], exact is not None)
        tables.append(sveb_table(f"SVEB-mini, {label}", cases, ests, notes))
    return tables, critics
