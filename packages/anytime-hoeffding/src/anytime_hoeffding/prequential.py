"""Prequential (test-then-train) evaluation and the null-stream false-split rate.

Paper: Amoukou, Mishra & Veloso, ICML 2026 (arXiv:2605.31239). Metrics of its evaluation:

- prequential accuracy and Cohen's kappa over the whole stream, plus windowed accuracy and
  tree size over time -> :func:`prequential`;
- the fraction of null streams on which a learner ever splits, with a Clopper-Pearson
  interval (scipy's exact binomial interval) -> :func:`false_split_rate`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from icml26_shared.bench import peak_memory
from scipy.stats import binomtest
from sklearn.metrics import cohen_kappa_score

from .anchors import make_method
from .streams import Stream

__all__ = ["PrequentialResult", "false_split_rate", "prequential"]


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
        for a in range(0, len(stream), window):
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
