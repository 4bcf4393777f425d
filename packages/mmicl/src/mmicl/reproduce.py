"""``mmicl reproduce``: the paper's headline comparisons at CPU scale.

Paper: "Dissecting Multimodal In-Context Learning: Modality Asymmetries and Circuit Dynamics
in Modern Transformers", Huang et al., ICML 2026 (arXiv 2601.20796). One section per claim;
sizes in ``configs/reproduce/{quick,full,paper}.yaml``, whose global keys are the stage-1
sweep (:class:`~mmicl.position_sweep.SweepSetting`), trained once and shared by the sections:
``stage1`` (the ICL/IWL phase diagram by position encoding and K with the query-free
in-weights test, and the transition K* with its interval over seeds), ``onset`` (ICL onset
over seeds with controls), ``stage2`` (projector-only multimodal ICL on the frozen best
decoder vs scratch, on a GMM and on a real-image feature bank swept over K2,
:mod:`.multimodal_transfer`), ``circuits`` (Spearman rho of the circuit measures with IC
accuracy over checkpoints, and the measures recomputed through the TransformerLens export),
``knockout`` (top-k induction vs k random vs top-k previous-token heads, ranked on one split
and scored on another).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from icml26_shared.experiment import Experiment, Section, SectionResult
from icml26_shared.results import Table

from .multimodal_transfer import stage2_table
from .position_sweep import (
    SweepSetting,
    best_run,
    circuit_correlation_table,
    icl_iwl_table,
    knockout_over_seeds,
    lens_agreement_table,
    onset_table,
    run_sweep,
    threshold_table,
    training_curves_figure,
)


def stage1_section(s: SweepSetting, seed: int) -> SectionResult:
    sweep = run_sweep(s, seed)
    note = f"Stage 1 trained {len(sweep.runs)} decoders."
    return SectionResult([icl_iwl_table(sweep), threshold_table(sweep)], notes=[note])


def onset_section(s: SweepSetting, seed: int) -> SectionResult:
    sweep = run_sweep(s, seed)
    note = (
        f"Figure: mean IC accuracy and IH strength over the seeds at K={s.Ks[-1]} (band: min-max)."
    )
    figures = {"training_curves.png": training_curves_figure(sweep)}
    return SectionResult([onset_table(sweep)], figures, [note])


@dataclass(frozen=True, kw_only=True)
class Stage2Setting(SweepSetting):
    K2s: tuple[int, ...]  # class counts of the GMM secondary modality
    stage2_steps: int
    digits: bool  # add the stage-3 digits rows (CNN encoder)
    feature_K2s: tuple[int, ...] = ()  # training classes of the real-image feature bank
    feature_dim: int = 16  # PCA components of the digits feature bank

    def __post_init__(self) -> None:
        super().__post_init__()
        for name in ("K2s", "feature_K2s"):
            object.__setattr__(self, name, tuple(getattr(self, name)))


def stage2_section(s: Stage2Setting, seed: int) -> Table:
    sweep = run_sweep(s, seed)
    v, K = best_run(sweep)["variant"], s.Ks[-1]
    ckpts = {sd: sweep.runs[(v.name, K, sd)]["ckpt"] for sd in range(seed, seed + s.seeds)}
    return stage2_table(s, v, K, ckpts, Path(sweep.workdir.name))


def circuits_section(s: SweepSetting, seed: int) -> SectionResult:
    sweep = run_sweep(s, seed)
    tables = [circuit_correlation_table(sweep), lens_agreement_table(sweep)]
    return SectionResult(tables, notes=["isnan(rho) marks a constant measure."])


@dataclass(frozen=True, kw_only=True)
class KnockoutSetting(SweepSetting):
    knockout_steps: int
    knockout_heads: int = 4  # heads per layer of the 2-layer knockout decoder
    knockout_ks: tuple[int, ...] = (1, 2, 4)

    def __post_init__(self) -> None:
        super().__post_init__()
        object.__setattr__(self, "knockout_ks", tuple(self.knockout_ks))


def knockout_section(s: KnockoutSetting, seed: int) -> Table:
    v, K = best_run(run_sweep(s, seed))["variant"], s.Ks[-1]
    seeds = range(seed, seed + s.seeds)
    return knockout_over_seeds(s, v, K, seeds, s.knockout_steps, s.knockout_heads, s.knockout_ks)


EXPERIMENT = Experiment(
    "mmicl",
    [
        Section(
            "stage1",
            stage1_section,
            "ICL needs a large class count K (below it the model learns in weights); RoPE's "
            "transition K* is at or above APE's",
            SweepSetting,
        ),
        Section(
            "onset",
            onset_section,
            "RoPE delays the onset of ICL relative to absolute positions",
            SweepSetting,
        ),
        Section(
            "stage2",
            stage2_section,
            "a frozen pretrained decoder gives multimodal ICL with only a projector trained, on "
            "synthetic and on real-image features; low secondary-modality complexity suffices",
            Stage2Setting,
        ),
        Section(
            "circuits",
            circuits_section,
            "IC accuracy rises with the induction-circuit measures across checkpoints; "
            "TransformerLens reads the same measures",
            SweepSetting,
        ),
        Section(
            "knockout",
            knockout_section,
            "knocking out the top induction heads hurts ICL more than random heads",
            KnockoutSetting,
        ),
    ],  # fmt: skip
    notes=[
        "Every training run seeds its data, initialisation and position offsets itself, so "
        "the numbers do not depend on the number of worker processes. The stage-1 sweep is "
        "trained once, by the first section that needs it (its time includes the sweep), and "
        "shared by the others."
    ],
)
