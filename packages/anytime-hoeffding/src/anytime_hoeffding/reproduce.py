"""``anytime-hoeffding reproduce``: the paper's headline comparison at CPU scale, offline.

Paper: Amoukou, Mishra & Veloso, ICML 2026 (arXiv:2605.31239). Its claims, and the table
that checks each one here (anchors and ours on the same streams, in the same process):

1. Valid false-split control on null streams (river's default splits on noise)
   -> "False splits on null streams": fraction of runs with >= 1 split, Clopper-Pearson 95%.
2. Smaller trees at comparable accuracy, better after drift, standalone and in ARF
   -> "Prequential evaluation": accuracy, kappa, nodes, depth, first split, inst/s, memory,
   plus the plots of windowed accuracy (with drift points) and tree size over time.
3. Evidence-driven split timing (hundreds of instances on strong signal, ~1/Delta^2 on weak
   signal, instead of river's fixed tie-break time) -> "First split instant".
4. Throughput -> "Learning throughput" (:mod:`anytime_hoeffding.benchmark`).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from icml26_shared.progress import progress
from icml26_shared.results import Report, Table

from .anchors import make_method, moa_available
from .benchmark import throughput_table
from .prequential import false_split_rate, prequential
from .streams import drifting_prior, make_stream, noise, planted_threshold, weak_signal

__all__ = ["SETTINGS", "reproduce"]

TREE_METHODS = ["ours", "river HT", "river HT (tau=0)", "river HAT", "river EFDT"]
FOREST_METHODS = ["ours ARF(10)", "river ARF(10)"]
# MOA's learners (CapyMOA, the `bench` extra): added to every table when Java is found.
MOA_TREE_METHODS = ["MOA HT", "MOA HAT", "MOA EFDT"]
MOA_FOREST_METHODS = ["MOA ARF(10)"]


def _methods(moa: bool):
    trees = TREE_METHODS + (MOA_TREE_METHODS if moa else [])
    forests = FOREST_METHODS + (MOA_FOREST_METHODS if moa else [])
    return trees, forests, ["river HT"] + (["MOA HT"] if moa else [])


SETTINGS = {
    "quick": {
        "n": 20_000,
        "streams": ["sea", "agrawal"],
        "forest_streams": ["sea"],
        "n_forest": 5_000,
        "null_runs_ours": 50,
        "null_runs_river": 10,
        "n_null": 10_000,
        "timing_runs": 5,
        "bench": {"n_tree": 30_000, "n_river_tree": 5_000, "n_forest": 2_000, "repeats": 3},
    },
    "full": {
        "n": 30_000,
        "streams": [
            "sea",
            "agrawal",
            "hyperplane",
            "rbf_drift",
            "led_drift",
            "stagger",
            "phishing",
            "bananas",
            "image_segments",
            "shuttle",
            "digits",
        ],  # fmt: skip
        "forest_streams": ["sea", "agrawal"],
        "n_forest": 20_000,
        "null_runs_ours": 200,
        "null_runs_river": 50,
        "n_null": 20_000,
        "timing_runs": 20,
        "bench": {"n_tree": 100_000, "n_river_tree": 20_000, "n_forest": 5_000, "repeats": 5},
    },
}


def _prequential_table(cfg, seed, curves, moa):
    table = Table(
        "Prequential evaluation (test-then-train)",
        [
            "stream",
            "method",
            "instances",
            "accuracy",
            "kappa",
            "nodes",
            "depth",
            "first_split",
            "inst_per_s",
            "peak_mb",
        ],  # fmt: skip
        units={"inst_per_s": "1/s", "peak_mb": "MB"},
        notes="Ours is fed in chunks of 50 (each chunk predicted before it is learned: staler, "
        "never better, than instance-by-instance); river and MOA instance by instance. nodes and "
        "depth at the end of the stream (forests: summed nodes, max depth; MOA's forest: 10 x "
        "mean tree size, mean depth, as MOA reports them); first_split: 1-based "
        "instance index. peak_mb: resident-memory increase during the run.",
    )
    trees, forests, _ = _methods(moa)
    jobs = [(s, m, cfg["n"]) for s in cfg["streams"] for m in trees]
    jobs += [(s, m, cfg["n_forest"]) for s in cfg["forest_streams"] for m in forests]
    cache = {}
    for stream_name, method, n in progress(jobs, desc="prequential"):
        key = (stream_name, n)
        if key not in cache:
            cache[key] = make_stream(stream_name, n, seed)
        s = cache[key]
        r = prequential(make_method(method, s.X.shape[1], s.n_classes, seed=seed), s)
        table.add_row(stream=s.name, method=method, instances=len(s), accuracy=r.accuracy,
                      kappa=r.kappa, nodes=r.n_nodes, depth=r.depth, first_split=r.first_split,
                      inst_per_s=r.inst_per_s, peak_mb=r.peak_mb)  # fmt: skip
        if n == cfg["n"] and len(s) >= 10_000:  # plots: the long streams only
            curves.setdefault(s.name, {"drifts": s.drifts})[method] = r
    return table


def _null_table(cfg, seed, moa):
    table = Table(
        "False splits on null streams",
        [
            "stream",
            "method",
            "runs",
            "instances_per_run",
            "false_split_rate",
            "ci_low",
            "ci_high",
            "mean_nodes",
            "inst_per_s",
        ],  # fmt: skip
        units={"inst_per_s": "1/s"},
        notes="Null streams: 10 U[0,1] features; 'noise' has fair-coin labels, "
        "'drifting_prior' has P(y=1) switching 0.2 <-> 0.8 every 5,000 instances, independent "
        "of the features. false_split_rate: fraction of runs whose tree ever split (every split "
        "is false here); [ci_low, ci_high]: Clopper-Pearson 95%. Ours: alpha = 0.05 over the "
        "whole tree.",
    )
    n = cfg["n_null"]
    nulls = {
        "noise": lambda sd: noise(n, seed=sd),
        "drifting_prior": lambda sd: drifting_prior(n, seed=sd),
    }
    anchors = _methods(moa)[2]
    jobs = [(k, m, runs) for k in nulls for m, runs in
            [("ours", cfg["null_runs_ours"])] + [(a, cfg["null_runs_river"]) for a in anchors]]  # fmt: skip
    for name, method, runs in progress(jobs, desc="null streams"):
        r = false_split_rate(method, nulls[name], runs, seed=seed)
        table.add_row(stream=name, method=method, runs=r.runs, instances_per_run=n,
                      false_split_rate=r.rate, ci_low=r.low, ci_high=r.high,
                      mean_nodes=r.mean_nodes, inst_per_s=r.instances / r.seconds)  # fmt: skip
    return table


def _timing_table(cfg, seed, moa):
    table = Table(
        "First split instant",
        ["stream", "method", "runs", "median_first_split", "q25", "q75", "never_split"],
        notes="Median (and quartiles) over runs of the instance index of the first split; "
        "planted: y = 1[x3 > 0.6] with 10% flipped labels; weak(eps): P(y=1|x) = 0.5 + eps * "
        "sign(x0 - 0.5), so Delta scales as eps^2 and 1/Delta^2 predicts a ratio of ~4 between "
        "eps = 0.05 and eps = 0.1. Streams are capped at 40,000 instances (never_split counts "
        "runs that did not split by then).",
    )
    makers = {
        "planted": lambda sd: planted_threshold(10_000, seed=sd),
        "weak(0.1)": lambda sd: weak_signal(40_000, eps=0.1, seed=sd),
        "weak(0.05)": lambda sd: weak_signal(40_000, eps=0.05, seed=sd),
    }
    runs = cfg["timing_runs"]
    jobs = [(k, m) for k in makers for m in ["ours", *_methods(moa)[2]]]
    for name, method in progress(jobs, desc="first split"):
        r_runs = runs if method == "ours" else max(2, runs // 5)
        times = []
        for r in range(r_runs):
            s = makers[name](seed * 1_000 + r)
            times.append(_exact_first_split(method, s))
        got = np.array([t for t in times if t is not None], dtype=float)
        table.add_row(stream=name, method=method, runs=r_runs,
                      median_first_split=float(np.median(got)) if got.size else None,
                      q25=float(np.quantile(got, 0.25)) if got.size else None,
                      q75=float(np.quantile(got, 0.75)) if got.size else None,
                      never_split=r_runs - int(got.size))  # fmt: skip
    return table


def _exact_first_split(method, stream):
    """Exact first-split index: ours from its split log, anchors by per-instance tracking."""
    m = make_method(method, stream.X.shape[1], stream.n_classes)
    for X, y in stream.chunks(2_000):
        if method == "ours":
            m.learn_many(X, y)
        else:
            m.test_then_train(X, y)  # anchors track their first split instance by instance
        if m.first_split is not None:
            return m.first_split
    return None


def _plots(report, curves):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(curves)
    ncols = min(len(names), 4)
    nrows = -(-len(names) // ncols)
    fig, grid = plt.subplots(2 * nrows, ncols, figsize=(5.5 * ncols, 7 * nrows), squeeze=False)
    for c, name in enumerate(names):
        axes = grid[2 * (c // ncols) : 2 * (c // ncols) + 2, :]
        c = c % ncols
        info = curves[name]
        for method, r in info.items():
            if method == "drifts":
                continue
            style = {"lw": 2.2} if method.startswith("ours") else {"lw": 1.1, "alpha": 0.8}
            axes[0, c].plot(r.curve_t, r.curve_accuracy, label=method, **style)
            axes[1, c].plot(r.curve_t, r.curve_nodes, label=method, **style)
        for ax in axes[:, c]:
            for d in info["drifts"]:
                ax.axvline(d, color="grey", ls="--", lw=0.8)
        axes[0, c].set_title(f"{name}: windowed accuracy (1,000 instances)")
        axes[1, c].set_title(f"{name}: tree size")
        axes[1, c].set_xlabel("instances")
        axes[1, c].set_ylabel("nodes")
        axes[0, c].set_ylabel("accuracy")
    for k in range(len(names), nrows * ncols):  # empty panels of the last row
        grid[2 * (k // ncols), k % ncols].set_visible(False)
        grid[2 * (k // ncols) + 1, k % ncols].set_visible(False)
    grid[0, 0].legend(fontsize=8)
    fig.tight_layout()
    report.save_figure(fig, "prequential.png")


def reproduce(out: Path, quick: bool = False, seed: int = 0) -> Report:
    """Run the headline comparison (anchors in the same run) and return its report."""
    cfg = SETTINGS["quick" if quick else "full"]
    report = Report("anytime-hoeffding", out)
    # compile the kernels once, outside every timed region
    make_method("ours", 10, 2).learn_many(*(lambda s: (s.X, s.y))(noise(300, seed=seed)))
    curves: dict = {}
    moa = moa_available()
    report.add_table(_prequential_table(cfg, seed, curves, moa))
    report.add_table(_null_table(cfg, seed, moa))
    report.add_table(_timing_table(cfg, seed, moa))
    report.add_table(throughput_table(seed=seed, **cfg["bench"]))
    _plots(report, curves)
    report.note(
        "Ours: AnytimeHoeffdingTreeClassifier(alpha=0.05, alpha_spending='tree', loss='brier', "
        "betting='agrapa', bet_cap=0.5, n_bins=16, warmup=100, leaf_prediction='nba'); river "
        "learners at their defaults (HT: grace 200, delta 1e-7, tau 0.05) and HT with tau=0. "
        + (
            "MOA learners (CapyMOA) at CapyMOA's defaults (HT: grace 200, confidence 1e-3, "
            "tie threshold 0.05, Gaussian numeric observer). "
            if moa
            else "MOA's learners were skipped (no capymoa or no Java runtime). "
        )
        + "The paper's full text was not available: the split rule is a reconstruction from its "
        "abstract (see README), and its numbers are not compared here."
    )
    return report
