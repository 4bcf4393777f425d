"""The anchors: river's online trees, run on the same arrays as ours.

Paper: Amoukou, Mishra & Veloso, ICML 2026 (arXiv:2605.31239) compares against the
Hoeffding tree (Domingos & Hulten 2000), the Hoeffding Adaptive Tree (Bifet & Gavalda 2009),
EFDT (Manapragada et al. 2018) and ARF (Gomes et al. 2017). river's implementations are
used as they are (defaults, plus the Hoeffding tree with its tie-break ``tau`` off).
MOA's trees (through CapyMOA) are not wired in this version.

Every anchor exposes ``test_then_train(X, y) -> predictions`` (instance by instance:
predict, then learn), ``n_nodes``, ``depth`` and ``first_split``, like
:class:`OursTree` / :class:`OursForest`, the wrappers of this package's learners.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .forest import AnytimeARFClassifier
from .tree import AnytimeHoeffdingTreeClassifier

__all__ = ["ANCHORS", "OursForest", "OursTree", "RiverAnchor", "make_method"]


class RiverAnchor:
    """A river classifier driven instance by instance from numpy rows."""

    def __init__(self, name: str, model: Any, n_features: int):
        self.name = name
        self.model = model
        self.keys = [f"x{j}" for j in range(n_features)]
        self._first_split = None
        self._t = 0

    def _split_yet(self) -> bool:
        models = getattr(self.model, "models", None) or [self.model]
        return any(m._n_active_leaves + m._n_inactive_leaves > 1 for m in models)

    def test_then_train(self, X: np.ndarray, y: np.ndarray) -> np.ndarray:
        """Predict each row, then learn it; return the predictions (``-1``: no prediction)."""
        out = np.empty(len(y), np.int64)
        model, keys = self.model, self.keys
        rows = X.tolist()
        labels = y.tolist()
        check = self._first_split is None
        for i, (row, label) in enumerate(zip(rows, labels, strict=True)):
            x = dict(zip(keys, row, strict=True))
            p = model.predict_one(x)
            out[i] = -1 if p is None else p
            model.learn_one(x, label)
            if check and self._split_yet():
                self._first_split = self._t + i + 1
                check = False
        self._t += len(y)
        return out

    def learn_many(self, X, y):
        """Learn rows in order (no predictions)."""
        keys = self.keys
        for row, label in zip(X.tolist(), y.tolist(), strict=True):
            self.model.learn_one(dict(zip(keys, row, strict=True)), label)
        return self

    @property
    def n_nodes(self) -> int:
        m = self.model
        if hasattr(m, "models"):  # river's forests
            return int(sum(t.n_nodes or 1 for t in m.models))
        return int(m.n_nodes or 1)

    @property
    def depth(self) -> int:
        m = self.model
        if hasattr(m, "models"):
            return int(max((t.height or 1) - 1 for t in m.models))
        return int((m.height or 1) - 1)

    @property
    def first_split(self):
        return self._first_split


class OursTree:
    """Prequential driver of :class:`AnytimeHoeffdingTreeClassifier` in chunks.

    A chunk is predicted with the tree as it was before the chunk, then learned; with
    ``chunk=1`` this is instance-by-instance test-then-train (a larger chunk only makes our
    predictions staler, never better).
    """

    def __init__(self, name: str, model, chunk: int = 50):
        self.name, self.model, self.chunk = name, model, int(chunk)

    def test_then_train(self, X, y):
        out = np.empty(len(y), np.int64)
        m = self.model
        for a in range(0, len(y), self.chunk):
            xb, yb = X[a : a + self.chunk], y[a : a + self.chunk]
            out[a : a + len(yb)] = m.predict_many(xb) if _has_classes(m) else -1
            m.learn_many(xb, yb)
        return out

    def learn_many(self, X, y):
        self.model.learn_many(X, y)
        return self

    n_nodes = property(lambda self: self.model.n_nodes)
    depth = property(lambda self: self.model.depth)
    first_split = property(lambda self: self.model.first_split)


OursForest = OursTree  # same chunked driver; the forest has the same batch API


def _has_classes(m):
    return bool(getattr(m, "classes_", None)) or getattr(m, "_members", None) is not None


def _river(factory: Callable[[], Any]):
    return lambda d, n_classes, seed: factory(seed)


def _ht(**kw):
    from river.tree import HoeffdingTreeClassifier

    return HoeffdingTreeClassifier(**kw)


def _hat(seed):
    from river.tree import HoeffdingAdaptiveTreeClassifier

    return HoeffdingAdaptiveTreeClassifier(seed=seed)


def _efdt(seed):
    from river.tree import ExtremelyFastDecisionTreeClassifier

    return ExtremelyFastDecisionTreeClassifier()


def _arf(seed):
    from river.forest import ARFClassifier

    return ARFClassifier(n_models=10, seed=seed)


ANCHORS: dict[str, Callable[[int, int, int], Any]] = {
    "river HT": _river(lambda seed: _ht()),
    "river HT (tau=0)": _river(lambda seed: _ht(tau=0.0)),
    "river HAT": _river(_hat),
    "river EFDT": _river(_efdt),
    "river ARF(10)": _river(_arf),
}

OURS = {
    "ours": lambda d, k, seed, **kw: AnytimeHoeffdingTreeClassifier(
        classes=list(range(k)), seed=seed, **kw
    ),
    "ours ARF(10)": lambda d, k, seed, **kw: AnytimeARFClassifier(
        n_models=10, classes=list(range(k)), seed=seed, **kw
    ),
}


def make_method(name: str, n_features: int, n_classes: int, seed: int = 0, chunk: int = 50,
                **params):  # fmt: skip
    """Build a method by name: ``"ours"``, ``"ours ARF(10)"`` or one of :data:`ANCHORS`."""
    if name in OURS:
        return OursTree(name, OURS[name](n_features, n_classes, seed, **params), chunk=chunk)
    if name in ANCHORS:
        return RiverAnchor(name, ANCHORS[name](n_features, n_classes, seed), n_features)
    raise ValueError(f"unknown method {name!r}; choose one of {sorted(OURS) + sorted(ANCHORS)}")
