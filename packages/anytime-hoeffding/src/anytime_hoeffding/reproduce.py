"""``anytime-hoeffding reproduce``: the paper's headline comparison at CPU scale, offline.

Paper: Amoukou, Mishra & Veloso, ICML 2026 (arXiv:2605.31239). One section per claim, each
calling the public API on the same streams for ours and the anchors (river, and MOA through
CapyMOA when Java is found); sizes in ``configs/reproduce/{quick,full,paper}.yaml``:

1. ``null_streams``: valid false-split control on null streams (river's default splits on noise).
2. ``prequential``: smaller trees at comparable accuracy, better after drift (and in ARF).
3. ``first_split``: evidence-driven split timing (~1/Delta^2 on weak signal).
4. ``throughput``: learning throughput against river (:func:`.benchmark.throughput_table`).
5. ``versus_anchors``: the default tree against river's HT and HAT, over seeds.
"""

from __future__ import annotations

from dataclasses import dataclass

from icml26_shared.experiment import Experiment, Section, SectionResult, seeds
from icml26_shared.progress import progress
from icml26_shared.results import Table

from .anchors import anchor_methods, compile_kernels, make_method
from .benchmark import throughput_table
from .plots import prequential_figure
from .prequential import false_split_table, first_split_table, prequential, versus_anchors_table
from .streams import make_stream


@dataclass
class PrequentialSetting:
    n: int  # instances per tree stream
    streams: list[str]
    forest_streams: list[str]
    n_forest: int


def prequential_section(s: PrequentialSetting, seed: int) -> SectionResult:
    cols = ["stream", "method", "instances", "accuracy", "kappa", "nodes", "depth",
            "first_split", "inst_per_s", "peak_mb"]  # fmt: skip
    table = Table(
        "Prequential evaluation (test-then-train)", cols,
        units={"inst_per_s": "1/s", "peak_mb": "MB"},
        notes="Test-then-train, instance by instance. nodes/depth at the end (forests: summed "
        "nodes, max depth; MOA's forest: 10 x mean size, mean depth); first_split: 1-based "
        "index; peak_mb: resident-memory increase during the run.",
    )  # fmt: skip
    compile_kernels()
    trees, forests = anchor_methods("tree"), anchor_methods("forest")
    jobs = [(name, m, s.n) for name in s.streams for m in trees]
    jobs += [(name, m, s.n_forest) for name in s.forest_streams for m in forests]
    streams, curves, drifts = {}, {}, {}
    for name, method, n in progress(jobs, desc="prequential"):
        stream = streams.setdefault((name, n), make_stream(name, n, seed))
        r = prequential(make_method(method, stream.X.shape[1], stream.n_classes, seed=seed), stream)
        table.add_row(stream=stream.name, method=method, instances=len(stream), accuracy=r.accuracy,
                      kappa=r.kappa, nodes=r.n_nodes, depth=r.depth, first_split=r.first_split,
                      inst_per_s=r.inst_per_s, peak_mb=r.peak_mb)  # fmt: skip
        if n == s.n and len(stream) >= 10_000:  # plots: the long streams only
            curves.setdefault(stream.name, {})[method] = r
            drifts[stream.name] = stream.drifts
    return SectionResult([table], {"prequential.png": prequential_figure(curves, drifts)})


@dataclass
class AnchorsSetting:  # streams compared with river's HT and HAT; digits has 1,797 rows
    n: int
    seeds: int
    versus_ht: list[str]
    versus_hat: list[str]


def anchors_section(s: AnchorsSetting, seed: int) -> Table:
    return versus_anchors_table(s.n, seeds(s, seed), s.versus_ht, s.versus_hat)


@dataclass
class NullSetting:
    n: int  # instances per null stream
    runs_ours: int
    runs_anchors: int


def null_section(s: NullSetting, seed: int) -> Table:
    return false_split_table(s.n, s.runs_ours, s.runs_anchors, seed)


@dataclass
class FirstSplitSetting:
    runs: int  # streams per row for ours; the anchors get max(2, runs // 5)


def first_split_section(s: FirstSplitSetting, seed: int) -> Table:
    return first_split_table(s.runs, seed)


@dataclass
class ThroughputSetting:
    n_tree: int
    n_river_tree: int
    n_forest: int
    repeats: int


def throughput_section(s: ThroughputSetting, seed: int) -> Table:
    compile_kernels()
    return throughput_table(s.n_tree, s.n_river_tree, s.n_forest, s.repeats, seed)


EXPERIMENT = Experiment(
    "anytime-hoeffding",
    [
        Section(
            "prequential",
            prequential_section,
            "smaller trees at comparable accuracy, better after drift, standalone and in ARF",
            PrequentialSetting,
        ),
        Section(
            "versus_anchors",
            anchors_section,
            "default leaves: >= river's HT when stationary, >= river's HAT (no larger) on drift",
            AnchorsSetting,
        ),
        Section(
            "null_streams",
            null_section,
            "P(any false split) <= alpha on null streams, where river's default splits on noise",
            NullSetting,
        ),
        Section(
            "first_split",
            first_split_section,
            "split timing driven by the evidence (~1/Delta^2 on weak signal)",
            FirstSplitSetting,
        ),
        Section(
            "throughput",
            throughput_section,
            "a compiled tree and ARF many times faster than river's",
            ThroughputSetting,
        ),
    ],  # fmt: skip
    notes=[
        "Ours: AnytimeHoeffdingTreeClassifier() at its defaults (alpha=0.05, alpha_spending='tree', "
        "loss='brier', betting='agrapa', bet_cap=0.5, n_bins=16, warmup=100, leaf_prediction='nba', "
        "drift=True); river "
        "learners at their defaults (HT: grace 200, delta 1e-7, tau 0.05) and HT with tau=0; MOA "
        "learners (CapyMOA, when Java and the `bench` extra are present) at CapyMOA's defaults."
    ],
)
