"""``symicl reproduce``: the paper's headline comparison at CPU scale.

Paper: "Symmetry Reveals Layerwise Dynamics: How Transformers Perform In-Context
Classification", Lutz et al., ICML 2026 (arXiv 2604.11613). Sizes in
``configs/reproduce/{quick,full,paper}.yaml``.

One section, ``comparison``: ``none`` / ``augment`` / ``tied`` transformers (same data, same
steps, same seed) next to the anchors (prototype, k-step in-context GD, ridge, logistic
regression, 1-NN) on the same seeded episode banks (:func:`.symmetry_comparison`):
accuracy at a few ``(d, C, N)`` and under four shifts, the symmetry defect, the accuracy
after Reynolds projection and the error of the extracted recursion; then class separation and
probe alignment along depth. All of it comes from the same trained models, hence one section.
Every cell is mean ± sd over ``seeds`` seeds; real-data columns come from scikit-learn's
bundled tables.

Section ``mechanism``: ``tied`` models per task and seed explained as ``symicl explain`` does
(:func:`.explanation.mechanism_study`): which candidate rule (k-step GD, label-aware mean shift)
reproduces the learned update best, the true-class / other-class / residual split of every
layer's update, and the coefficients that never receive a gradient.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import torch
from icml26_shared.experiment import Experiment, Section, SectionResult, seeds

from .explanation import mechanism_study
from .symmetry_comparison import separation_figure, symmetry_comparison


@dataclass
class ComparisonSetting:
    tasks: list[list[int]]  # (d, C, N); the first gets every depth and the shift columns
    depths: list[int]  # depths trained on the first task
    other_depth: int  # depth trained on the other tasks
    steps: int  # Adam steps per model
    episodes: int  # test episodes per column (and validation episodes for the GD step size)
    gd_steps: list[int]  # k of the k-step in-context GD anchors
    n_heads: int
    batch_size: int
    lr: float
    seeds: int = 3  # independent seeds (models and banks); cells show mean ± sd
    real_tables: list[str] = field(default_factory=list)  # sklearn tables for real-data columns


@dataclass
class MechanismSetting:
    tasks: list[list[int]]  # (d, C, N) of the tied models explained
    depth: int
    n_heads: int
    steps: int  # Adam steps per model
    episodes: int  # fit episodes and, as many again, held-out test episodes per seed
    gd_steps: list[int]  # k of the k-step GD rules fitted
    fit_steps: int  # Adam steps per rule fit (per start)
    batch_size: int
    lr: float
    seeds: int = 3


def comparison_section(s: ComparisonSetting, seed: int) -> SectionResult:
    torch.set_num_threads(1)  # matrices are tiny; threads only add contention on small CPUs
    cpu_start = time.process_time()
    result = symmetry_comparison(
        [tuple(t) for t in s.tasks], s.depths, s.other_depth, s.steps, s.episodes, s.gd_steps,
        n_heads=s.n_heads, batch_size=s.batch_size, lr=s.lr, seeds=seeds(s, seed),
        real_tables=s.real_tables,
    )  # fmt: skip
    return SectionResult(
        [result.accuracy, result.depth],
        {"separation_vs_depth.png": separation_figure(result.curves)},
        notes=[
            "Summary (from this run): " + " | ".join(result.summary),
            f"CPU time of this section (one thread): {time.process_time() - cpu_start:.0f} s.",
        ],
    )


def mechanism_section(s: MechanismSetting, seed: int) -> SectionResult:
    torch.set_num_threads(1)
    cpu_start = time.process_time()
    tables, summary = mechanism_study(
        [tuple(t) for t in s.tasks], s.depth, s.n_heads, s.steps, s.episodes, s.gd_steps,
        s.fit_steps, seeds(s, seed), batch_size=s.batch_size, lr=s.lr,
    )  # fmt: skip
    return SectionResult(
        tables,
        notes=[
            "Summary (from this run): " + " | ".join(summary),
            f"CPU time of this section (one thread): {time.process_time() - cpu_start:.0f} s.",
        ],
    )


EXPERIMENT = Experiment(
    "symicl",
    [
        Section(
            "comparison",
            comparison_section,
            "symmetric transformers match unconstrained ones, their weights collapse onto the "
            "commutant, the extracted recursion reproduces them, separation grows with depth",
            ComparisonSetting,
        ),
        Section(
            "mechanism",
            mechanism_section,
            "the learned update is a coupled, label-aware mean shift (not gradient descent) "
            "that weights the probe's true class; coefficients that never train are not "
            "reported as learned",
            MechanismSetting,
        ),
    ],
)
