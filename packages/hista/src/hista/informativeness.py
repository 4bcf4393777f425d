"""Does Hista improve when the hidden states are informative? (a diagnostic of SVEB-mini)

Paper: "Hista and Numca: Estimate State Value Effectively for LLM Reinforcement Learning",
Chen et al., ICML 2026 (arXiv 2605.29782). Hista values a prefix by its hidden-state
neighbours, so it can only be as good as the states are informative about the outcome.

``informativeness_sweep`` scores Hista on SVEB-mini teacher cases (exact values known) for
several SFT lengths of the tiny policy (longer warm start = states shaped by more training)
and for states with a planted coordinate that flags a wrong partial sum
(``estimators.InformativeEncoder``, several scales), next to the group mean, Numca and the
reference variants (the ``k`` schedule 66 -> 6, ``include_self``): ``informativeness_table``
(the ``informativeness`` section of ``hista reproduce``); ``informativeness_sweep`` wraps it in
a report (``hista informativeness`` writes it).
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import torch
from icml26_shared.progress import progress
from icml26_shared.results import Report, Table

from .arith_chain import NoisyTeacher, sample_problems
from .estimators import Encoder, GroupMean, HistaValue, InformativeEncoder, NumcaEstimator
from .hista_knn import ARITH_HISTA as HISTA
from .hista_knn import HistaEstimator
from .lightning import sft_warm_start
from .policy import ARITH_POLICY as POLICY
from .policy import CausalLMPolicy
from .sveb import build_cases, evaluate

COLUMNS = ["SFT steps", "estimator", "MAE vs exact", "MAE vs V_MC", "Spearman"]


def informativeness_sweep(
    out: Path,
    sft_steps: tuple[int, ...] = (400, 1600),
    problems: int = 40,
    scales: tuple[float, ...] = (3.0, 10.0, 30.0),
    seed: int = 0,
) -> Report:
    """:func:`informativeness_table` in a report for ``out`` (with the run's CPU time).

    ``sft_steps`` must increase (one policy is trained further between rows).
    """
    start = time.process_time()
    report = Report("hista-informativeness", out)
    report.add_table(informativeness_table(sft_steps, problems, scales, seed))
    report.note(f"CPU time of this run (one thread): {time.process_time() - start:.0f} s.")
    return report


def informativeness_table(
    sft_steps: tuple[int, ...] = (400, 1600),
    problems: int = 40,
    scales: tuple[float, ...] = (3.0, 10.0, 30.0),
    seed: int = 0,
) -> Table:
    """Hista's SVEB-mini error (teacher cases) vs SFT length and planted informative states.

    ``sft_steps`` must increase (one policy is trained further between rows).
    """
    sft_steps = tuple(sft_steps)
    if not sft_steps or list(sft_steps) != sorted(set(sft_steps)) or sft_steps[0] < 0:
        raise ValueError(f"sft_steps must be increasing and >= 0, got {list(sft_steps)}")
    if problems < 1 or any(s <= 0 for s in scales):
        raise ValueError("problems must be >= 1 and every scale > 0")
    torch.set_num_threads(1)
    teacher, rng = NoisyTeacher(), np.random.default_rng(seed)

    def teacher_sampler(p, prefix, n):
        return [teacher.continue_from(p, prefix, rng) for _ in range(n)]

    cases = build_cases(
        teacher_sampler,
        sample_problems(problems, seed=seed + 1),
        16,
        32,
        4,
        2,
        seed,
        teacher.exact_value,
    )
    table = Table(
        "Hista vs informativeness of the states (SVEB-mini, teacher rollouts)",
        COLUMNS,
        notes=(
            f"{len(cases)} states from {problems} problems (G=16, M=32; "
            f"{np.mean([c.exact == 0.0 for c in cases]):.0%} of the prefixes hold a wrong "
            f"partial sum, exact value 0). Hista {HISTA}; 'k 66 -> 6' is the reference's "
            "schedule (here one query per state: k = 66); 'planted s' appends s x [a written "
            "partial sum is wrong] to the policy's hidden states before the EMA. The policy is "
            "trained further between SFT rows."
        ),
    )

    def add(steps, est, name=None):
        m = evaluate([est.predict(c) for c in cases], cases)
        table.add_row(
            **{
                "SFT steps": steps,
                "estimator": name or est.name,
                "MAE vs exact": m["mae_exact"],
                "MAE vs V_MC": m["mae_mc"],
                "Spearman": m["spearman"],
            }
        )

    add(None, GroupMean())
    add(None, NumcaEstimator())
    torch.manual_seed(seed)
    policy, done = CausalLMPolicy(**POLICY), 0
    for steps in progress(list(sft_steps), desc="SFT lengths"):
        sft_warm_start(
            policy, sample_problems(2000, seed=seed + 7), teacher, steps - done, seed=seed + done
        )
        done = steps
        enc = Encoder(policy)
        norms = [
            h.norm(dim=-1).mean() for h in enc.states([c.problem.prompt + c.source for c in cases])
        ]
        table.notes += (
            f" Mean hidden-state norm after {steps} SFT steps: {float(np.mean(norms)):.1f}."
        )
        add(steps, HistaValue(enc, HistaEstimator(**HISTA)))
        add(
            steps,
            HistaValue(enc, HistaEstimator(**{**HISTA, "k": 66, "min_k": 6})),
            "Hista, k 66 -> 6",
        )
        add(steps, HistaValue(enc, HistaEstimator(**HISTA, include_self=True)))
        for s in scales:
            add(
                steps,
                HistaValue(InformativeEncoder(enc, s), HistaEstimator(**HISTA)),
                f"Hista, planted {s:g}",
            )
    return table
