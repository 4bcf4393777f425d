"""Throughput benchmark: our compiled tree/forest against river's, same stream, same process.

Paper: Amoukou, Mishra & Veloso, ICML 2026 (arXiv:2605.31239). The issue's performance
targets: a single tree on 10 numeric features at >= 50k instances/s on one core and >= 5x
river's ``HoeffdingTreeClassifier``; ARF(10) >= 5x river's ``ARFClassifier``; bounded,
reported memory per leaf. Timings use :func:`icml26_shared.bench.time_it` (warm-up run,
then medians of repeats); learning only (no predictions), each repeat on a fresh model.
"""

from __future__ import annotations

import time

import numpy as np
from icml26_shared.bench import peak_memory, time_it
from icml26_shared.results import Table

from .anchors import make_method
from .streams import sea

__all__ = ["speedups", "throughput_table"]


def _learn_timing(name, stream, seed, repeats):
    cpu = []  # process CPU seconds of each call: robust to other jobs on a shared machine

    def run():
        t0 = time.process_time()
        m = make_method(name, stream.X.shape[1], stream.n_classes, seed=seed)
        m.learn_many(stream.X, stream.y)
        cpu.append(time.process_time() - t0)
        return m

    with peak_memory() as mem:
        timing = time_it(run, warmup=1 if name.startswith("ours") else 0, repeats=repeats)
    return timing, mem.delta_mb, len(stream) / float(np.median(cpu[-repeats:]))


def throughput_table(
    n_tree: int = 50_000, n_river_tree: int = 20_000, n_forest: int = 5_000,
    repeats: int = 3, seed: int = 0,
) -> Table:  # fmt: skip
    """Learning throughput of ours vs river on SEA with 10 numeric features (7 irrelevant).

    river's learners are timed on the first ``n_river_tree`` / ``n_forest`` instances of the
    same stream (they are slower; the ratio compares instances per second).
    """
    table = Table(
        "Learning throughput (SEA, 10 numeric features, abrupt drifts)",
        [
            "learner",
            "method",
            "instances",
            "inst_per_s",
            "spread_s",
            "speedup_vs_river",
            "cpu_inst_per_s",
            "cpu_speedup_vs_river",
            "peak_mb",
            "bytes_per_leaf",
        ],  # fmt: skip
        units={
            "inst_per_s": "1/s",
            "cpu_inst_per_s": "1/s",
            "spread_s": "s",
            "peak_mb": "MB",
            "bytes_per_leaf": "B",
        },  # fmt: skip
        notes="Median of repeats after one warm-up run (ours; compiles the kernels); learning "
        "only; river runs instance by instance on dicts, ours on numpy batches. "
        "speedup_vs_river = ours inst/s / river inst/s on the same stream (wall clock); "
        "cpu_*: the same from process CPU time, which other jobs on a shared machine do not "
        "inflate (both learners run on one thread).",
    )
    for learner, ours_name, river_name, n_ours, n_river in (
        ("single tree", "ours", "river HT", n_tree, n_river_tree),
        ("ARF(10)", "ours ARF(10)", "river ARF(10)", n_forest, n_forest),
    ):
        s_ours = sea(n_ours, seed=seed)
        s_river = sea(n_river, seed=seed)
        t_ours, mb_ours, cpu_ours = _learn_timing(ours_name, s_ours, seed, repeats)
        t_river, mb_river, cpu_river = _learn_timing(river_name, s_river, seed, repeats)
        ips_ours = t_ours.throughput(n_ours)
        ips_river = t_river.throughput(n_river)
        model = t_ours.result.model
        bpl = (
            model.bytes_per_leaf
            if hasattr(model, "bytes_per_leaf")
            else model.trees[0].bytes_per_leaf
        )
        table.add_row(learner=learner, method=ours_name, instances=n_ours, inst_per_s=ips_ours,
                      spread_s=t_ours.spread, speedup_vs_river=ips_ours / ips_river,
                      cpu_inst_per_s=cpu_ours, cpu_speedup_vs_river=cpu_ours / cpu_river,
                      peak_mb=mb_ours, bytes_per_leaf=bpl)  # fmt: skip
        table.add_row(learner=learner, method=river_name, instances=n_river,
                      inst_per_s=ips_river, spread_s=t_river.spread, speedup_vs_river=1.0,
                      cpu_inst_per_s=cpu_river, cpu_speedup_vs_river=1.0,
                      peak_mb=mb_river)  # fmt: skip
    return table


def speedups(table: Table) -> dict[str, float]:
    """``{learner: ours / river}`` from a :func:`throughput_table` (for checks and notes)."""
    ips = {(r["learner"], r["method"].startswith("ours")): r["inst_per_s"] for r in table.rows}
    return {lrn: ips[(lrn, True)] / ips[(lrn, False)] for lrn, _ in ips if (lrn, False) in ips}
