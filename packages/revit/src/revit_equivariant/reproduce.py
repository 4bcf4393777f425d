"""``revit reproduce``: the paper's headline comparison at CPU scale, offline.

Paper: "ReViT: Rotational-equivariant Vision Transformers for Neural PDE Solvers" (Wei, List,
Thuerey, ICML 2026). One section per claim; sizes in ``configs/reproduce/{quick,full,paper}.yaml``;
table rows are the ``revit fit`` configs named under ``rows`` (``benchmark.read_fit_config``):
``--preset full`` trains each as written, a preset's ``data`` / ``model`` / ``epochs`` override.

1. ``kolmogorov``: on 2D Kolmogorov flow, ReViT is exactly C4-equivariant after training
   (rot90/id = 1) where the same Swin backbone is not, at a small compute overhead; against
   Swin + C4 augmentation, U-Net, neuraloperator's FNO, the authors' ``revit-pde`` (when
   installed) and persistence (:func:`~revit_equivariant.benchmark.kolmogorov_table`).
2. ``exactness``: exact C4 / O equivariance at random init, float32 and float64.
3. ``flow3d``: ReViT3d trained on a 3D flow stays exactly equivariant over all 24 rotations of O.
4. ``seeds2d``: accuracy on a small Kolmogorov setting trained to convergence, 3 seeds, mean ±
   spread, learning curves (:func:`~revit_equivariant.benchmark.seeds_result`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from icml26_shared.experiment import Experiment, Section, SectionResult
from icml26_shared.results import Table


def _configs(rows: list[str], s: Any) -> list:
    from .benchmark import read_fit_config

    folder = Path(EXPERIMENT.config_dir).parent
    return [read_fit_config(folder / r, s.model, s.data, s.epochs) for r in rows]


def _threads(n: int) -> None:
    import torch

    torch.set_num_threads(n)  # CPU s/epoch is the CPU time of a one-thread run


@dataclass
class KolmogorovSetting:
    rows: list[str]  # fit configs in configs/, one per trained table row
    rollout: int  # autoregressive steps of the rollout column
    data: dict[str, Any] = field(default_factory=dict)  # overrides of the configs' data:
    model: dict[str, Any] = field(default_factory=dict)  # overrides of the configs' model:
    epochs: int | None = None  # None: the configs' trainer.max_epochs
    threads: int = 1


def kolmogorov_section(s: KolmogorovSetting, seed: int) -> SectionResult:
    from .benchmark import kolmogorov_table, overhead_note
    from .plots import comparison_figure
    from .reference_model import reference_available

    _threads(s.threads)
    table, rows, curves = kolmogorov_table(_configs(s.rows, s), s.rollout, seed)
    reference = (
        "revit-pde reference row: trained with the same data, sizes and optimiser. "
        if reference_available()
        else "revit-pde is not installed (pip install 'revit-equivariant[bench]'): no reference "
        "row. "
    )
    notes = [n for n in [overhead_note(rows)] if n] + [
        reference + "Not in this table: The Well / hub datasets (they need the network; with a "
        "local copy, `revit fit --data.problem NAME --model.problem NAME --data.path DIR` trains "
        "on them).",
    ]
    return SectionResult([table], {"kolmogorov_comparison.png": comparison_figure(rows, curves)},
                         notes)  # fmt: skip


@dataclass
class ExactnessSetting:
    grid2: int  # 2D field side
    grid3: int  # 3D field side
    model2: dict[str, Any] = field(default_factory=dict)  # ReViT2d settings
    model3: dict[str, Any] = field(default_factory=dict)  # ReViT3d settings
    threads: int = 1


def exactness_section(s: ExactnessSetting, seed: int) -> Table:
    from .benchmark import exactness_table

    _threads(s.threads)
    return exactness_table(seed, s.grid2, s.grid3, s.model2, s.model3)


@dataclass
class Flow3dSetting:
    rows: list[str]  # 3D fit configs in configs/
    data: dict[str, Any] = field(default_factory=dict)
    model: dict[str, Any] = field(default_factory=dict)
    epochs: int | None = None
    threads: int = 1


def flow3d_section(s: Flow3dSetting, seed: int) -> Table:
    from .benchmark import o_group_table

    _threads(s.threads)
    return o_group_table(_configs(s.rows, s), seed)


@dataclass
class SeedsSetting(Flow3dSetting):  # rows, data, model, epochs, threads; plus the seed count
    seeds: int = 3


def seeds2d_section(s: SeedsSetting, seed: int) -> SectionResult:
    from icml26_shared.experiment import seeds

    from .benchmark import seeds_result

    _threads(s.threads)
    return SectionResult(*seeds_result(_configs(s.rows, s), seeds(s, seed)))


EXPERIMENT = Experiment(
    "revit-equivariant",
    [
        Section(
            "kolmogorov",
            kolmogorov_section,
            "exact C4 equivariance after training (rot90/id = 1) at a small compute overhead "
            "over the same Swin backbone; against augmentation, U-Net, FNO and revit-pde",
            KolmogorovSetting,
        ),
        Section(
            "exactness",
            exactness_section,
            "exact C4 (2D) and O (3D, 24 rotations) equivariance at random init",
            ExactnessSetting,
        ),
        Section(
            "flow3d",
            flow3d_section,
            "a trained ReViT3d stays exactly equivariant over all 24 rotations of O",
            Flow3dSetting,
        ),
        Section(
            "seeds2d",
            seeds2d_section,
            "small 2D Kolmogorov setting trained to convergence: ReViT's in-distribution MSE vs "
            "the same Swin (matched parameters), lowest rotated-data MSE (3 seeds, curves)",
            SeedsSetting,
        ),
    ],
    import_name="revit_equivariant",
)
