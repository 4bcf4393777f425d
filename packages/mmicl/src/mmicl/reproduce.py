"""``mmicl reproduce``: the paper's headline comparisons at CPU scale.

Paper: "Dissecting Multimodal In-Context Learning: Modality Asymmetries and Circuit Dynamics
in Modern Transformers", Huang et al., ICML 2026 (arXiv 2601.20796). One section per claim;
sizes in ``configs/reproduce/{quick,full,paper}.yaml``, whose global keys are the stage-1
sweep (:class:`~mmicl.position_sweep.SweepSetting`), trained once and shared by the sections:
``stage1`` (ICL vs IWL by position encoding and K, with anchors), ``onset`` (ICL onset over
seeds with controls, threshold K*), ``stage2`` (projector-only multimodal ICL on the frozen
best decoder vs scratch, :mod:`.multimodal_transfer`), ``circuits`` (Spearman rho of the
circuit measures with IC accuracy over checkpoints), ``knockout`` (top induction vs random vs
top previous-token head).
"""

from __future__ import annotations

from dataclasses import dataclass

from icml26_shared.experiment import Experiment, Section, SectionResult
from icml26_shared.results import Table

from .multimodal_transfer import train_stage2, train_stage3, transfer_table
from .position_sweep import (
    SweepSetting,
    best_run,
    circuit_correlation_table,
    icl_iwl_table,
    knockout_rows,
    knockout_width,
    onset_table,
    run_sweep,
    training_curves_figure,
)
from .workers import run_in_workers


def stage1_section(s: SweepSetting, seed: int) -> SectionResult:
    sweep = run_sweep(s, seed)
    note = f"Stage 1 trained {len(sweep.runs)} decoders."
    return SectionResult([icl_iwl_table(sweep)], notes=[note])


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


def stage2_section(s: Stage2Setting, seed: int) -> Table:
    sweep = run_sweep(s, seed)
    best = best_run(sweep)
    v, K = best["variant"], s.Ks[-1]
    arch = {"decoder_d_model": v.d_model, "decoder_pos": v.pos, "decoder_embedding": v.embedding}
    base = s.sweep_part()
    variants = [("pretrained", "none"), ("pretrained", "m1_random"), ("scratch", "m1_random")]
    jobs = [(train_stage2, base, seed, K, K2, dec, ctl, best["ckpt"], arch, s.stage2_steps)
            for K2 in s.K2s for dec, ctl in variants]  # fmt: skip
    if s.digits:
        jobs += [(train_stage3, base, seed, K, dec, best["ckpt"], arch, s.stage2_steps)
                 for dec in ("pretrained", "scratch")]  # fmt: skip
    rows = run_in_workers(jobs, s.workers, "stages 2-3")
    note = (
        f"pretrained = the stage-1 {v.name} decoder ({v.layout}; the highest final IC at K={K}, "
        f"seed {seed}), frozen, only the projector trained; scratch = a fresh {v.name} decoder "
        "trained jointly with the projector."
    )
    return transfer_table(rows, s, s.stage2_steps, note, s.digits)


def circuits_section(s: SweepSetting, seed: int) -> SectionResult:
    table = circuit_correlation_table(run_sweep(s, seed))
    return SectionResult([table], notes=["isnan(rho) marks a constant measure."])


@dataclass(frozen=True, kw_only=True)
class KnockoutSetting(SweepSetting):
    knockout_steps: int


def knockout_section(s: KnockoutSetting, seed: int) -> Table:
    v, K = best_run(run_sweep(s, seed))["variant"], s.Ks[-1]
    t = Table(
        "Head knockout in a 2-layer, 2-head decoder",
        ["knockout", "heads", "IC acc", "IC2 acc", "IW acc"],
        notes=(
            f"{v.name} decoder ({v.layout}, width {knockout_width(s, v)}), K={K}, "
            f"{s.knockout_steps} steps; heads ranked by IH strength / previous-token strength "
            "on the IC set; knocking out zeroes the head's slice of the input to the output "
            "projection; the random head is drawn (seeded) among the heads that are neither "
            "the top induction nor the top previous-token head."
        ),
    )
    t.extend(knockout_rows(s.sweep_part(), v, K, seed, s.knockout_steps))
    return t


EXPERIMENT = Experiment(
    "mmicl",
    [
        Section(
            "stage1",
            stage1_section,
            "ICL needs a large class count K; RoPE's threshold K* is at or above APE's",
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
            "a frozen pretrained decoder gives multimodal ICL with only a projector trained; "
            "low secondary-modality complexity suffices",
            Stage2Setting,
        ),
        Section(
            "circuits",
            circuits_section,
            "IC accuracy rises with the induction-circuit measures across checkpoints",
            SweepSetting,
        ),
        Section(
            "knockout",
            knockout_section,
            "knocking out the top induction head hurts ICL more than a random head",
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
