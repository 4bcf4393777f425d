"""``qat-scaling reproduce``: the paper's headline analysis at CPU scale.

Paper: "Scaling Law for Quantization-Aware Training", Chen et al., arXiv 2505.14302. One
paired grid (:mod:`qat_scaling.grid`: FP baseline, W4A4 at several G, W4A16, W16A4, FC2-A8
mixed precision, a Hadamard-rotated FC2 input as the outlier anchor) is trained once and read
by every section; its sizes are in ``configs/reproduce/{quick,full,paper}.yaml``:

1. ``delta``: the FP loss and delta = L_QAT - L_FP of every scheme per (N, D).
2. ``law``: the unified law fitted per scheme, with t and bootstrap intervals (and a figure).
3. ``decomposition``: delta_W4A4 against its weight and activation parts; the FC2 fixes.
4. ``holdout``: leave-one-(N, D)-cell-out error of the unified law against the N-only law.
5. ``chinchilla``: the Chinchilla fit of the FP loss.
6. ``outliers``: input statistics of every linear layer of the FP models.
7. ``torchao``: the anchor, our fake quantisers against torchao's (``bench`` extra).
"""

from __future__ import annotations

from dataclasses import dataclass

from icml26_shared.experiment import Experiment, Section, SectionResult
from icml26_shared.results import Table

from .activation_outliers import outlier_table
from .grid import GridSpec, grid_records, grid_spec
from .grid_tables import (
    chinchilla_table,
    decomposition_group,
    decomposition_table,
    delta_table,
    fit_table,
    grid_description,
    holdout_table,
    summary_lines,
)
from .plots import decomposition_figure, delta_figure
from .scaling_law import decompose, qat_error


@dataclass(frozen=True)
class GridSetting(GridSpec):
    """The grid (global keys of a preset) plus the options of the sections that read it."""

    runs_file: str | None = None  # JSONL of run records to resume from (default: none)
    bootstrap: int = 1000  # bootstrap resamples of the law fits


def _grid(s: GridSetting, seed: int) -> tuple[GridSpec, list[dict], list[dict]]:
    spec = grid_spec(s, seed)
    records = grid_records(spec, s.runs_file)
    return spec, records, qat_error([r for r in records if r["seed"] == seed])


def delta_section(s: GridSetting, seed: int) -> SectionResult:
    spec, records, errors = _grid(s, seed)
    return SectionResult([delta_table(records, errors, seed)], notes=[grid_description(spec)])


def law_section(s: GridSetting, seed: int) -> SectionResult:
    _, records, errors = _grid(s, seed)
    fits = decompose(errors, bootstrap=s.bootstrap, seed=seed)
    figure = delta_figure([e for e in errors if e["scheme"] == "W4A4"], fits.get("W4A4"))
    notes = ["Summary (from this run): " + " | ".join(summary_lines(records, errors, fits, seed))]
    return SectionResult([fit_table(fits, s.bootstrap)], {"delta_vs_N_D_G.png": figure}, notes)


def decomposition_section(s: GridSetting, seed: int) -> SectionResult:
    spec, _, errors = _grid(s, seed)
    G = decomposition_group(spec)
    table = decomposition_table(errors, G)
    if table is None:
        return SectionResult(notes=["No W16A4 run in this grid: no decomposition."])
    return SectionResult([table], {"decomposition.png": decomposition_figure(errors, G)})


def holdout_section(s: GridSetting, seed: int) -> Table:
    _, _, errors = _grid(s, seed)
    return holdout_table([e for e in errors if e["scheme"] == "W4A4"])


def chinchilla_section(s: GridSetting, seed: int) -> Table:
    return chinchilla_table(_grid(s, seed)[1], seed)


def outliers_section(s: GridSetting, seed: int) -> Table:
    return outlier_table(_grid(s, seed)[1], seed)


def torchao_section(s: GridSetting, seed: int) -> SectionResult:
    from .torchao_parity import parity_table, torchao_available

    if not torchao_available():
        return SectionResult(notes=["torchao cross-check skipped: torchao is not installed "
                                    "(pip install 'qat-scaling[bench]')."])  # fmt: skip
    groups = sorted({g for scheme, g in s.runs if scheme == "W4A4" and g})
    return SectionResult([parity_table(groups, seed)])


EXPERIMENT = Experiment(
    "qat-scaling",
    [
        Section(
            "delta",
            delta_section,
            "QAT error delta = L_QAT - L_FP measured on paired runs per (N, D, G)",
            GridSetting,
        ),
        Section(
            "law", law_section, "delta = k D^gD (log2 G)^gG / N^gN with gN, gD, gG > 0", GridSetting
        ),
        Section(
            "decomposition",
            decomposition_section,
            "W4A4 error = weight part + activation part; the FC2 input dominates the "
            "activation part and FC2-A8 brings the two level",
            GridSetting,
        ),
        Section(
            "holdout",
            holdout_section,
            "the unified law predicts held-out (N, D) cells better than the N-only law",
            GridSetting,
        ),
        Section(
            "chinchilla",
            chinchilla_section,
            "the FP loss follows L = A/N^alpha + B/D^beta + E",
            GridSetting,
        ),
        Section(
            "outliers",
            outliers_section,
            "the FC2 (down_proj) input has the heaviest tails of all linear inputs",
            GridSetting,
        ),
        Section(
            "torchao",
            torchao_section,
            "our fake quantisers agree with torchao's bit for bit at the same convention",
            GridSetting,
        ),
    ],  # fmt: skip
    notes=[
        "One paired grid per run, trained once and read by every section (sections run alone "
        "retrain it unless runs_file names a JSONL of finished runs). Full precision is "
        "float32 on the CPU. Paired runs: every scheme of one size starts from the same "
        "weights and sees the same batches."
    ],
)
