"""The anchors: river's online trees, run on the same arrays as ours.

Paper: Amoukou, Mishra & Veloso, ICML 2026 (arXiv:2605.31239) compares against the
Hoeffding tree (Domingos & Hulten 2000), the Hoeffding Adaptive Tree (Bifet & Gavalda 2009),
EFDT (Manapragada et al. 2018) and ARF (Gomes et al. 2017). river's implementations are
used as they are (defaults, plus the Hoeffding tree with its tie-break ``tau`` off).
MOA's implementations of the same four learners come through CapyMOA (the ``bench`` extra,
which needs a Java runtime); :func:`moa_available` says whether they can run, and every
caller skips them when it cannot.

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

__all__ = [
    "ANCHORS",
    "MOA_ANCHORS",
    "MoaAnchor",
    "OursForest",
    "OursTree",
    "RiverAnchor",
    "make_method",
    "moa_available",
]


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


class MoaAnchor:
    """A MOA classifier (through CapyMOA) driven instance by instance from numpy rows.

    The schema declares every class ``0..n_classes-1`` up front, as river learns them.
    Forest sizes come from MOA's own measurements: ``n_nodes`` is the ensemble size times
    the mean tree size, ``depth`` the mean tree depth (MOA does not expose its members).
    """

    def __init__(self, name: str, factory: Callable[[Any], Any], n_features: int,
                 n_classes: int, ensemble_size: int | None = None):  # fmt: skip
        from capymoa.stream import Schema

        feats = [f"x{j}" for j in range(n_features)]
        self.schema = Schema.from_custom(
            features=[*feats, "y"], target="y", categories={"y": [str(k) for k in range(n_classes)]}
        )
        self.name = name
        self.model = factory(self.schema)
        self.ensemble_size = ensemble_size
        self._first_split = None
        self._t = 0

    def _measurements(self) -> dict[str, float]:
        return {
            m.getName(): float(m.getValue()) for m in self.model.moa_learner.getModelMeasurements()
        }

    def _split_yet(self) -> bool:
        if self.ensemble_size is None:
            return int(self.model.moa_learner.measureTreeDepth()) > 0
        return self._measurements().get("[avg] tree size (nodes)", 1.0) > 1.0

    def test_then_train(self, X: np.ndarray, y: np.ndarray) -> np.ndarray:
        """Predict each row, then learn it; return the predictions (``-1``: no prediction)."""
        from capymoa.core import LabeledInstance

        out = np.empty(len(y), np.int64)
        model, schema = self.model, self.schema
        X = np.ascontiguousarray(X, dtype=np.float64)
        check = self._first_split is None
        for i, label in enumerate(y.tolist()):
            inst = LabeledInstance.from_array(schema, X[i], int(label))
            p = model.predict(inst)
            out[i] = -1 if p is None else int(p)
            model.train(inst)
            if check and self._split_yet():
                self._first_split = self._t + i + 1
                check = False
        self._t += len(y)
        return out

    def learn_many(self, X, y):
        """Learn rows in order (no predictions)."""
        from capymoa.core import LabeledInstance

        X = np.ascontiguousarray(X, dtype=np.float64)
        for i, label in enumerate(y.tolist()):
            self.model.train(LabeledInstance.from_array(self.schema, X[i], int(label)))
        return self

    @property
    def n_nodes(self) -> int:
        m = self._measurements()
        if self.ensemble_size is None:
            return int(m.get("tree size (nodes)", 1.0))
        return int(round(self.ensemble_size * m.get("[avg] tree size (nodes)", 1.0)))

    @property
    def depth(self) -> int:
        m = self._measurements()
        return int(
            round(m.get("tree depth" if self.ensemble_size is None else "[avg] tree depth", 0.0))
        )

    @property
    def first_split(self):
        return self._first_split


def moa_available() -> bool:
    """Whether MOA's learners can run: capymoa importable and a Java runtime found."""
    import importlib.util
    import shutil

    if importlib.util.find_spec("capymoa") is None:
        return False
    return shutil.which("java") is not None or bool(__import__("os").environ.get("JAVA_HOME"))


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


