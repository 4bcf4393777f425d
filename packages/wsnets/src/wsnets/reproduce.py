"""``wsnets reproduce``: the paper's comparison at CPU scale (Dayan, Eitan, Maron, ICML 2026).

Zoos generated offline (:mod:`wsnets.comparison`); sizes in ``configs/reproduce/*.yaml``.

1. ``output_ensemble``: the output ensemble (F members at matched parameters) lowers the INR
   editing error, for every family with an equivariant head; "no edit" anchor.
2. ``invariant``: the equivalent families (DWS, NP-NFN+PE, NFT, GMN) beat the flat baselines
   on invariant tasks (digit-INR accuracy, sine R^2, zoo Kendall tau).
3. ``learnability``: logistic-regression anchor on the same digits (shared vs independent init).
4. ``symmetry``: exact (in)variance of every family (fresh networks); the DWS layer spans the
   commutant; ``nfn``'s NP/HNP layer spans against ours, both directions (least squares).

With ``nfn`` installed (``bench`` extra) its HNP-NFN, NP-NFN+PE, NF-Transformer are extra
rows of 1 and 2. Seeds: ``full`` 3 for ``output_ensemble``, else 1. ``output_ensemble``'s
``keep_rows`` (earlier ``results.json`` files) keeps the rows of the families it does not rerun.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from icml26_shared.experiment import Experiment, Section, SectionResult, seeds
from icml26_shared.results import Table

from . import comparison as cmp


@dataclass
class ZooSetting:
    widths: dict[str, int]  # width of each family (F = 1)
    seeds: int = 1  # split + initialisation seeds (the zoos are fixed by the run seed)
    fit_steps: int = 100  # Adam steps per digit SIREN
    init: str = "shared"  # digit SIRENs: one shared initialisation + a hidden permutation each
    batch_size: int = 16
    cache_dir: str | None = None  # zoo cache (default: WSNETS_CACHE or ~/.cache/wsnets)
    threads: int = 1

    def data(self, task: str, n: int, split_seed: int, zoo_seed: int):
        import torch

        torch.set_num_threads(self.threads)
        return cmp.zoo_datamodule(task, split_seed, zoo_seed, n, self.fit_steps, self.init,
                              self.batch_size, self.cache_dir)  # fmt: skip


@dataclass
class EditSetting(ZooSetting):
    n_edit: int = 160  # digit SIRENs of the editing zoo
    F_values: list[int] | None = None  # output-ensemble sizes
    models: list[str] | None = None  # editing families (default: ours + the nfn rows if installed)
    keep_rows: list[str] | None = None  # earlier results.json: rows of the families not rerun
    epochs: int = 8
    lr: float = 3e-3  # AdamW (the authors: 1e-3 for 150 epochs on ~45k INRs)


def output_ensemble_section(s: EditSetting, seed: int) -> SectionResult:
    return cmp.output_ensemble_result(s, seed)


@dataclass
class InvariantSetting(ZooSetting):
    n_images: int = 300  # digit SIRENs (classification)
    n_sine: int = 160  # sine SIRENs
    n_zoo: int = 160  # trained MLPs
    models: list[str] | None = None  # families (default: ours + the nfn rows if installed)
    epochs: int = 8
    lr: float = 5e-3  # DWSNets' classification recipe (AdamW, lr 5e-3)


def invariant_section(s: InvariantSetting, seed: int) -> Table:
    runs = {}
    for k in seeds(s, seed):
        for task, n in (("cls", s.n_images), ("sine", s.n_sine), ("zoo", s.n_zoo)):
            dm = s.data(task, n, k, seed)
            for name in s.models or cmp.invariant_models():
                run = cmp.train_task(
                    name, task, dm, cmp.width_of(s.widths, name), s.epochs, s.lr, k
                )
                runs.setdefault((name, task), []).append(run)
    return cmp.invariant_table(runs, cmp.invariant_notes(s, seeds(s, seed)))


@dataclass
class LearnabilitySetting:
    n_images: int = 300
    fit_steps: int = 100
    init: str = "shared"
    cache_dir: str | None = None
    threads: int = 1


def learnability_section(s: LearnabilitySetting, seed: int) -> Table:
    from .baselines import learnability_table

    zoo = ZooSetting({}, 1, s.fit_steps, "independent", cache_dir=s.cache_dir, threads=s.threads)
    zoos = {"independent": zoo.data("cls", s.n_images, seed, seed).zoo}
    zoo.init = s.init
    zoos[s.init] = zoo.data("cls", s.n_images, seed, seed).zoo
    return learnability_table(zoos, seed)


@dataclass
class SymmetrySetting:
    arch: list[int]  # input MLPs of the symmetry checks
    commutant_arch: list[int]  # small architecture of the SVD commutant check
    width: int = 4
    span_archs: list[list[int]] = field(default_factory=lambda: [[2, 3, 2], [2, 3, 4, 2]])


def symmetry_section(s: SymmetrySetting, seed: int) -> list[Table]:
    from .architectures import symmetry_table
    from .commutant import commutant_table

    tables = [symmetry_table(s.arch, seed, s.width), commutant_table(s.commutant_arch)]
    if cmp.nfn_available():
        from .nfn_reference import span_table

        tables.append(span_table(s.span_archs))
    return tables


# fmt: off
EXPERIMENT = Experiment("wsnets", [
    Section("output_ensemble", output_ensemble_section,
            "the output ensemble (F members, matched parameters) lowers the INR-editing error",
            EditSetting),
    Section("invariant", invariant_section,
            "the equivalent equivariant families beat flat baselines on invariant tasks",
            InvariantSetting),
    Section("learnability", learnability_section,
            "anchor: how much of the digit class a linear probe reads from the weights",
            LearnabilitySetting),
    Section("symmetry", symmetry_section,
            "every family is exactly (in)variant; the DWS layer spans the commutant",
            SymmetrySetting),
])
# fmt: on
