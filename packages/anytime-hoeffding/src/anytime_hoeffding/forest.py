"""Adaptive Random Forest with anytime-valid Hoeffding trees as base learners.

Paper: Amoukou, Mishra & Veloso, ICML 2026 (arXiv:2605.31239), which plugs its tree into
ARF (Gomes et al. 2017, "Adaptive random forests for evolving data stream
classification", Machine Learning 106). ARF's ingredients map to:

1. Online bagging: each tree learns each instance with weight ``w ~ Poisson(lambda)``
   (``lambda = 6``, Gomes et al. 2017, Sec. 4) -> the ``sample_weight`` of
   :meth:`AnytimeHoeffdingTreeClassifier.learn_many`; the weight enters the bet as
   ``min(lambda_t w, c)``, which keeps the bet predictable (``w`` is drawn independently
   of ``y``).
2. Random feature subsets of size ``sqrt(d)`` per leaf -> the tree's ``max_features``.
3. Per-tree drift detection on its error stream: ADWIN(0.01) warnings start a background
   tree, ADWIN(0.001) drifts replace the tree by its background (or a fresh tree)
   (Gomes et al. 2017, Alg. 1; as in MOA, only an *increase* of the error counts)
   -> :meth:`AnytimeARFClassifier.learn_many`, using river's
   ``ADWIN`` (established code rather than a re-implementation).
4. Voting weighted by each tree's prequential accuracy since its last reset.

Batches are processed in order in sub-chunks of ``detection_chunk`` instances: a tree's
errors on a sub-chunk are computed with the tree as it was at the sub-chunk's start, and
warnings/drifts take effect at the sub-chunk's end. With ``detection_chunk=1`` (and in
:meth:`learn_one`) this is instance-by-instance ARF.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from .tree import AnytimeHoeffdingTreeClassifier

__all__ = ["AnytimeARFClassifier"]


def _error_increase(detector, err: float) -> bool:
    """Feed ``err`` to an ADWIN detector; True when it detects a change *up* in the error.

    As MOA's ``ADWINChangeDetector`` (used by Gomes et al. 2017): a change counts only when
    the error estimate after ADWIN drops its old window exceeds the one before the input. A
    young tree whose error falls as it learns is not a drift (otherwise it is replaced by a
    fresh tree, whose error falls again, and so on).
    """
    before = detector.estimation
    detector.update(err)
    return bool(detector.drift_detected and detector.estimation > before)


class _Member:
    """One forest member: its tree, detectors, accuracy since reset and background tree."""

    def __init__(self, tree, drift, warning):
        self.tree = tree
        self.drift = drift
        self.warning = warning
        self.background = None
        self.n_correct = 0.0
        self.n_seen = 0.0


class AnytimeARFClassifier:
    """Adaptive Random Forest whose trees split by anytime-valid e-processes.

    Parameters
    ----------
    n_models
        Number of trees.
    max_features
        Features each leaf may split on (``"sqrt"``, an int, or ``None`` for all).
    lambda_value
        Poisson rate of the online-bagging weights.
    drift_delta, warning_delta
        Confidences of the ADWIN drift and warning detectors (river's ``ADWIN``).
    classes
        Declared labels (required for the array API to agree across trees; inferred from
        the first batch when ``None``).
    detection_chunk
        Sub-chunk size of the error monitoring (see the module docstring).
    seed
        Seed of the bagging weights and of the trees' feature subsets.
    tree_params
        Further keyword arguments of every :class:`AnytimeHoeffdingTreeClassifier`
        (``alpha``, ``betting``, ``n_bins``, ``warmup`` ...).

    References
    ----------
    [^1]: Gomes et al. (2017). Adaptive random forests for evolving data stream
        classification. Machine Learning 106.
    [^2]: Amoukou, Mishra & Veloso (2026). ICML. arXiv:2605.31239.

    Examples
    --------
    >>> import numpy as np
    >>> from anytime_hoeffding.streams import sea
    >>> s = sea(4000, seed=0)
    >>> arf = AnytimeARFClassifier(n_models=3, classes=[0, 1], seed=0)
    >>> arf = arf.learn_many(s.X[:3000], s.y[:3000])
    >>> acc = (arf.predict_many(s.X[3000:]) == s.y[3000:]).mean()
    >>> bool(acc > 0.75), arf.n_nodes >= 3
    (True, True)
    """

    def __init__(
        self,
        n_models: int = 10,
        max_features: int | str | None = "sqrt",
        lambda_value: float = 6.0,
        drift_delta: float = 0.001,
        warning_delta: float = 0.01,
        classes=None,
        detection_chunk: int = 100,
        seed: int | None = None,
        **tree_params: Any,
    ):
        if int(n_models) != n_models or n_models < 1:
            raise ValueError(f"n_models must be an integer >= 1, got {n_models}")
        if not (lambda_value > 0):
            raise ValueError(f"lambda_value must be > 0, got {lambda_value}")
        for name, v in (("drift_delta", drift_delta), ("warning_delta", warning_delta)):
            if not (0.0 < v < 1.0):
                raise ValueError(f"{name} must lie in (0, 1), got {v}")
        if int(detection_chunk) != detection_chunk or detection_chunk < 1:
            raise ValueError(f"detection_chunk must be an integer >= 1, got {detection_chunk}")
        self.n_models = int(n_models)
        self.max_features = max_features
        self.lambda_value = float(lambda_value)
        self.drift_delta = float(drift_delta)
        self.warning_delta = float(warning_delta)
        self.classes = None if classes is None else list(classes)
        self.detection_chunk = int(detection_chunk)
        self.seed = seed
        self.tree_params = dict(tree_params)
        self._rng = np.random.default_rng(seed)
        # validate the tree parameters once, eagerly
        AnytimeHoeffdingTreeClassifier(max_features=max_features, **self.tree_params)
        self._members: list[_Member] | None = None
        self.n_drifts = 0
        self.n_warnings = 0
        self.feature_names_ = None

    # ------------------------------------------------------------------ members
    def _new_tree(self):
        params = {"drift": False, **self.tree_params}  # ARF's own ADWIN handles drift
        return AnytimeHoeffdingTreeClassifier(
            max_features=self.max_features, classes=self.classes,
            seed=int(self._rng.integers(2**31)), **params,
        )  # fmt: skip

    def _detector(self, delta):
        from river.drift import ADWIN

        return ADWIN(delta=delta)

    def _init(self, y):
        if self.classes is None:
            self.classes = sorted(np.unique(np.asarray(y)).tolist())
        self._members = [
            _Member(self._new_tree(), self._detector(self.drift_delta),
                    self._detector(self.warning_delta))
            for _ in range(self.n_models)
        ]  # fmt: skip

    @property
    def trees(self) -> list[AnytimeHoeffdingTreeClassifier]:
        """The foreground trees."""
        return [] if self._members is None else [m.tree for m in self._members]

    @property
    def n_nodes(self) -> int:
        """Total number of nodes over the foreground trees."""
        return sum(t.n_nodes for t in self.trees)

    @property
    def depth(self) -> int:
        """Largest depth over the foreground trees."""
        return max((t.depth for t in self.trees), default=0)

    @property
    def first_split(self):
        """Earliest first split over the foreground trees (``None`` if none split)."""
        fs = [t.first_split for t in self.trees if t.first_split is not None]
        return min(fs) if fs else None

    # ------------------------------------------------------------------ learning
    def learn_many(self, X, y, sample_weight=None) -> AnytimeARFClassifier:
        """Learn a batch in order (see the module docstring for the sub-chunk semantics)."""
        X = np.asarray(X)
        y = np.asarray(y)
        if X.size == 0 and y.size == 0:
            return self
        if X.ndim != 2 or y.shape != (X.shape[0],):
            raise ValueError(f"X must be (n, d) and y (n,); got {X.shape} and {y.shape}")
        if sample_weight is not None:
            sample_weight = np.asarray(sample_weight, dtype=np.float64)
            if sample_weight.shape != y.shape or (sample_weight < 0).any():
                raise ValueError("sample_weight must be non-negative with one value per row")
        if self._members is None:
            self._init(y)
        for a in range(0, X.shape[0], self.detection_chunk):
            sl = slice(a, a + self.detection_chunk)
            self._learn_chunk(X[sl], y[sl], None if sample_weight is None else sample_weight[sl])
        return self

    def _learn_chunk(self, X, y, base_w):
        n = X.shape[0]
        for m in self._members:
            correct = m.tree.predict_many(X) == y if m.tree.classes_ else np.zeros(n, bool)
            m.n_correct += float(correct.sum())
            m.n_seen += n
            warned = drifted = False
            for c in correct:
                err = 0.0 if c else 1.0
                warned |= _error_increase(m.warning, err)
                drifted |= _error_increase(m.drift, err)
            w = self._rng.poisson(self.lambda_value, n).astype(np.float64)
            if base_w is not None:
                w = w * base_w
            m.tree.learn_many(X, y, w)
            if m.background is not None:
                m.background.learn_many(X, y, w)
            if drifted:
                self.n_drifts += 1
                m.tree = m.background if m.background is not None else self._new_tree()
                m.background = None
                m.drift = self._detector(self.drift_delta)
                m.warning = self._detector(self.warning_delta)
                m.n_correct = m.n_seen = 0.0
            elif warned and m.background is None:
                self.n_warnings += 1
                m.background = self._new_tree()
                m.warning = self._detector(self.warning_delta)

    # ------------------------------------------------------------------ prediction
    def predict_proba_many(self, X) -> np.ndarray:
        """Accuracy-weighted average of the trees' probabilities, shape ``(n, K)``."""
        X = np.asarray(X)
        if self._members is None:
            raise ValueError("the forest has not learned anything yet")
        K = len(self.classes)
        out = np.zeros((X.shape[0], K))
        total = 0.0
        for m in self._members:
            if not m.tree.classes_:
                continue
            weight = (m.n_correct + 1.0) / (m.n_seen + 2.0)
            p = m.tree.predict_proba_many(X)
            out[:, : p.shape[1]] += weight * p
            total += weight
        return out / total if total > 0 else np.full_like(out, 1.0 / K)

    def predict_many(self, X) -> np.ndarray:
        """Most probable class of every row, shape ``(n,)``."""
        return np.asarray(self.classes)[np.argmax(self.predict_proba_many(X), axis=1)]

    # ------------------------------------------------------------------ river-style API
    def _row(self, x: Mapping):
        if self.feature_names_ is None:
            self.feature_names_ = list(x.keys())
        names = self.feature_names_
        if len(x) != len(names) or any(k not in x for k in names):
            raise ValueError("the feature set changed between calls")
        return np.array([[float(x[k]) for k in names]])

    def learn_one(self, x: Mapping, y, w: float = 1.0) -> AnytimeARFClassifier:
        """Learn one dict instance (instance-by-instance ARF)."""
        if self.classes is None:
            raise ValueError("declare classes=... to use learn_one with the forest")
        chunk, self.detection_chunk = self.detection_chunk, 1
        try:
            self.learn_many(self._row(x), np.asarray([y]), None if w == 1.0 else [w])
        finally:
            self.detection_chunk = chunk
        return self

    def predict_proba_one(self, x: Mapping) -> dict:
        """``{label: probability}`` for one dict instance."""
        if self._members is None:
            return {}
        p = self.predict_proba_many(self._row(x))[0]
        return {c: float(v) for c, v in zip(self.classes, p, strict=True)}

    def predict_one(self, x: Mapping):
        """Most probable label for one dict instance."""
        proba = self.predict_proba_one(x)
        return max(proba, key=proba.get) if proba else None
