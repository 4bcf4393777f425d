"""``videokr reproduce``: the SynthKR tables (the paper's claims at micro-world scale), offline.

One section per claim, on the micro-world built and filtered once per run
(:func:`.synthkr.filtered_world`); sizes in ``configs/reproduce/{quick,full,paper}.yaml``:

1. ``methods``: accuracy per skill of chance, a random predictor, the blind-text and
   single-frame baselines, SFT on perception-only data, SFT on the full skill mix and
   SFT -> GRPO (:func:`.synthkr.methods_table`);
2. ``video_dependency``: blind / single-frame accuracy on the unfiltered vs the filtered eval
   split (:func:`.synthkr.video_dependency_table`);
3. ``filters``: planted defects caught, genuine items kept (:func:`.synthkr.filter_tables`);
4. ``shortcuts``: the blind filter against five planted shortcut families (one held out of its
   tuning), judged by an independent text-only learner (:func:`.shortcuts.shortcut_table`).

Every section runs ``seeds`` seeds (3 in every preset): a new micro-world, filtering and
training per seed; tables show ``mean ± sd`` (counts: sums over seeds). Torch runs on
``threads`` threads with deterministic algorithms, and NumPy's BLAS / OpenMP pools (the
scikit-learn probes) on as many (``threadpoolctl``; idle BLAS threads spinning on a loaded
machine had doubled the CPU time), so a preset gives the same tables on every run on the same
machine and library versions (timings are kept apart, in the ``timing`` field
of ``results.json`` and the ``_wall ... s_`` line of ``results.md``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from icml26_shared.experiment import Experiment, Section, SectionResult, seeds

from .synthkr import filters_over_seeds, methods_over_seeds, video_dependency_over_seeds


def _threads(n: int) -> None:
    import torch
    from threadpoolctl import threadpool_limits

    torch.set_num_threads(n)
    torch.use_deterministic_algorithms(True, warn_only=True)
    threadpool_limits(n)  # NumPy's BLAS and OpenMP (scikit-learn's probes) on n threads too


@dataclass
class WorldSetting:
    n_videos: int  # clips of the micro-world
    threads: int = 1  # torch threads (tiny models: more only add contention on small CPUs)
    seeds: int = 3  # independent micro-worlds and trainings per section


@dataclass
class MethodsSetting(WorldSetting):
    sft_steps: int = 300
    grpo_steps: int = 15  # optimiser steps (two per rollout batch)
    group: int = 4  # completions per prompt
    grpo_batch: int = 8  # prompts per rollout batch


def methods_section(s: MethodsSetting, seed: int) -> SectionResult:
    _threads(s.threads)
    tables, fig = methods_over_seeds(
        s.n_videos, s.sft_steps, s.grpo_steps, s.group, s.grpo_batch, seeds(s, seed)
    )
    return SectionResult(tables, {"synthkr_accuracy.png": fig})


def video_dependency_section(s: WorldSetting, seed: int):
    _threads(s.threads)
    return video_dependency_over_seeds(s.n_videos, seeds(s, seed))


def filters_section(s: WorldSetting, seed: int):
    _threads(s.threads)
    return filters_over_seeds(s.n_videos, seeds(s, seed))


@dataclass
class ShortcutSetting:
    n_videos: int  # clips per family world (half train, half eval; 3 items per clip)
    rate: float = 0.3  # share of items planted with the family's shortcut
    held_out: list[str] = field(default_factory=lambda: ["question_overlap"])
    learner_epochs: int = 20
    threads: int = 1
    seeds: int = 3


def shortcuts_section(s: ShortcutSetting, seed: int):
    from .shortcuts import shortcut_table

    _threads(s.threads)
    table, _ = shortcut_table(s.n_videos, s.rate, s.held_out, seeds(s, seed), s.learner_epochs)
    return table


EXPERIMENT = Experiment(
    "videokr",
    [
        Section(
            "methods",
            methods_section,
            "the full skill mix beats perception-only data on multi-hop items; GRPO adds over SFT",
            MethodsSetting,
        ),
        Section(
            "video_dependency",
            video_dependency_section,
            "after filtering, blind-text and single-frame baselines fall to chance",
            WorldSetting,
        ),
        Section(
            "filters",
            filters_section,
            "the quality filters catch the planted defects and keep genuine items",
            WorldSetting,
        ),
        Section(
            "shortcuts",
            shortcuts_section,
            "after blind filtering, an independent text-only learner is at chance on every "
            "planted shortcut family (one held out of the filter's tuning), genuine items kept",
            ShortcutSetting,
        ),
    ],  # fmt: skip
    notes=[
        "Micro-world scale (CPU): a 2-layer, 64-wide Llama decoder with a 3D-conv frame encoder, "
        "GRPO two optimiser steps per rollout batch (sizes in configs/reproduce/); not the "
        "paper's Qwen-VL models or data."
    ],
)
