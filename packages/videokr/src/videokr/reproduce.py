"""``videokr reproduce``: the SynthKR tables (the paper's claims at micro-world scale), offline.

One section per claim, on the micro-world built and filtered once per run
(:func:`.synthkr.filtered_world`); sizes in ``configs/reproduce/{quick,full,paper}.yaml``:

1. ``methods``: accuracy per skill of chance, a random predictor, the blind-text and
   single-frame baselines, SFT on perception-only data, SFT on the full skill mix and
   SFT -> GRPO (:func:`.synthkr.methods_table`);
2. ``video_dependency``: blind / single-frame accuracy on the unfiltered vs the filtered eval
   split (:func:`.synthkr.video_dependency_table`);
3. ``filters``: planted defects caught, genuine items kept (:func:`.synthkr.filter_tables`).
"""

from __future__ import annotations

from dataclasses import dataclass

from icml26_shared.experiment import Experiment, Section, SectionResult

from .synthkr import (
    accuracy_figure,
    filter_tables,
    filtered_world,
    methods_table,
    video_dependency_table,
)


def _threads(n: int) -> None:
    import torch

    torch.set_num_threads(n)


@dataclass
class WorldSetting:
    n_videos: int  # clips of the micro-world
    threads: int = 1  # torch threads (tiny models: more only add contention on small CPUs)


@dataclass
class MethodsSetting(WorldSetting):
    sft_steps: int = 300
    grpo_steps: int = 15  # optimiser steps (two per rollout batch)
    group: int = 4  # completions per prompt
    grpo_batch: int = 8  # prompts per rollout batch


def methods_section(s: MethodsSetting, seed: int) -> SectionResult:
    _threads(s.threads)
    fw = filtered_world(s.n_videos, seed)
    table = methods_table(fw, s.sft_steps, s.grpo_steps, s.group, s.grpo_batch, seed)
    return SectionResult([table], {"synthkr_accuracy.png": accuracy_figure(table)})


def video_dependency_section(s: WorldSetting, seed: int):
    _threads(s.threads)
    return video_dependency_table(filtered_world(s.n_videos, seed))


def filters_section(s: WorldSetting, seed: int):
    _threads(s.threads)
    return filter_tables(filtered_world(s.n_videos, seed))


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
    ],  # fmt: skip
    notes=[
        "Micro-world scale (CPU): a 2-layer, 64-wide Llama decoder with a 3D-conv frame encoder, "
        "GRPO two optimiser steps per rollout batch (sizes in configs/reproduce/); not the "
        "paper's Qwen-VL models or data."
    ],
)
