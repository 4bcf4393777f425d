"""The anytime-valid Hoeffding tree classifier (the paper's standalone learner).

Paper: S. I. Amoukou, S. Mishra, M. Veloso, "Correcting Split Selection in Online Decision
Trees via Anytime-Valid Inference", ICML 2026 (arXiv:2605.31239).

Hoeffding trees split when a fixed-sample bound on a gain difference is exceeded at
data-dependent times, which voids the bound. Here each leaf runs one betting e-process per
candidate split on the predictive loss difference between the leaf forecaster and the
candidate's child forecaster, and splits when the best e-value crosses ``|S_l| / alpha_l``
(Bonferroni within the leaf, alpha spending over the tree), so the probability of any false
split, ever, is at most ``alpha`` under arbitrary streams. Map:

- the public estimator, input validation, label bookkeeping, split log
  -> :class:`AnytimeHoeffdingTreeClassifier`;
- e-processes -> :mod:`anytime_hoeffding.eprocess`; losses and forecasters ->
  :mod:`anytime_hoeffding.predictive_loss`; alpha allocation ->
  :mod:`anytime_hoeffding.alpha_spending`; compiled engine -> :mod:`anytime_hoeffding.flat_tree`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from river import base

from .alpha_spending import SPENDINGS, log_split_threshold
from .e_detector import (
    detector_scan,
    new_detector,
    new_swap_state,
    swap_level,
    swap_scan,
)
from .eprocess import betting_code, check_cap
from .flat_tree import (
    EV_GRID,
    EV_SPLIT,
    LEAF_PREDICTIONS,
    FlatTree,
    TestSpec,
    learn_kernel,
    leaves_of,
    predict_kernel,
)
from .predictive_loss import loss_code, loss_range

__all__ = ["AnytimeHoeffdingTreeClassifier"]

MISSING_POLICIES = ("error", "route")
DRIFT_ALTERNATES = ("regrow", "fresh")
DRIFT_BLOCK = 1024  # rows learned by the deployed tree ahead of the alternate and swap test


def _check_alpha(alpha: float) -> float:
    alpha = float(alpha)
    if not (0.0 < alpha < 1.0):
        raise ValueError(f"alpha must lie in (0, 1), got {alpha}")
    return alpha


class AnytimeHoeffdingTreeClassifier(base.Classifier):
    """Online decision tree whose splits are decided by anytime-valid e-processes.

    Parameters
    ----------
    alpha
        Level in (0, 1). With ``alpha_spending="tree"``, P(any false split ever) <= alpha.
    alpha_spending
        ``"tree"`` (default; ``alpha / ((d+1)(d+2)2^d)`` at depth ``d``) or ``"node"``
        (``alpha`` at every leaf, the analogue of the Hoeffding tree's ``delta``).
    loss
        Bounded proper loss of the forecaster comparison: ``"brier"`` (default),
        ``"zero_one"`` or ``"log"`` (clipped at ``p_min``).
    betting
        Predictable bet: ``"agrapa"`` (default), ``"ons"`` or ``"mixture"``.
    bet_cap
        Cap ``c`` in (0, 1) on the bets.
    n_bins
        ``B >= 2``: each numeric feature gets ``B - 1`` candidate cut points per leaf.
    warmup
        ``n0``: instances buffered at a new leaf to fix its quantile grid before testing.
    max_depth
        Leaves at this depth stop testing (``None``: unbounded).
    leaf_prediction
        ``"mc"`` (majority class), ``"nb"`` (Gaussian naive Bayes) or ``"nba"``
        (default: whichever of the two has been more accurate at that leaf).
    max_features
        Features each new leaf may split on, drawn at random when the leaf is created
        (``None``: all; an int; ``"sqrt"``). Used by the forest.
    classes
        Declared labels (fixes the class order and rejects others). ``None``: classes are
        learned as they appear, in order of appearance.
    missing
        ``"error"`` (default: NaN/inf features raise) or ``"route"`` (NaN goes left, +-inf
        is ordered; grids use the finite values only).
    p_min
        Clip of the log-loss.
    drift
        Anytime-valid drift adaptation (default on): an e-detector on the deployed tree's
        errors starts an alternate tree, which replaces it when a betting e-process finds it
        significantly better (:mod:`anytime_hoeffding.e_detector`). With ``drift=True`` the
        ``m``-th tree ever grown (0 = the first) splits at level ``alpha / ((m+1)(m+2))``,
        so P(any false split in any tree, ever) <= alpha still holds.
    drift_alpha
        Level of all swap tests together (the ``m``-th alternate gets
        ``drift_alpha / (m (m+1))``).
    drift_patience
        Instances an alternate may run without winning before it is dropped.
    detector_threshold
        Alarm level ``1 / alpha_d`` of the Shiryaev-Roberts e-detector (its mean time to a
        false alarm on a stationary error stream is at least this many instances).
    drift_alternate
        What an alarm starts: ``"regrow"`` (default) keeps the deployed tree's splits and
        gives every leaf fresh statistics, so the leaves relearn the new concept under the
        kept partition and split again where it needs more; ``"fresh"`` starts from a
        single leaf. Either way the alternate only replaces the deployed tree when the swap
        test finds it significantly better.
    seed
        Seed of the feature-subset draws (the only randomness).

    Notes
    -----
    Candidate cut points are the quantiles of the first ``warmup`` instances reaching the
    leaf, fixed before the test starts. Per instance and candidate ``s``, the increment
    ``g = (l(f0(x), y) - l(f_s(x), y)) / L`` compares the leaf's Laplace class frequencies
    with those of the child ``x`` falls into, both computed before ``y`` is seen. The
    e-process ``prod (1 + lambda g)`` with predictable ``lambda in [0, c]`` is a
    supermartingale under ``H0: E[g | past] <= 0``, so Ville's inequality applies at any
    data-dependent time. There is no grace period: the test is checked on every instance.

    References
    ----------
    [^1]: Amoukou, Mishra & Veloso (2026). Correcting Split Selection in Online Decision
        Trees via Anytime-Valid Inference. ICML. arXiv:2605.31239.
    [^2]: Domingos & Hulten (2000). Mining high-speed data streams. KDD.
    [^3]: Waudby-Smith & Ramdas (2024). Estimating means of bounded random variables by
        betting. JRSS-B.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(size=(5000, 5))
    >>> y = np.where(X[:, 0] <= 0.5, X[:, 1] > 0.3, X[:, 2] > 0.9).astype(int)
    >>> tree = AnytimeHoeffdingTreeClassifier(seed=0).learn_many(X, y)
    >>> [(e["feature"], round(e["threshold"], 1)) for e in tree.split_log]
    [(1, 0.3), (0, 0.5), (2, 0.9)]
    >>> tree.predict_many(np.array([[0.2, 0.9, 0.5, 0.5, 0.5], [0.8, 0.5, 0.2, 0.5, 0.5]]))
    array([1, 0])
    """

    def __init__(
        self,
        alpha: float = 0.05,
        alpha_spending: str = "tree",
        loss: str = "brier",
        betting: str = "agrapa",
        bet_cap: float = 0.5,
        n_bins: int = 16,
        warmup: int = 100,
        max_depth: int | None = None,
        leaf_prediction: str = "nba",
        max_features: int | str | None = None,
        classes: Sequence[Any] | None = None,
        missing: str = "error",
        p_min: float = 1e-3,
        drift: bool = True,
        drift_alpha: float = 0.05,
        drift_patience: int = 2_000,
        detector_threshold: float = 10_000.0,
        drift_alternate: str = "regrow",
        seed: int | None = None,
    ):
        self.alpha = _check_alpha(alpha)
        if alpha_spending not in SPENDINGS:
            raise ValueError(
                f"unknown alpha_spending {alpha_spending!r}; choose one of {list(SPENDINGS)}"
            )
        self.alpha_spending = alpha_spending
        self.loss = loss
        self._loss = loss_code(loss)
        self.betting = betting
        self._betting = betting_code(betting)
        self.bet_cap = check_cap(bet_cap)
        if isinstance(n_bins, bool) or int(n_bins) != n_bins or n_bins < 2:
            raise ValueError(f"n_bins must be an integer >= 2, got {n_bins}")
        self.n_bins = int(n_bins)
        if isinstance(warmup, bool) or int(warmup) != warmup or warmup < 2:
            raise ValueError(f"warmup must be an integer >= 2, got {warmup}")
        self.warmup = int(warmup)
        if max_depth is not None and (int(max_depth) != max_depth or max_depth < 0):
            raise ValueError(f"max_depth must be None or an integer >= 0, got {max_depth}")
        self.max_depth = None if max_depth is None else int(max_depth)
        if leaf_prediction not in LEAF_PREDICTIONS:
            raise ValueError(
                f"unknown leaf_prediction {leaf_prediction!r}; choose one of "
                f"{sorted(LEAF_PREDICTIONS)}"
            )
        self.leaf_prediction = leaf_prediction
        if not (
            max_features is None
            or max_features == "sqrt"
            or (isinstance(max_features, int) and not isinstance(max_features, bool))
        ) or (isinstance(max_features, int) and max_features < 1):
            raise ValueError(
                f"max_features must be None, 'sqrt' or an int >= 1, got {max_features!r}"
            )
        self.max_features = max_features
        if missing not in MISSING_POLICIES:
            raise ValueError(
                f"unknown missing policy {missing!r}; choose one of {list(MISSING_POLICIES)}"
            )
        self.missing = missing
        p_min = float(p_min)
        if not (0.0 < p_min < 1.0):
            raise ValueError(f"p_min must lie in (0, 1), got {p_min}")
        self.p_min = p_min
        self._loss_scale = loss_range(self._loss, p_min)
        self.drift = bool(drift)
        self.drift_alpha = _check_alpha(drift_alpha)
        if int(drift_patience) != drift_patience or drift_patience < 1:
            raise ValueError(f"drift_patience must be a positive integer, got {drift_patience}")
        self.drift_patience = int(drift_patience)
        if not float(detector_threshold) > 1.0:
            raise ValueError(f"detector_threshold must be > 1, got {detector_threshold}")
        self.detector_threshold = float(detector_threshold)
        if drift_alternate not in DRIFT_ALTERNATES:
            raise ValueError(
                f"unknown drift_alternate {drift_alternate!r}; choose one of {list(DRIFT_ALTERNATES)}"
            )
        self.drift_alternate = drift_alternate
        self.classes = None if classes is None else list(classes)
        self.seed = seed
        self._rng = np.random.default_rng(seed)
        self.classes_: list[Any] = []
        self._class_index: dict[Any, int] = {}
        self._declared = classes is not None
        if classes is not None:
            classes = list(classes)
            if len(classes) < 1 or len(set(classes)) != len(classes):
                raise ValueError("classes must be a non-empty sequence of distinct labels")
            self.classes_ = classes
            self._class_index = {c: k for k, c in enumerate(classes)}
        self.n_features_in_: int | None = None
        self.feature_names_: list[Any] | None = None
        self._tree: FlatTree | None = None
        self._alt: FlatTree | None = None  # the alternate tree grown since the last alarm
        self._n_trees = 0  # trees ever grown (the alpha share of the next one)
        self._detector = new_detector()
        self._swap = new_swap_state(self._betting)
        self._n_alternates = 0
        self._alt_start = 0
        self._challenger = False
        self._tail = [0.0, 0.0]
        self._split_log: list[dict[str, Any]] = []
        self.drift_log: list[dict[str, Any]] = []
        self.n_seen = 0

    # ------------------------------------------------------------------ validation
    def _check_X(self, X, name="X") -> np.ndarray:
        X = np.asarray(X)
        if X.dtype.kind not in "biuf":
            raise ValueError(f"{name} must be numeric, got dtype {X.dtype}")
        if X.ndim != 2:
            raise ValueError(f"{name} must be 2-d (n_samples, n_features), got shape {X.shape}")
        X = np.ascontiguousarray(X, dtype=np.float64)
        if self.n_features_in_ is not None and X.shape[1] != self.n_features_in_:
            raise ValueError(
                f"{name} has {X.shape[1]} features but the tree was built on {self.n_features_in_}"
            )
        bad = ~np.isfinite(X)
        if bad.any():
            if self.missing == "error":
                raise ValueError(
                    f"{name} contains NaN or inf values; set missing='route' to accept them"
                )
            X = X.copy()
            X[np.isnan(X)] = -np.inf
        return X

    def _encode(self, y) -> tuple[np.ndarray, list[int]]:
        """Label indices and the positions where a new (undeclared) class first appears."""
        y = np.asarray(y)
        if y.ndim != 1:
            raise ValueError(f"y must be 1-d, got shape {y.shape}")
        uniq, inv = np.unique(y, return_inverse=True)
        firsts = []
        if self._declared:
            missing = [u for u in uniq.tolist() if u not in self._class_index]
            if missing:
                raise ValueError(
                    f"labels {missing[:5]} are not among the declared classes {self.classes_}"
                )
        else:
            first_pos = np.full(uniq.size, len(y), np.int64)
            np.minimum.at(first_pos, inv, np.arange(len(y)))
            for k in np.argsort(first_pos, kind="stable"):
                u = uniq[k].item() if hasattr(uniq[k], "item") else uniq[k]
                if u not in self._class_index:
                    firsts.append((int(first_pos[k]), u))
        codes = np.empty(uniq.size, np.int64)
        new = dict(self._class_index)
        for _, u in firsts:
            new[u] = len(new)
        for k, u in enumerate(uniq.tolist()):
            codes[k] = new[u]
        return codes[inv], firsts

    # ------------------------------------------------------------------ learning
    def learn_many(self, X, y, sample_weight=None) -> AnytimeHoeffdingTreeClassifier:
        """Learn a batch in order: ``X (n, d)`` numeric, ``y (n,)``, optional weights ``(n,)``.

        Equivalent to calling :meth:`learn_one` on each row in turn. An empty batch is a
        no-op.
        """
        X_arr = np.asarray(X)
        if X_arr.size == 0 and np.asarray(y).size == 0:
            return self
        return self._learn_rows(self._check_X(X_arr), y, sample_weight)

    def _learn_rows(self, X, y, sample_weight=None):
        y_arr = np.asarray(y)
        n = X.shape[0]
        if y_arr.shape[0] != n:
            raise ValueError(f"X has {n} rows but y has {y_arr.shape[0]} labels")
        if sample_weight is None:
            w = np.ones(n, np.float64)
        else:
            w = np.ascontiguousarray(sample_weight, dtype=np.float64)
            if w.shape != (n,):
                raise ValueError(f"sample_weight must have shape ({n},), got {w.shape}")
            if not np.all(np.isfinite(w)) or (w < 0).any():
                raise ValueError("sample_weight must be finite and non-negative")
        codes, firsts = self._encode(y_arr)
        if self._tree is None:
            self.n_features_in_ = X.shape[1]
            self._tree = self._new_tree(max(2, len(self.classes_) + len(firsts)))
        err_main = np.full(n, -1.0)
        err_alt = np.full(n, -1.0)
        start = 0
        for pos, label in firsts:
            self._segment(X, codes, w, start, pos, False, err_main, err_alt)
            self._class_index[label] = len(self.classes_)
            self.classes_.append(label)
            for tree in (self._tree, self._alt):
                if tree is not None and len(self.classes_) > tree.kcap:
                    tree.grow_classes(2 * len(self.classes_))
            self._segment(X, codes, w, pos, pos + 1, True, err_main, err_alt)
            start = pos + 1
        self._segment(X, codes, w, start, n, False, err_main, err_alt)
        self.n_seen += n
        return self

    def _new_tree(self, kcap, like: FlatTree | None = None, t: int = 0) -> FlatTree:
        if like is not None and self.drift_alternate == "regrow":
            tree = like.regrown(t)
        else:
            tree = FlatTree(self.n_features_in_, self.n_bins, self.warmup, self._betting, kcap)
        m = self._n_trees
        tree.alpha = self.alpha / ((m + 1) * (m + 2)) if self.drift else self.alpha
        tree.index = m
        self._n_trees += 1
        return tree

    def _segment(self, X, y, w, start, stop, skip_first, err_main, err_alt):
        """Rows ``start..stop-1`` in blocks of :data:`DRIFT_BLOCK` rows (with drift on), so a
        replaced tree never learns far past its swap; the outcome is the same in any
        batching."""
        if not self.drift:
            if start < stop:
                self._run(self._tree, X, y, w, start, stop, skip_first, err_main)
            return
        for a in range(start, stop, DRIFT_BLOCK):
            b = min(stop, a + DRIFT_BLOCK)
            self._block(X, y, w, a, b, skip_first and a == start, err_main, err_alt)

    def _start_alternate(self, tree, t, challenger=False):
        self._alt = tree
        self._n_alternates += 1
        self._swap = new_swap_state(self._betting)
        self._alt_start = t
        self._challenger = challenger
        self._tail = [0.0, 0.0]  # errors of (deployed, alternate) over the patience's 2nd half

    def _alarm(self, a):
        t_alarm = self.n_seen + a + 1
        self._start_alternate(self._new_tree(self._tree.kcap, like=self._tree, t=t_alarm), t_alarm)
        self.drift_log.append({"t": t_alarm, "event": "alarm"})

    def _block(self, X, y, w, start, stop, skip_first, err_main, err_alt):
        """Rows ``start..stop-1`` through the deployed tree, the drift detector and (when
        one is running) the alternate tree and its swap test, in row order: an alarm, a
        swap or the end of an alternate's patience takes effect at its own row."""
        self._run(self._tree, X, y, w, start, stop, skip_first, err_main)
        i = start
        while i < stop:
            if self._alt is None:
                a = detector_scan(self._detector, err_main, i, stop,
                                  math.log(self.detector_threshold))  # fmt: skip
                if a < 0:
                    return
                self._alarm(a)
                i = a + 1
                continue
            end = min(stop, self._alt_start - self.n_seen + self.drift_patience)
            if self._challenger:  # a challenger gives way to a change of the concept
                a = detector_scan(self._detector, err_main, i, end,
                                  math.log(self.detector_threshold))  # fmt: skip
                if a >= 0:
                    self.drift_log.append({"t": self.n_seen + a + 1, "event": "drop"})
                    self._alarm(a)
                    i = a + 1
                    continue
            self._run(self._alt, X, y, w, i, end, skip_first and i == start, err_alt)
            level = swap_level(self.drift_alpha, self._n_alternates)
            m = swap_scan(self._swap, err_main, err_alt, i, end, math.log(1.0 / level),
                          self._betting, self.bet_cap)  # fmt: skip
            tail = max(i, self._alt_start + self.drift_patience // 2 - self.n_seen)
            if tail < end:
                both = (err_main[tail:end] >= 0) & (err_alt[tail:end] >= 0)
                self._tail[0] += float(err_main[tail:end][both].sum())
                self._tail[1] += float(err_alt[tail:end][both].sum())
            done = self.n_seen + end - self._alt_start >= self.drift_patience
            simpler = (
                done and self._challenger and self._alt.n_nodes < self._tree.n_nodes
                and self._tail[1] <= self._tail[0]
            )  # fmt: skip
            if m >= 0 or simpler:  # the alternate has learned rows up to end: it takes over
                old = self._tree.index
                t_swap = self.n_seen + (m if m >= 0 else end - 1) + 1
                self._split_log = sorted(
                    (e for e in self._split_log if e["tree"] != old or e["t"] <= t_swap),
                    key=lambda e: e["t"],
                )  # the replaced tree's splits after the swap never happened in row order
                self._tree, self._alt = self._alt, None
                self._detector = new_detector()
                self.drift_log.append({"t": t_swap, "event": "swap" if m >= 0 else "simplify"})
                nxt = t_swap - self.n_seen  # the first row after the swap
                err_main[nxt:end] = err_alt[nxt:end]  # the new deployed tree's errors there
                if end < stop:
                    self._run(self._tree, X, y, w, end, stop, False, err_main)
                if self._tree.kept_splits and self._tree.n_nodes > 1:
                    # a regrown tree took over: a fresh one-leaf tree challenges it, and
                    # replaces it at the end of its patience if it is smaller and made no
                    # more errors over the second half of that patience
                    self._start_alternate(self._new_tree(self._tree.kcap), t_swap, challenger=True)
                    self.drift_log.append({"t": t_swap + 1, "event": "challenge"})
                i = nxt
                continue
            if done:
                self._alt = None
                self.drift_log.append({"t": self.n_seen + end, "event": "drop"})
            i = end

    def _run(self, tree, X, y, w, start, stop, skip_first, err):
        i = start
        spec = TestSpec(len(self.classes_), self._loss, self._loss_scale, self.p_min,
                        self._betting, self.bet_cap, LEAF_PREDICTIONS[self.leaf_prediction])  # fmt: skip
        while i < stop:
            nxt, event, s = learn_kernel(
                X, y, w, i, stop, skip_first and i == start, tree.arrays(), spec, err
            )
            if event == EV_GRID:
                self._on_grid(tree, s)
            elif event == EV_SPLIT:
                self._on_split(tree, s, t=self.n_seen + nxt)
            i = nxt

    @staticmethod
    def _node_of_slot(t, s) -> int:
        return int(np.flatnonzero(t.node_slot[: t.n_nodes] == s)[0])

    def _on_grid(self, t, s):
        node = self._node_of_slot(t, s)
        depth = int(t.depth[node])
        d = t.d
        if self.max_features is None:
            allowed = set(range(d))
        else:
            m = max(1, round(math.sqrt(d))) if self.max_features == "sqrt" else self.max_features
            allowed = set(self._rng.choice(d, size=min(m, d), replace=False).tolist())
        test = self.max_depth is None or depth < self.max_depth
        t.fix_grid(
            s, allowed,
            lambda n_active: log_split_threshold(t.alpha, depth, n_active, self.alpha_spending),
            len(self.classes_), test=test,
        )  # fmt: skip
        self._maybe_collapse(t, node)

    def _maybe_collapse(self, t, node):
        """Undo a split that a regrown alternate kept but the new concept does not use.

        Checked (row-exactly) when a leaf under a kept split finishes its warm-up and its
        sibling already has: if both leaves' deployed predictors give one and the same class
        on all their warm-up rows, the split changes no decision on the recent data and the
        two leaves merge (:meth:`FlatTree.collapse`). Merging never adds a split, so the
        false-split guarantee is untouched.
        """
        parent = t.parent_of(node)
        if parent < 0 or parent not in t.kept_splits:
            return
        kids = (int(t.left[parent]), int(t.right[parent]))
        if any(t.feature[k] >= 0 or not t.ready[t.node_slot[k]] for k in kids):
            return
        rows = np.concatenate([t.warm_x[t.node_slot[k], : t.nwarm[t.node_slot[k]]] for k in kids])
        K = len(self.classes_)
        out = np.empty((rows.shape[0], K), np.float64)
        predict_kernel(rows, t.arrays(), K, LEAF_PREDICTIONS[self.leaf_prediction], out)
        if np.unique(np.argmax(out, axis=1)).size == 1:
            t.collapse(parent)

    def _on_split(self, tree, s, t):
        node = self._node_of_slot(tree, s)
        j, b, logk = tree.best_candidate(s)
        threshold = float(tree.grid[s, j, b])
        n_active = int(tree.active[s].sum())
        depth = int(tree.depth[node])
        tree.split(node, j, b, t)
        self._split_log.append(
            {
                "t": int(t),
                "node": node,
                "depth": depth,
                "feature": j if self.feature_names_ is None else self.feature_names_[j],
                "threshold": threshold,
                "log_e_value": logk,
                "e_value": math.exp(min(logk, 700.0)),
                "n_candidates": n_active,
                "tree": tree.index,
            }
        )

    # ------------------------------------------------------------------ prediction
    def predict_proba_many(self, X) -> np.ndarray:
        """Class probabilities ``(n, K)``, columns in the order of :attr:`classes_`."""
        X_arr = np.asarray(X)
        K = len(self.classes_)
        if X_arr.size == 0:
            return np.zeros((0, K))
        return self._predict_rows(self._check_X(X_arr))

    def _predict_rows(self, X):
        K = len(self.classes_)
        if self._tree is None or K == 0:
            return np.full((X.shape[0], K), 1.0 / max(K, 1))
        out = np.empty((X.shape[0], K), np.float64)
        t = self._tree
        predict_kernel(X, t.arrays(), K, LEAF_PREDICTIONS[self.leaf_prediction], out)
        return out

    def predict_many(self, X) -> np.ndarray:
        """Most probable class of every row, shape ``(n,)``."""
        proba = self.predict_proba_many(X)
        if proba.shape[1] == 0:
            raise ValueError("the tree has not seen any label yet")
        return np.asarray(self.classes_)[np.argmax(proba, axis=1)]

    def apply(self, X) -> np.ndarray:
        """Index of the leaf node each row reaches, shape ``(n,)``."""
        X = self._check_X(X)
        if self._tree is None:
            return np.zeros(X.shape[0], np.int64)
        t = self._tree
        return leaves_of(X, t.feature, t.threshold, t.left, t.right)

    # ------------------------------------------------------------------ river-style API
    def _row(self, x: Mapping):
        """One dict instance as a ``(1, d)`` row in the learned feature order.

        The feature set is fixed by the first ``learn_one``; features absent later are
        missing values (routed left, skipped by naive Bayes), features never seen are ignored.
        """
        if not isinstance(x, Mapping):
            raise ValueError(f"x must be a dict of feature -> value, got {type(x).__name__}")
        if self.feature_names_ is None:
            if self.n_features_in_ is not None:
                raise ValueError("this tree was trained with the array API; use *_many")
            names = list(x.keys())
        else:
            names = self.feature_names_
        try:
            row = np.array([[float(x[k]) if k in x else -np.inf for k in names]], np.float64)
        except (TypeError, ValueError):
            raise ValueError("feature values must be numeric") from None
        row[np.isnan(row)] = -np.inf
        return row, names

    def learn_one(self, x: Mapping, y, w: float = 1.0) -> AnytimeHoeffdingTreeClassifier:
        """Learn one instance given as a ``{feature: value}`` dict (river-compatible)."""
        row, names = self._row(x)
        if not names:
            return self
        self._learn_rows(row, [y], None if w == 1.0 else [w])
        if self.feature_names_ is None:
            self.feature_names_ = names

    def predict_proba_one(self, x: Mapping) -> dict[Any, float]:
        """``{label: probability}`` for one dict instance (empty before any label)."""
        if not self.classes_:
            return {}
        if self.feature_names_ is None and self.n_features_in_ is None:
            return {c: 1.0 / len(self.classes_) for c in self.classes_}
        row, _ = self._row(x)
        p = self._predict_rows(row)[0]
        return {c: float(v) for c, v in zip(self.classes_, p, strict=True)}

    def predict_one(self, x: Mapping):
        """Most probable label for one dict instance (``None`` before any label)."""
        proba = self.predict_proba_one(x)
        return max(proba, key=proba.get) if proba else None

    @property
    def _multiclass(self) -> bool:  # river's tag: any number of classes
        return True

    # ------------------------------------------------------------------ inspection
    @property
    def split_log(self) -> list[dict[str, Any]]:
        """One entry per split: time ``t`` (1-based instance index), node, depth, feature,
        threshold, e-value (and its log), number of candidates tested at that leaf, and
        ``tree``: which tree split (0 = the first tree, ``m`` = the ``m``-th alternate)."""
        return list(self._split_log)

    @property
    def n_nodes(self) -> int:
        """Number of nodes (internal + leaves)."""
        return 1 if self._tree is None else int(self._tree.n_nodes)

    @property
    def n_leaves(self) -> int:
        """Number of leaves."""
        return (self.n_nodes + 1) // 2

    @property
    def depth(self) -> int:
        """Depth of the deepest leaf (a single leaf has depth 0)."""
        t = self._tree
        return 0 if t is None else int(t.depth[: t.n_nodes].max())

    @property
    def first_split(self) -> int | None:
        """Instance index of the first split (``None`` if the tree never split)."""
        return self._split_log[0]["t"] if self._split_log else None

    @property
    def bytes_per_leaf(self) -> int:
        """Preallocated bytes of statistics per leaf (bounded, ``O(n0 d + d B K)``)."""
        return 0 if self._tree is None else self._tree.bytes_per_leaf()

    def leaf_log_e_values(self, node: int = 0) -> np.ndarray:
        """``log K`` of every candidate at leaf ``node``, shape ``(d, B-1)`` (-inf inactive)."""
        t = self._tree
        s = int(t.node_slot[node])
        if s < 0:
            raise ValueError(f"node {node} is not a leaf")
        return np.where(t.active[s], t.estate[s, :, :, 0], -np.inf)

    def to_dict(self) -> dict[str, Any]:
        """Nested dict of the tree structure (feature, threshold, children / leaf counts)."""
        t = self._tree

        def rec(node):
            if t is None or t.feature[node] < 0:
                if t is None:
                    return {"leaf": True, "counts": {}}
                s = t.node_slot[node]
                c = t.prior[s] + t.counts[s]
                return {
                    "leaf": True,
                    "counts": {lab: float(c[k]) for k, lab in enumerate(self.classes_)},
                }
            f = int(t.feature[node])
            return {
                "feature": f if self.feature_names_ is None else self.feature_names_[f],
                "threshold": float(t.threshold[node]),
                "left": rec(int(t.left[node])),
                "right": rec(int(t.right[node])),
            }

        return rec(0)

    def describe(self, label_names: Sequence[str] | None = None) -> str:
        """Indented text rendering of the tree (``label_names``: text for the classes)."""
        lines = []
        names = list(label_names) if label_names is not None else None

        def feat(f):
            return f"x[{f}]" if isinstance(f, (int, np.integer)) else str(f)

        def rec(n, indent):
            if n.get("leaf"):
                counts = n["counts"]
                if names is not None:
                    counts = {names[k]: v for k, v in enumerate(counts.values())}
                total = sum(counts.values())
                top = max(counts, key=counts.get) if counts else None
                lines.append(
                    " " * indent
                    + f"leaf -> {top} ({total:g} seen: "
                    + ", ".join(f"{k}: {v:g}" for k, v in counts.items())
                    + ")"
                )
                return
            lines.append(" " * indent + f"{feat(n['feature'])} <= {n['threshold']:.4g}")
            rec(n["left"], indent + 2)
            lines.append(" " * indent + f"{feat(n['feature'])} > {n['threshold']:.4g}")
            rec(n["right"], indent + 2)

        rec(self.to_dict(), 0)
        return "\n".join(lines)

    def __repr__(self) -> str:
        return (
            f"AnytimeHoeffdingTreeClassifier(alpha={self.alpha}, betting={self.betting!r}, "
            f"loss={self.loss!r}, n_nodes={self.n_nodes})"
        )