def _moa(cls_name: str, **kw):
    def factory(schema):
        import capymoa.classifier as moa

        return getattr(moa, cls_name)(schema=schema, **kw)

    return factory


# MOA at its defaults (HT: grace 200, confidence 1e-3 as MOA ships, tie threshold 0.05).
MOA_ANCHORS: dict[str, tuple[Callable[[int], Callable[[Any], Any]], int | None]] = {
    "MOA HT": (lambda seed: _moa("HoeffdingTree", random_seed=seed), None),
    "MOA HAT": (lambda seed: _moa("HoeffdingAdaptiveTree", random_seed=seed), None),
    "MOA EFDT": (lambda seed: _moa("EFDT", random_seed=seed), None),
    "MOA ARF(10)": (
        lambda seed: _moa("AdaptiveRandomForestClassifier", ensemble_size=10, random_seed=seed),
        10,
    ),
}

OURS = {
    "ours": lambda d, k, seed, **kw: AnytimeHoeffdingTreeClassifier(
        classes=list(range(k)), seed=seed, **kw
    ),
    "ours ARF(10)": lambda d, k, seed, **kw: AnytimeARFClassifier(
        n_models=10, classes=list(range(k)), seed=seed, **kw
    ),
}


def make_method(name: str, n_features: int, n_classes: int, seed: int = 0, chunk: int = 1,
                **params):  # fmt: skip
    """Build a method by name: ``"ours"``, ``"ours ARF(10)"``, one of :data:`ANCHORS` (river)
    or of :data:`MOA_ANCHORS` (CapyMOA; needs the ``bench`` extra and Java)."""
    if name in OURS:
        return OursTree(name, OURS[name](n_features, n_classes, seed, **params), chunk=chunk)
    if name in ANCHORS:
        return RiverAnchor(name, ANCHORS[name](n_features, n_classes, seed), n_features)
    if name in MOA_ANCHORS:
        if not moa_available():
            raise RuntimeError(
                f"{name} needs capymoa and a Java runtime: pip install 'anytime-hoeffding[bench]'"
            )
        factory, ensemble = MOA_ANCHORS[name]
        return MoaAnchor(name, factory(seed), n_features, n_classes, ensemble_size=ensemble)
    known = sorted(OURS) + sorted(ANCHORS) + sorted(MOA_ANCHORS)
    raise ValueError(f"unknown method {name!r}; choose one of {known}")


TREE_METHODS = ["ours", "river HT", "river HT (tau=0)", "river HAT", "river EFDT"]
FOREST_METHODS = ["ours ARF(10)", "river ARF(10)"]
NULL_ANCHORS = ["river HT"]
# MOA's learners (CapyMOA, the `bench` extra): added to every comparison when Java is found.
MOA_METHODS = {"tree": ["MOA HT", "MOA HAT", "MOA EFDT"], "forest": ["MOA ARF(10)"],
               "null": ["MOA HT"]}  # fmt: skip


def anchor_methods(kind: str) -> list[str]:
    """The methods of one comparison: ``"tree"`` (ours and every tree anchor), ``"forest"``
    (both ARF(10)s) or ``"null"`` (the anchors of the null-stream and timing checks), with
    MOA's when :func:`moa_available`."""
    base = {"tree": TREE_METHODS, "forest": FOREST_METHODS, "null": NULL_ANCHORS}
    if kind not in base:
        raise ValueError(f"unknown comparison {kind!r}; choose from {sorted(base)}")
    return base[kind] + (MOA_METHODS[kind] if moa_available() else [])


def compile_kernels() -> None:
    """Compile our numba kernels once (a tiny fit), so no timed region pays for it."""
    rng = np.random.default_rng(0)
    make_method("ours", 10, 2).learn_many(rng.uniform(size=(300, 10)), rng.integers(0, 2, 300))
