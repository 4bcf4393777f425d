"""Flat-array engine of the anytime-valid Hoeffding tree (compiled with numba).

Paper: Amoukou, Mishra & Veloso, "Correcting Split Selection in Online Decision Trees via
Anytime-Valid Inference", ICML 2026 (arXiv:2605.31239). Map of the predictive e-split to code:

1. Routing ``x -> leaf`` through flat node arrays (feature, threshold, left, right, slot),
   ``x[f] <= threshold`` goes left -> :func:`route`.
2. Warm-up: the first ``n0`` instances reaching a leaf are buffered; their per-feature
   quantiles fix the candidate grid ``S_l = {(j, c)}`` (``B - 1`` cut points per feature)
   *before* any test starts -> :meth:`FlatTree.fix_grid`.
3. Per instance and candidate: increment ``g = (l(f0, y) - l(f_s, y)) / L`` of the leaf vs
   child Laplace forecasters, fed to that candidate's betting e-process; then the counts are
   updated (predict first, then learn: the forecasts are predictable) -> :func:`learn_kernel`.
4. Decision: split at the first ``t`` where ``max_s log K^s >= log(|S_l| / alpha_l)``, on
   ``argmax_s K^s``; children start fresh counts and fresh e-processes, and inherit the
   parent's child counts as a *prediction* prior only -> :meth:`FlatTree.split`.
5. Leaf predictors: majority class, Gaussian naive Bayes, adaptive (the better of the two,
   tracked prequentially) -> :func:`predict_kernel`.
6. Drift (this package's construction, see :mod:`anytime_hoeffding.e_detector`): the
   alternate tree keeps the deployed tree's splits with fresh leaves ->
   :meth:`FlatTree.regrown`; two sibling leaves merge back into one -> :meth:`FlatTree.collapse`.

Leaf statistics live in preallocated arrays indexed by a leaf *slot*: class counts
``(S, K)``, cumulative bin-class counts ``(S, d, B-1, K)`` (the left-child counts of every
candidate) and e-process states ``(S, d, B-1, n_state)``; there are no per-instance Python
objects on the fast path. Splits and grid fixing are rare events handled in numpy.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from numba import njit

from .eprocess import AGRAPA, eprocess_step, init_state, n_state
from .predictive_loss import BRIER, laplace_loss, prob_loss

__all__ = ["EV_DONE", "EV_GRID", "EV_SPLIT", "FlatTree", "TestSpec", "TreeArrays", "learn_kernel",
           "predict_kernel", "route"]  # fmt: skip

EV_DONE, EV_GRID, EV_SPLIT = 0, 1, 2
MC, NB, NBA = 0, 1, 2
LEAF_PREDICTIONS = {"mc": MC, "nb": NB, "nba": NBA}


@njit(cache=True, inline="always")
def route(x, feature, threshold, left, right):
    """Index of the node (a leaf) that the row ``x`` reaches; ``x[f] <= thr`` goes left."""
    node = 0
    while feature[node] >= 0:
        node = left[node] if x[feature[node]] <= threshold[node] else right[node]
    return node


@njit(cache=True, inline="always")
def _gauss_update(x, s, k, w, gauss):
    for j in range(x.shape[0]):
        xj = x[j]
        if not math.isfinite(xj):
            continue
        w0 = gauss[s, k, j, 0]
        w1 = w0 + w
        delta = xj - gauss[s, k, j, 1]
        mean = gauss[s, k, j, 1] + w * delta / w1
        gauss[s, k, j, 2] += w * delta * (xj - mean)
        gauss[s, k, j, 1] = mean
        gauss[s, k, j, 0] = w1


@njit(cache=True, inline="always")
def _argmax(v, n):
    best = 0
    for k in range(1, n):
        if v[k] > v[best]:
            best = k
    return best


class TreeArrays(NamedTuple):
    """The arrays of one tree as the compiled kernels take them (one typed object).

    Node arrays ``(Nn,)``: ``feature`` (-1 marks a leaf), ``threshold``, ``left``, ``right``,
    ``node_slot`` (the leaf's statistics slot, -1 if internal). Slot arrays, leading axis
    ``S``: warm-up buffer ``nwarm, warm_x (S, n0, d), warm_y, warm_w``; test state
    ``ready, testing, grid (S, d, B-1), active, log_thr``; class counts ``counts (S, K)``
    (own data) and ``prior (S, K)`` (inherited from the parent at the split); left-child
    counts ``cum (S, d, B-1, K)``; e-process states ``estate (S, d, B-1, n_state)``;
    naive-Bayes statistics ``gauss (S, K, d, 3)``; prequential hits of the two leaf
    predictors ``mc_correct, nb_correct (S,)``, and of the two child predictors of every
    candidate ``cand_hits (S, d, B-1, 2)`` (majority class, naive Bayes).
    """

    feature: np.ndarray
    threshold: np.ndarray
    left: np.ndarray
    right: np.ndarray
    node_slot: np.ndarray
    nwarm: np.ndarray
    warm_x: np.ndarray
    warm_y: np.ndarray
    warm_w: np.ndarray
    ready: np.ndarray
    testing: np.ndarray
    grid: np.ndarray
    active: np.ndarray
    log_thr: np.ndarray
    counts: np.ndarray
    prior: np.ndarray
    cum: np.ndarray
    estate: np.ndarray
    gauss: np.ndarray
    mc_correct: np.ndarray
    nb_correct: np.ndarray
    cand_hits: np.ndarray


class TestSpec(NamedTuple):
    """Scalars of the split test: classes ``K``, loss code and range ``L``, log-loss clip,
    betting code, bet cap and leaf-prediction code (``MC``, ``NB`` or ``NBA``); ``fast``
    lets two classes with the Brier loss and aGRAPA bets take the kernel's scalar path
    (bit-identical to the general one, which ``fast=False`` forces)."""

    n_classes: int
    loss: int
    loss_scale: float
    p_min: float
    betting: int
    cap: float
    leaf_mode: int
    fast: bool = True


@njit(cache=True, inline="always")
def _nb_terms(x, s, gauss, n_classes, lik, tot):
    """Per-class, per-feature Gaussian log-likelihoods ``lik[k, j]`` of slot ``s`` and their
    sums ``tot[k]``. Unbiased variances (``ddof = 1``); a feature whose class-``k`` Gaussian
    has no spread yet (or is non-finite in ``x``) contributes 0, as in river's and MOA's
    naive-Bayes leaves."""
    d = gauss.shape[2]
    for k in range(n_classes):
        tot[k] = 0.0
    for j in range(d):
        xj = x[j]
        for k in range(n_classes):
            if not math.isfinite(xj):
                lik[k, j] = 0.0
                continue
            wk = gauss[s, k, j, 0]
            var = gauss[s, k, j, 2] / (wk - 1.0) if wk > 1.0 else 0.0
            if var <= 0.0:  # no spread seen: the feature says nothing (river's convention)
                lik[k, j] = 0.0
            else:
                dx = xj - gauss[s, k, j, 1]
                lik[k, j] = -0.5 * math.log(2.0 * math.pi * var) - dx * dx / (2.0 * var)
            tot[k] += lik[k, j]


@njit(cache=True, inline="always")
def _nb_factors(tot, n_classes, e):
    """``e[k] = exp(tot[k] - max tot)``: the likelihood part of the naive-Bayes forecast,
    computed once per instance and shared by the leaf and every candidate child."""
    top = tot[0]
    for k in range(1, n_classes):
        if tot[k] > top:
            top = tot[k]
    for k in range(n_classes):
        e[k] = math.exp(tot[k] - top)


@njit(cache=True, inline="always")
def _nb_proba(c, n_classes, e, out):
    """Naive-Bayes probabilities ``out[k] ∝ (c[k] + 1) e[k]`` from Laplace class counts ``c``
    (the Laplace denominator cancels in the normalisation)."""
    z = 0.0
    for k in range(n_classes):
        out[k] = (c[k] + 1.0) * e[k]
        z += out[k]
    z = 1.0 / z
    for k in range(n_classes):
        out[k] *= z


@njit(cache=True, inline="always")
def _agrapa_update(estate, s, j, b, g, wi, cap):
    """``eprocess_step``'s aGRAPA branch on scalars (the split test's hot path).

    Updates candidate ``(s, j, b)``'s state (log e-value, sum g, sum g^2) in place with the
    increment ``g`` of weight ``wi`` and returns the new log e-value.
    """
    m1 = estate[s, j, b, 1]
    m2 = estate[s, j, b, 2]
    lam = min(max(m1 / (1.0 + m2), 0.0), cap)
    le = min(lam * wi, cap)
    lk = estate[s, j, b, 0]
    if le != 0.0:
        lk += math.log1p(le * g)
        estate[s, j, b, 0] = lk
    estate[s, j, b, 1] = m1 + g
    estate[s, j, b, 2] = m2 + g * g
    return lk


@njit(cache=True, error_model="numpy")
def learn_kernel(X, y, w, start, stop, skip_first, ts, spec, err_out):
    """Learn rows ``start..stop-1`` of ``X (n, d)``, ``y (n,)``, ``w (n,)`` until an event.

    ``ts`` is a :class:`TreeArrays`, ``spec`` a :class:`TestSpec`. Before learning row ``i``
    the kernel writes into ``err_out[i]`` whether the predictor the leaf deploys misclassifies
    it (1.0 / 0.0; -1.0 for a skipped zero-weight row): the prequential error stream of the
    drift detector. Returns ``(next_row, event, slot)``: ``EV_DONE`` when all rows are
    learned, ``EV_GRID`` when slot's warm-up buffer just filled (the caller fixes its grid),
    ``EV_SPLIT`` when slot's best candidate crossed its threshold (the caller splits it).
    ``skip_first`` learns row ``start`` without testing (used when it introduces a new
    class: the forecasters' class count would otherwise depend on ``y_t``).

    The increment of candidate ``s = (j, c)`` is ``(l(f0, y) - l(f_s, y)) / L`` where
    ``f0`` is the forecaster the leaf deploys (Laplace class frequencies of its inherited +
    own counts, or Gaussian naive Bayes on them, whichever has been more accurate at the
    leaf) and ``f_s`` the forecaster its child would deploy right after the split: the
    child's class counts (own left/right counts scaled up by the inherited share) as Laplace
    frequencies or, with the leaf's Gaussians (which the child inherits, see
    :meth:`FlatTree.split`), as naive Bayes, whichever of the two has been more accurate for
    this candidate so far (``cand_hits``, read before ``y_t`` is seen).
    """
    d = X.shape[1]
    nc = ts.grid.shape[2]
    n0 = ts.warm_x.shape[1]
    K = spec.n_classes
    kc = ts.counts.shape[1]
    base = np.empty(kc, dtype=np.float64)
    child = np.empty(kc, dtype=np.float64)
    ratio = np.empty(kc, dtype=np.float64)
    proba = np.empty(kc, dtype=np.float64)
    tot = np.zeros(kc, dtype=np.float64)
    efac = np.zeros(kc, dtype=np.float64)
    lik = np.zeros((kc, d), dtype=np.float64)
    need_nb = spec.leaf_mode != MC
    agrapa = spec.betting == AGRAPA
    for i in range(start, stop):
        wi = w[i]
        if wi <= 0.0:
            err_out[i] = -1.0
            continue
        x = X[i]
        yi = y[i]
        s = ts.node_slot[route(x, ts.feature, ts.threshold, ts.left, ts.right)]
        for k in range(K):
            base[k] = ts.prior[s, k] + ts.counts[s, k]
        mc_hit = _argmax(base, K) == yi
        use_nb = False
        if need_nb:
            _nb_terms(x, s, ts.gauss, K, lik, tot)
            _nb_factors(tot, K, efac)
            _nb_proba(base, K, efac, proba)
            nb_hit = _argmax(proba, K) == yi
            use_nb = spec.leaf_mode == NB or ts.nb_correct[s] >= ts.mc_correct[s]
            ts.mc_correct[s] += wi * mc_hit
            ts.nb_correct[s] += wi * nb_hit
            err_out[i] = 0.0 if (nb_hit if use_nb else mc_hit) else 1.0
        else:
            err_out[i] = 0.0 if mc_hit else 1.0
        _gauss_update(x, s, yi, wi, ts.gauss)
        if not ts.ready[s]:
            m = ts.nwarm[s]
            for j in range(d):
                ts.warm_x[s, m, j] = x[j]
            ts.warm_y[s, m] = yi
            ts.warm_w[s, m] = wi
            ts.nwarm[s] = m + 1
            ts.counts[s, yi] += wi
            if m + 1 == n0:
                return i + 1, EV_GRID, s
            continue
        test = ts.testing[s] and not (skip_first and i == start)
        best = -np.inf
        binary = spec.fast and K == 2 and spec.loss == BRIER and agrapa
        cnt0 = ts.counts[s, 0]
        cnt1 = ts.counts[s, 1] if kc > 1 else 0.0
        e0 = efac[0]
        e1 = efac[1] if kc > 1 else 0.0
        r0 = r1 = 1.0
        if test:
            if use_nb:
                l0 = prob_loss(proba, K, yi, spec.loss, spec.p_min)
            else:
                l0 = laplace_loss(base, K, yi, spec.loss, spec.p_min)
            for k in range(K):
                own = ts.counts[s, k]
                ratio[k] = base[k] / own if own > 0.0 else 1.0
            r0 = ratio[0]
            r1 = ratio[1] if kc > 1 else 1.0
        for j in range(d):
            xj = x[j]
            for b in range(nc):
                goes_left = xj <= ts.grid[s, j, b]
                if test and binary and ts.active[s, j, b]:
                    # K = 2 with the Brier loss on scalars: the same operations, in the same
                    # order, as the general branch below (bit-identical), without arrays
                    if goes_left:
                        c0 = ts.cum[s, j, b, 0] * r0
                        c1 = ts.cum[s, j, b, 1] * r1
                    else:
                        c0 = (cnt0 - ts.cum[s, j, b, 0]) * r0
                        c1 = (cnt1 - ts.cum[s, j, b, 1]) * r1
                    h0, h1 = ts.cand_hits[s, j, b, 0], ts.cand_hits[s, j, b, 1]
                    nb_child = spec.leaf_mode == NB or (need_nb and h1 >= h0)
                    p0 = p1 = 0.0
                    if need_nb:
                        o0 = (c0 + 1.0) * e0
                        o1 = (c1 + 1.0) * e1
                        z = 1.0 / (o0 + o1)
                        p0 = o0 * z
                        p1 = o1 * z
                        ts.cand_hits[s, j, b, 1] = h1 + wi * ((1 if p1 > p0 else 0) == yi)
                    ts.cand_hits[s, j, b, 0] = h0 + wi * ((1 if c1 > c0 else 0) == yi)
                    if nb_child:
                        ls = p0 * p0 + p1 * p1 - 2.0 * (p1 if yi == 1 else p0) + 1.0
                    else:
                        denom = c0 + c1 + K
                        q0 = (c0 + 1.0) / denom
                        q1 = (c1 + 1.0) / denom
                        ls = q0 * q0 + q1 * q1 - 2.0 * ((c1 if yi == 1 else c0) + 1.0) / denom + 1.0
                    g = (l0 - ls) / spec.loss_scale
                    lk = _agrapa_update(ts.estate, s, j, b, g, wi, spec.cap)
                    if lk > best:
                        best = lk
                elif test and ts.active[s, j, b]:
                    if goes_left:
                        for k in range(K):
                            child[k] = ts.cum[s, j, b, k] * ratio[k]
                    else:
                        for k in range(K):
                            child[k] = (ts.counts[s, k] - ts.cum[s, j, b, k]) * ratio[k]
                    h0, h1 = ts.cand_hits[s, j, b, 0], ts.cand_hits[s, j, b, 1]
                    nb_child = spec.leaf_mode == NB or (need_nb and h1 >= h0)
                    if need_nb:
                        _nb_proba(child, K, efac, proba)
                        ts.cand_hits[s, j, b, 1] = h1 + wi * (_argmax(proba, K) == yi)
                    ts.cand_hits[s, j, b, 0] = h0 + wi * (_argmax(child, K) == yi)
                    if nb_child:
                        ls = prob_loss(proba, K, yi, spec.loss, spec.p_min)
                    else:
                        ls = laplace_loss(child, K, yi, spec.loss, spec.p_min)
                    g = (l0 - ls) / spec.loss_scale  # in [-1, 1]
                    if agrapa:
                        lk = _agrapa_update(ts.estate, s, j, b, g, wi, spec.cap)
                    else:
                        st = ts.estate[s, j, b]
                        eprocess_step(st, g, wi, spec.betting, spec.cap)
                        lk = st[0]
                    if lk > best:
                        best = lk
                if goes_left:
                    ts.cum[s, j, b, yi] += wi
        ts.counts[s, yi] += wi
        if test and best >= ts.log_thr[s]:
            return i + 1, EV_SPLIT, s
    return stop, EV_DONE, -1


@njit(cache=True)
def predict_kernel(X, ts, n_classes, mode, out):
    """Class probabilities ``out (n, K)`` of the rows of ``X (n, d)`` (``ts``: :class:`TreeArrays`)."""
    kc = max(n_classes, 1)
    base = np.empty(kc, dtype=np.float64)
    tot = np.zeros(kc, dtype=np.float64)
    lik = np.zeros((kc, X.shape[1]), dtype=np.float64)
    proba = np.empty(kc, dtype=np.float64)
    for i in range(X.shape[0]):
        x = X[i]
        s = ts.node_slot[route(x, ts.feature, ts.threshold, ts.left, ts.right)]
        tb = 0.0
        for k in range(n_classes):
            base[k] = ts.prior[s, k] + ts.counts[s, k]
            tb += base[k]
        use_nb = mode == NB or (mode == NBA and ts.nb_correct[s] >= ts.mc_correct[s])
        if use_nb:
            _nb_terms(x, s, ts.gauss, n_classes, lik, tot)
            _nb_factors(tot, n_classes, tot)
            _nb_proba(base, n_classes, tot, proba)
            for k in range(n_classes):
                out[i, k] = proba[k]
        else:
            for k in range(n_classes):
                out[i, k] = base[k] / tb if tb > 0.0 else 1.0 / n_classes


@njit(cache=True)
def leaves_of(X, feature, threshold, left, right):
    """Leaf node index of every row of ``X (n, d)``, shape ``(n,)``."""
    out = np.empty(X.shape[0], dtype=np.int64)
    for i in range(X.shape[0]):
        out[i] = route(X[i], feature, threshold, left, right)
    return out


class FlatTree:
    """Preallocated arrays of one tree plus its rare events (grid fixing and splitting).

    Parameters
    ----------
    n_features, n_bins, warmup
        ``d``, ``B`` and the warm-up size ``n0``.
    betting_code
        Code from :func:`anytime_hoeffding.eprocess.betting_code`.
    n_classes_capacity
        Initial class capacity (grown on demand by :meth:`grow_classes`).
    """

    def __init__(self, n_features, n_bins, warmup, betting_code, n_classes_capacity=2):
        self.d, self.B, self.n0 = int(n_features), int(n_bins), int(warmup)
        self.betting = int(betting_code)
        self.n_nodes = 0
        self.n_slots = 0
        self.free_slots: list[int] = []
        self._alloc(nodes=8, slots=4, kcap=max(2, int(n_classes_capacity)))
        self.kept_splits: set[int] = set()  # internal nodes copied by :meth:`regrown`
        self.new_leaf(depth=0)

    # ---------------------------------------------------------------- allocation
    def _alloc(self, nodes, slots, kcap):
        d, nc = self.d, self.B - 1
        self.feature = np.full(nodes, -1, np.int64)  # (Nn,) -1 marks a leaf
        self.threshold = np.zeros(nodes, np.float64)  # (Nn,)
        self.left = np.full(nodes, -1, np.int64)  # (Nn,)
        self.right = np.full(nodes, -1, np.int64)  # (Nn,)
        self.node_slot = np.full(nodes, -1, np.int64)  # (Nn,) leaf slot, -1 if internal
        self.depth = np.zeros(nodes, np.int64)  # (Nn,)
        self.created = np.zeros(nodes, np.int64)  # (Nn,) instance index of creation
        self.nwarm = np.zeros(slots, np.int64)  # (S,)
        self.warm_x = np.zeros((slots, self.n0, d), np.float64)  # (S, n0, d)
        self.warm_y = np.zeros((slots, self.n0), np.int64)  # (S, n0)
        self.warm_w = np.zeros((slots, self.n0), np.float64)  # (S, n0)
        self.ready = np.zeros(slots, np.bool_)  # (S,) grid fixed
        self.testing = np.zeros(slots, np.bool_)  # (S,) split test running
        self.grid = np.full((slots, d, nc), np.inf)  # (S, d, B-1) cut points
        self.active = np.zeros((slots, d, nc), np.bool_)  # (S, d, B-1)
        self.log_thr = np.full(slots, np.inf)  # (S,) log(|S_l| / alpha_l)
        self.counts = np.zeros((slots, kcap), np.float64)  # (S, K) own class counts
        self.prior = np.zeros((slots, kcap), np.float64)  # (S, K) inherited (prediction only)
        self.cum = np.zeros((slots, d, nc, kcap), np.float64)  # (S, d, B-1, K) left-child counts
        self.estate = init_state((slots, d, nc), self.betting)  # (S, d, B-1, n_state)
        self.gauss = np.zeros((slots, kcap, d, 3), np.float64)  # (S, K, d, 3) NB stats
        self.mc_correct = np.zeros(slots, np.float64)  # (S,)
        self.nb_correct = np.zeros(slots, np.float64)  # (S,)
        self.cand_hits = np.zeros((slots, d, nc, 2), np.float64)  # (S, d, B-1, 2)

    _NODE = ("feature", "threshold", "left", "right", "node_slot", "depth", "created")
    _SLOT = ("nwarm", "warm_x", "warm_y", "warm_w", "ready", "testing", "grid", "active",
             "log_thr", "counts", "prior", "cum", "estate", "gauss", "mc_correct", "nb_correct",
             "cand_hits")  # fmt: skip
    _FILL = {"feature": -1, "left": -1, "right": -1, "node_slot": -1, "grid": np.inf,
             "log_thr": np.inf}  # fmt: skip

    def _grow(self, names, new_len):
        for name in names:
            a = getattr(self, name)
            b = np.full((new_len, *a.shape[1:]), self._FILL.get(name, 0), dtype=a.dtype)
            b[: a.shape[0]] = a
            setattr(self, name, b)

    def grow_classes(self, kcap):
        """Make room for ``kcap`` classes (counts are zero-padded)."""
        for name in ("counts", "prior", "cum"):
            a = getattr(self, name)
            if a.shape[-1] >= kcap:
                continue
            b = np.zeros((*a.shape[:-1], kcap), dtype=a.dtype)
            b[..., : a.shape[-1]] = a
            setattr(self, name, b)
        if self.gauss.shape[1] < kcap:
            g = np.zeros((self.gauss.shape[0], kcap, *self.gauss.shape[2:]))
            g[:, : self.gauss.shape[1]] = self.gauss
            self.gauss = g

    @property
    def kcap(self):
        """Current class capacity."""
        return self.counts.shape[1]

    def new_leaf(self, depth, t=0, slot=None):
        """Append a leaf node at ``depth`` (reusing ``slot`` if given); return the node index."""
        if self.n_nodes == self.feature.shape[0]:
            self._grow(self._NODE, 2 * self.n_nodes)
        if slot is None:
            if self.free_slots:
                slot = self.free_slots.pop()
            else:
                if self.n_slots == self.nwarm.shape[0]:
                    self._grow(self._SLOT, 2 * self.n_slots)
                slot = self.n_slots
                self.n_slots += 1
        self.reset_slot(slot)
        node = self.n_nodes
        self.n_nodes += 1
        self.feature[node] = -1
        self.left[node] = self.right[node] = -1
        self.node_slot[node] = slot
        self.depth[node] = depth
        self.created[node] = t
        return node

    def reset_slot(self, s):
        """Clear the statistics and e-processes of slot ``s``."""
        self.nwarm[s] = 0
        self.ready[s] = self.testing[s] = False
        self.grid[s] = np.inf
        self.active[s] = False
        self.log_thr[s] = np.inf
        for name in ("counts", "prior", "cum", "gauss", "mc_correct", "nb_correct", "cand_hits"):
            getattr(self, name)[s] = 0.0
        self.estate[s] = init_state((self.d, self.B - 1), self.betting)

    # ---------------------------------------------------------------- events
    def fix_grid(self, s, allowed_features, log_threshold, n_classes, test=True):
        """Fix slot ``s``'s candidate grid from its warm-up buffer (Step 2).

        Cut points are midpoints between order statistics at the quantile levels ``q/B``
        (q = 1..B-1) of the finite buffered values; duplicates and cuts that send the whole
        buffer to one side are inactive. ``log_threshold(n_active)`` gives the split
        threshold. Returns the number of active candidates ``|S_l|``.
        """
        B, nb = self.B, self.B - 1
        xs = self.warm_x[s, : self.nwarm[s]]  # (n0, d)
        grid = np.full((self.d, nb), np.inf)
        active = np.zeros((self.d, nb), np.bool_)
        for j in range(self.d):
            v = np.sort(xs[:, j][np.isfinite(xs[:, j])])
            n = v.size
            if n < 2:
                continue
            last = -np.inf
            for q in range(1, B):
                hi = min(max((q * n) // B, 1), n - 1)
                c = 0.5 * (v[hi - 1] + v[hi])
                grid[j, q - 1] = c
                if c > last and c < v[-1] and j in allowed_features:
                    active[j, q - 1] = True
                    last = c
        self.grid[s] = grid
        self.active[s] = active
        # left-child counts of the buffered instances: (d, B-1, K)
        onehot = np.zeros((xs.shape[0], self.kcap))
        onehot[np.arange(xs.shape[0]), self.warm_y[s, : xs.shape[0]]] = self.warm_w[
            s, : xs.shape[0]
        ]
        goes_left = (xs[:, :, None] <= grid[None]).astype(np.float64)  # (n0, d, B-1)
        self.cum[s] = np.einsum("ndb,nk->dbk", goes_left, onehot)
        n_active = int(active.sum())
        self.ready[s] = True
        self.testing[s] = bool(test and n_active > 0)
        self.log_thr[s] = log_threshold(n_active) if n_active else np.inf
        return n_active

    def best_candidate(self, s):
        """``(feature, cut index, log e-value)`` of slot ``s``'s best active candidate."""
        logk = np.where(self.active[s], self.estate[s, :, :, 0], -np.inf)
        j, b = np.unravel_index(int(np.argmax(logk)), logk.shape)
        return int(j), int(b), float(logk[j, b])

    def split(self, node, j, b, t):
        """Split leaf ``node`` on ``(feature j, cut b)``; return the two child nodes (Step 4).

        Children inherit the parent's sufficient statistics in the child's share: class
        counts (the parent's inherited + own counts of that side, as ``prior``), the
        naive-Bayes statistics (weights scaled per class by the share of the parent's
        class-``k`` data that went to the child, means and variances kept) and, as the hit counts
        of its two predictors, the candidate's child-predictor hits (scaled by the child's
        share), so a child starts by deploying the forecaster the test scored.
        """
        s = int(self.node_slot[node])
        thr = float(self.grid[s, j, b])
        own = self.counts[s].copy()
        base = self.prior[s] + own
        ratio = np.divide(base, own, out=np.ones_like(own), where=own > 0)
        sides = (self.cum[s, j, b].copy(), own - self.cum[s, j, b])
        gauss = self.gauss[s].copy()
        hits = tuple(self.cand_hits[s, j, b])  # the child predictors the test scored
        n_own = max(float(own.sum()), 1e-12)
        depth = int(self.depth[node]) + 1
        self.feature[node] = j
        self.threshold[node] = thr
        self.node_slot[node] = -1
        lnode = self.new_leaf(depth, t=t, slot=s)
        rnode = self.new_leaf(depth, t=t)
        for child, side in zip((lnode, rnode), sides, strict=True):
            c = self.node_slot[child]
            self.prior[c] = side * ratio
            share = np.divide(side, own, out=np.zeros_like(own), where=own > 0)  # (K,)
            g = gauss * share[:, None, None]
            g[..., 1] = gauss[..., 1]  # means are kept; weights and M2 scale together
            self.gauss[c] = g
            frac = float(side.sum()) / n_own
            self.mc_correct[c], self.nb_correct[c] = hits[0] * frac, hits[1] * frac
        self.left[node], self.right[node] = lnode, rnode
        return lnode, rnode

    def regrown(self, t=0) -> FlatTree:
        """A new tree with this tree's splits and fresh leaves (the drift alternate).

        Internal nodes (feature, threshold, children, depth) are copied; every leaf gets a
        fresh slot (empty counts, no inherited prior, new warm-up and e-processes), so the
        leaves relearn the current concept under the kept partition and may split again.
        The alpha share of its new splits is set by the caller.
        """
        new = FlatTree(self.d, self.B, self.n0, self.betting, self.kcap)
        n = self.n_nodes
        new._grow(new._NODE, max(n, 8))
        for name in ("feature", "threshold", "left", "right", "depth"):
            getattr(new, name)[:n] = getattr(self, name)[:n]
        new.node_slot[:n] = -1
        new.kept_splits = set(np.flatnonzero(self.feature[:n] >= 0).tolist())
        new.created[:n] = t
        new.n_nodes = n
        new.n_slots = 0
        new.free_slots = []
        for node in np.flatnonzero(self.feature[:n] < 0).tolist():
            if new.n_slots == new.nwarm.shape[0]:
                new._grow(new._SLOT, 2 * new.n_slots)
            slot = new.n_slots
            new.n_slots += 1
            new.reset_slot(slot)
            new.node_slot[node] = slot
        return new

    def parent_of(self, node) -> int:
        """Parent of ``node`` (-1 for the root)."""
        hit = np.flatnonzero(
            (self.left[: self.n_nodes] == node) | (self.right[: self.n_nodes] == node)
        )
        return int(hit[0]) if hit.size else -1

    def collapse(self, node) -> int:
        """Turn internal ``node`` with two leaf children back into one leaf; return its new index.

        The merged leaf keeps both children's class counts, inherited priors, naive-Bayes
        statistics (Gaussians merged exactly) and predictor hits, and restarts its warm-up
        and split test (fresh grid and e-processes). Node arrays are then renumbered in
        depth-first order so that ``n_nodes`` counts the reachable nodes only.
        """
        lnode, rnode = int(self.left[node]), int(self.right[node])
        a, b = int(self.node_slot[lnode]), int(self.node_slot[rnode])
        merged = {
            "counts": self.counts[a] + self.counts[b],
            "prior": self.prior[a] + self.prior[b],
            "mc_correct": self.mc_correct[a] + self.mc_correct[b],
            "nb_correct": self.nb_correct[a] + self.nb_correct[b],
        }
        ga, gb = self.gauss[a], self.gauss[b]
        w = ga[..., 0] + gb[..., 0]
        safe = np.where(w > 0, w, 1.0)
        mean = (ga[..., 0] * ga[..., 1] + gb[..., 0] * gb[..., 1]) / safe
        m2 = (
            ga[..., 2]
            + gb[..., 2]
            + ga[..., 0] * gb[..., 0] / safe * (ga[..., 1] - gb[..., 1]) ** 2
        )
        self.reset_slot(a)
        self.reset_slot(b)
        self.free_slots.append(b)
        for name, v in merged.items():
            getattr(self, name)[a] = v
        self.gauss[a] = np.stack([w, mean, m2], axis=-1)
        self.feature[node] = -1
        self.left[node] = self.right[node] = -1
        self.node_slot[node] = a
        self.kept_splits.discard(node)
        return self._renumber()[node]

    def _renumber(self) -> dict[int, int]:
        order, stack = [], [0]
        while stack:
            v = stack.pop()
            order.append(v)
            if self.feature[v] >= 0:
                stack += [int(self.right[v]), int(self.left[v])]
        new = {old: k for k, old in enumerate(order)}
        idx = np.asarray(order, np.int64)
        for name in self._NODE:
            a = getattr(self, name)
            a[: idx.size] = a[idx].copy()
            a[idx.size : self.n_nodes] = self._FILL.get(name, 0)
        for arr in (self.left, self.right):
            inner = arr[: idx.size] >= 0
            arr[: idx.size][inner] = [new[int(v)] for v in arr[: idx.size][inner]]
        self.n_nodes = idx.size
        self.kept_splits = {new[v] for v in self.kept_splits if v in new}
        return new

    # ---------------------------------------------------------------- views
    def arrays(self) -> TreeArrays:
        """The current arrays as one :class:`TreeArrays` (rebuilt after any reallocation)."""
        return TreeArrays(*(getattr(self, name) for name in TreeArrays._fields))

    def bytes_per_leaf(self):
        """Bytes of preallocated statistics per leaf slot (bounded: ``O(n0 d + d B K)``)."""
        return int(sum(getattr(self, n).nbytes for n in self._SLOT) // self.nwarm.shape[0])

    @property
    def state_size(self):
        """Floats of e-process state per candidate."""
        return n_state(self.betting)
