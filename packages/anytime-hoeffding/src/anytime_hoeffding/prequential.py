"""Prequential (test-then-train) evaluation and the null-stream false-split rate.

Paper: Amoukou, Mishra & Veloso, ICML 2026 (arXiv:2605.31239). Metrics of its evaluation:

- prequential accuracy and Cohen's kappa over the whole stream, plus windowed accuracy and
  tree size over time -> :func:`prequential`;
- the fraction of null streams on which a learner ever splits, with a Clopper-Pearson
  interval (scipy's exact binomial interval) -> :func:`false_split_rate`, and its table over
  ours and the anchors -> :func:`false_split_table`;
- the instant of the first split (evidence-driven timing) -> :func:`first_split_instant`,
  over planted and weak-signal streams -> :func:`first_split_table`;
- the default tree against river's HT and HAT over seeds -> :func:`versus_anchors_table`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from icml26_shared.bench import peak_memory
from icml26_shared.progress import progress
from icml26_shared.results import Table
from scipy.stats import binomtest
from sklearn.metrics import cohen_kappa_score

from .anchors import anchor_methods, make_method
from .streams import Stream, drifting_prior, noise, planted_threshold, weak_signal

__all__ = [
    "PrequentialResult",
    "false_split_rate",
    "false_split_table",
    "first_split_instant",
    "first_split_table",
    "prequential",
    "versus_anchors_table",
]


@dataclass
class PrequentialResult:
    """Outcome of one prequential run of one method on one stream."""

    method: str
    stream: str
    n: int
    accuracy: float
    kappa: float
    n_nodes: int
    depth: int
    first_split: int | None
    seconds: float
    peak_mb: float
    curve_t: list[int] = field(default_factory=list)
    curve_accuracy: list[float] = field(default_factory=list)
    curve_nodes: list[int] = field(default_factory=list)

    @property
    def inst_per_s(self) -> float:
        return self.n / self.seconds if self.seconds > 0 else float("inf")


def prequential(method, stream: Stream, window: int = 1_000) -> PrequentialResult:
    """Test-then-train ``method`` (see :mod:`anytime_hoeffding.anchors`) over ``stream``.

    The stream is fed in windows of ``window`` instances; after each, the windowed accuracy
    and the model size are recorded. Time and peak resident memory cover the whole run.
    """
    preds = np.empty(len(stream), np.int64)
    curve_t, curve_acc, curve_nodes = [], [], []
    seconds = 0.0
    with peak_memory() as mem:
        for a in progress(range(0, len(stream), window), desc=f"{method.name} on {stream.name}"):
            X, y = stream.X[a : a + window], stream.y[a : a + window]
            t0 = time.perf_counter()
            p = method.test_then_train(X, y)
            seconds += time.perf_counter() - t0
            preds[a : a + len(y)] = p
            curve_t.append(a + len(y))
            curve_acc.append(float((p == y).mean()))
            curve_nodes.append(int(method.n_nodes))
    ok = preds >= 0
    acc = float((preds == stream.y).mean())
    kappa = float(cohen_kappa_score(stream.y[ok], preds[ok])) if ok.sum() > 1 else 0.0
    return PrequentialResult(
        method.name, stream.name, len(stream), acc, kappa, int(method.n_nodes),
        int(method.depth), method.first_split, seconds, mem.delta_mb,
        curve_t, curve_acc, curve_nodes,
    )  # fmt: skip


@dataclass
class FalseSplitRate:
    """Fraction of null streams with at least one split, with a 95% exact interval."""

    method: str
    runs: int
    n_split: int
    low: float
    high: float
    seconds: float
    mean_nodes: float
    instances: int

    @property
    def rate(self) -> float:
        return self.n_split / self.runs


def false_split_rate(
    method_name: str, null_stream: Callable[[int], Stream], runs: int, seed: int = 0, **params
) -> FalseSplitRate:
    """Run ``method_name`` on ``runs`` independent null streams ``null_stream(seed_r)``.

    Only learning is run (no predictions), and a run counts as a false split as soon as the
    model has more than one node at the end of the stream.
    """
    if runs < 1:
        raise ValueError(f"runs must be >= 1, got {runs}")
    n_split, nodes, instances, seconds = 0, 0, 0, 0.0
    for r in range(runs):
        s = null_stream(seed * 100_003 + r)
        m = make_method(method_name, s.X.shape[1], s.n_classes, seed=r, **params)
        t0 = time.perf_counter()
        m.learn_many(s.X, s.y)
        seconds += time.perf_counter() - t0
        n_split += int(m.n_nodes > 1)
        nodes += m.n_nodes
        instances += len(s)
    ci = binomtest(n_split, runs).proportion_ci(confidence_level=0.95, method="exact")
    return FalseSplitRate(method_name, runs, n_split, float(ci.low), float(ci.high), seconds,
                          nodes / runs, instances)  # fmt: skip


def first_split_instant(method_name: str, stream: Stream, chunk: int = 2_000) -> int | None:
    """The 1-based instance index at which ``method_name`` first splits on ``stream``.

    Ours reads it from its split log; the anchors track it instance by instance while they
    test-then-train. ``None`` when the learner never splits on the stream.
    """
    m = make_method(method_name, stream.X.shape[1], stream.n_classes)
    for X, y in stream.chunks(chunk):
        if method_name.startswith("ours"):
            m.learn_many(X, y)
        else:
            m.test_then_train(X, y)
        if m.first_split is not None:
            return m.first_split
    return None


def false_split_table(n: int, runs_ours: int, runs_anchors: int, seed: int = 0) -> Table:
    """False-split rates of ours and the anchors on the two null streams (Clopper-Pearson 95%).

    Args:
        n: Instances per null stream.
        runs_ours: Independent streams for our tree.
        runs_anchors: Independent streams for each anchor (slower).
        seed: Seed of the first stream.
    """
    cols = ["stream", "method", "runs", "instances_per_run", "false_split_rate", "ci_low",
            "ci_high", "mean_nodes", "inst_per_s"]  # fmt: skip
    table = Table(
        "False splits on null streams", cols, units={"inst_per_s": "1/s"},
        notes="10 U[0,1] features; 'noise': fair-coin labels; 'drifting_prior': P(y=1) switching "
        "0.2 <-> 0.8 every 5,000 instances, independent of the features. false_split_rate: "
        "fraction of runs whose tree ever split (every split is false here); [ci_low, ci_high]: "
        "Clopper-Pearson 95%. Ours: alpha = 0.05 over the whole tree.",
    )  # fmt: skip
    nulls = {"noise": noise, "drifting_prior": drifting_prior}
    jobs = [(k, "ours", runs_ours) for k in nulls]
    jobs += [(k, a, runs_anchors) for k in nulls for a in anchor_methods("null")]
    for name, method, runs in progress(sorted(jobs, key=lambda j: list(nulls).index(j[0])),
                                       desc="null streams"):  # fmt: skip
        r = false_split_rate(method, lambda sd, f=nulls[name]: f(n, seed=sd), runs, seed=seed)
        table.add_row(stream=name, method=method, runs=r.runs, instances_per_run=n,
                      false_split_rate=r.rate, ci_low=r.low, ci_high=r.high,
                      mean_nodes=r.mean_nodes, inst_per_s=r.instances / r.seconds)  # fmt: skip
    return table


def first_split_table(runs: int, seed: int = 0) -> Table:
    """When ours and the anchors first split on planted and weak-signal streams.

    Args:
        runs: Streams per row for ours; the anchors get ``max(2, runs // 5)``.
        seed: Seed of the first stream.
    """
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
    jobs = [(k, m) for k in makers for m in ["ours", *anchor_methods("null")]]
    for name, method in progress(jobs, desc="first split"):
        k = runs if method == "ours" else max(2, runs // 5)
        times = [first_split_instant(method, makers[name](seed * 1_000 + r)) for r in range(k)]
        got = np.array([t for t in times if t is not None], dtype=float)
        q = np.quantile(got, [0.5, 0.25, 0.75]) if got.size else [None] * 3
        table.add_row(stream=name, method=method, runs=k, median_first_split=q[0], q25=q[1],
                      q75=q[2], never_split=k - int(got.size))  # fmt: skip
    return table


def versus_anchors_table(n: int, seed_list: list[int], versus_ht: list[str],
                         versus_hat: list[str]) -> Table:  # fmt: skip
    """Ours at its defaults against river's HT (``versus_ht`` streams) and river's HAT
    (``versus_hat`` streams): accuracy and final size, mean and sd over ``seed_list``.

    Args:
        n: Instances per stream (digits has 1,797).
        seed_list: Stream and learner seeds.
        versus_ht: Streams compared with river's Hoeffding tree.
        versus_hat: Streams compared with river's Hoeffding Adaptive Tree.
    """
    from .anchors import compile_kernels
    from .streams import make_stream

    compile_kernels()
    cols = ["stream", "method", "seeds", "accuracy", "accuracy_sd", "nodes", "nodes_sd",
            "ours_minus_anchor", "diff_sd", "ours_not_larger"]  # fmt: skip
    table = Table(
        "Default leaves against river's trees (mean and sd over seeds)", cols,
        notes="Test-then-train instance by instance, every learner at its defaults; ours: "
        "adaptive naive-Bayes leaves scored by the split test, children inheriting their "
        "parent's statistics, e-detector drift adaptation. ours_minus_anchor: mean over seeds "
        "of the paired accuracy difference (its sd in diff_sd); ours_not_larger: seeds where "
        "our final tree has at most the anchor's nodes. Streams: led (24 binary features, 10% "
        "noise), digits (scikit-learn's 1,797 images, shuffled per seed), stagger_drift, sea "
        "(3 abrupt drifts), agrawal_drift (function 0 -> 2 at mid-stream).",
    )  # fmt: skip
    jobs = [(st, "river HT") for st in versus_ht] + [(st, "river HAT") for st in versus_hat]
    for name, anchor in progress(jobs, desc="versus anchors"):
        res: dict[str, list[tuple[float, int]]] = {"ours": [], anchor: []}
        stream_name = name
        for sd in seed_list:
            stream = make_stream(name, n, sd)
            stream_name = stream.name
            for method in res:
                model = make_method(method, stream.X.shape[1], stream.n_classes, seed=sd)
                r = prequential(model, stream)
                res[method].append((r.accuracy, r.n_nodes))
        ours, anc = np.array(res["ours"]), np.array(res[anchor])
        diff = ours[:, 0] - anc[:, 0]
        for method, vals in res.items():
            a = np.array(vals)
            row = dict(stream=stream_name, method=method, seeds=len(a), accuracy=a[:, 0].mean(),
                       accuracy_sd=a[:, 0].std(ddof=1) if len(a) > 1 else None,
                       nodes=a[:, 1].mean(), nodes_sd=a[:, 1].std(ddof=1) if len(a) > 1 else None)  # fmt: skip
            if method == "ours":
                row.update(ours_minus_anchor=diff.mean(),
                           diff_sd=diff.std(ddof=1) if len(a) > 1 else None,
                           ours_not_larger=f"{int((ours[:, 1] <= anc[:, 1]).sum())}/{len(a)}")  # fmt: skip
            table.add_row(**row)
    return table
