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

Leaf statistics live in preallocated arrays indexed by a leaf *slot*: class counts
``(S, K)``, cumulative bin-class counts ``(S, d, B-1, K)`` (the left-child counts of every
candidate) and e-process states ``(S, d, B-1, n_state)``; there are no per-instance Python
objects on the fast path. Splits and grid fixing are rare events handled in numpy.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from .eprocess import eprocess_step, init_state, n_state
from .predictive_loss import laplace_loss

__all__ = ["EV_DONE", "EV_GRID", "EV_SPLIT", "FlatTree", "learn_kernel", "predict_kernel", "route"]

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


@njit(cache=True)
def _nb_logp(x, s, counts, prior, gauss, n_classes, out):
    """Gaussian naive-Bayes log scores of slot ``s`` for row ``x`` into ``out[:n_classes]``.

    ``gauss[s, k, j] = (weight, mean, M2)`` of feature ``j`` in class ``k`` (weighted
    Welford); the class prior is the Laplace frequency of ``prior + counts``. This is the
    leaf model of river's and MOA's Hoeffding trees.
    """
    d = gauss.shape[2]
    tot = 0.0
    for k in range(n_classes):
        tot += prior[s, k] + counts[s, k]
    for k in range(n_classes):
        out[k] = math.log(prior[s, k] + counts[s, k] + 1.0) - math.log(tot + n_classes)
    for j in range(d):
        xj = x[j]
        if not math.isfinite(xj):
            continue
        for k in range(n_classes):
            wk = gauss[s, k, j, 0]
            if wk <= 0.0:
                out[k] += -27.631021115928547  # log(1e-12): no data for this class
                continue
            var = gauss[s, k, j, 2] / wk
            if var < 1e-9:
                var = 1e-9
            dx = xj - gauss[s, k, j, 1]
            out[k] += -0.5 * math.log(2.0 * math.pi * var) - dx * dx / (2.0 * var)


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


@njit(cache=True)
def _argmax(v, n):
    best = 0
    for k in range(1, n):
        if v[k] > v[best]:
            best = k
    return best


@njit(cache=True)
def learn_kernel(
    X, y, w, start, stop, skip_first,
    feature, threshold, left, right, node_slot,
    nwarm, warm_x, warm_y, warm_w, ready, testing, grid, active, log_thr,
    counts, prior, cum, estate, gauss, mc_correct, nb_correct,
    n_classes, loss, loss_scale, p_min, betting, cap, track_nba,
):  # fmt: skip
    """Learn rows ``start..stop-1`` of ``X (n, d)``, ``y (n,)``, ``w (n,)`` until an event.

    Returns ``(next_row, event, slot)``: ``EV_DONE`` when all rows are learned, ``EV_GRID``
    when slot's warm-up buffer just filled (the caller fixes its grid), ``EV_SPLIT`` when
    slot's best candidate crossed its threshold (the caller splits it). ``skip_first``
    learns row ``start`` without testing (used when it introduces a new class: the
    forecasters' class count would otherwise depend on ``y_t``).
    """
    d = X.shape[1]
    nc = grid.shape[2]
    n0 = warm_x.shape[1]
    tmp = np.empty(counts.shape[1], dtype=np.float64)
    scores = np.empty(counts.shape[1], dtype=np.float64)
    for i in range(start, stop):
        wi = w[i]
        if wi <= 0.0:
            continue
        x = X[i]
        yi = y[i]
        node = route(x, feature, threshold, left, right)
        s = node_slot[node]
        if track_nba:  # prequential accuracy of the two leaf predictors (before learning)
            for k in range(n_classes):
                tmp[k] = prior[s, k] + counts[s, k]
            if _argmax(tmp, n_classes) == yi:
                mc_correct[s] += wi
            _nb_logp(x, s, counts, prior, gauss, n_classes, scores)
            if _argmax(scores, n_classes) == yi:
                nb_correct[s] += wi
        _gauss_update(x, s, yi, wi, gauss)
        if not ready[s]:
            m = nwarm[s]
            for j in range(d):
                warm_x[s, m, j] = x[j]
            warm_y[s, m] = yi
            warm_w[s, m] = wi
            nwarm[s] = m + 1
            counts[s, yi] += wi
            if m + 1 == n0:
                return i + 1, EV_GRID, s
            continue
        test = testing[s] and not (skip_first and i == start)
        best = -np.inf
        if test:
            l0 = laplace_loss(counts[s], n_classes, yi, loss, p_min)
        for j in range(d):
            xj = x[j]
            for b in range(nc):
                goes_left = xj <= grid[s, j, b]
                if test and active[s, j, b]:
                    if goes_left:
                        for k in range(n_classes):
                            tmp[k] = cum[s, j, b, k]
                    else:
                        for k in range(n_classes):
                            tmp[k] = counts[s, k] - cum[s, j, b, k]
                    ls = laplace_loss(tmp, n_classes, yi, loss, p_min)
                    g = (l0 - ls) / loss_scale  # in [-1, 1]
                    st = estate[s, j, b]
                    eprocess_step(st, g, wi, betting, cap)
                    if st[0] > best:
                        best = st[0]
                if goes_left:
                    cum[s, j, b, yi] += wi
        counts[s, yi] += wi
        if test and best >= log_thr[s]:
            return i + 1, EV_SPLIT, s
    return stop, EV_DONE, -1


@njit(cache=True)
def predict_kernel(
    X, feature, threshold, left, right, node_slot,
    counts, prior, gauss, mc_correct, nb_correct, n_classes, mode, out,
):  # fmt: skip
    """Class probabilities ``out (n, K)`` of the rows of ``X (n, d)``."""
    scores = np.empty(max(n_classes, 1), dtype=np.float64)
    for i in range(X.shape[0]):
        x = X[i]
        s = node_slot[route(x, feature, threshold, left, right)]
        use_nb = mode == NB or (mode == NBA and nb_correct[s] > mc_correct[s])
        if use_nb:
            _nb_logp(x, s, counts, prior, gauss, n_classes, scores)
            top = scores[_argmax(scores, n_classes)]
            tot = 0.0
            for k in range(n_classes):
                scores[k] = math.exp(scores[k] - top)
                tot += scores[k]
            for k in range(n_classes):
                out[i, k] = scores[k] / tot
        else:
            tot = 0.0
            for k in range(n_classes):
                tot += prior[s, k] + counts[s, k]
            for k in range(n_classes):
                if tot > 0.0:
                    out[i, k] = (prior[s, k] + counts[s, k]) / tot
                else:
                    out[i, k] = 1.0 / n_classes


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

    _NODE = ("feature", "threshold", "left", "right", "node_slot", "depth", "created")
    _SLOT = ("nwarm", "warm_x", "warm_y", "warm_w", "ready", "testing", "grid", "active",
             "log_thr", "counts", "prior", "cum", "estate", "gauss", "mc_correct", "nb_correct")  # fmt: skip
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
        for name in ("counts", "prior", "cum", "gauss", "mc_correct", "nb_correct"):
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
        """Split leaf ``node`` on ``(feature j, cut b)``; return the two child nodes (Step 4)."""
        s = int(self.node_slot[node])
        thr = float(self.grid[s, j, b])
        left_counts = self.cum[s, j, b].copy()
        right_counts = self.counts[s] - left_counts
        depth = int(self.depth[node]) + 1
        self.feature[node] = j
        self.threshold[node] = thr
        self.node_slot[node] = -1
        lnode = self.new_leaf(depth, t=t, slot=s)
        rnode = self.new_leaf(depth, t=t)
        self.prior[self.node_slot[lnode]] = left_counts
        self.prior[self.node_slot[rnode]] = right_counts
        self.left[node], self.right[node] = lnode, rnode
        return lnode, rnode

    # ---------------------------------------------------------------- views
    def node_args(self):
        """Routing arrays in the order the kernels take them."""
        return self.feature, self.threshold, self.left, self.right, self.node_slot

    def slot_args(self):
        """Learning arrays in the order :func:`learn_kernel` takes them."""
        return (self.nwarm, self.warm_x, self.warm_y, self.warm_w, self.ready, self.testing,
                self.grid, self.active, self.log_thr, self.counts, self.prior, self.cum,
                self.estate, self.gauss, self.mc_correct, self.nb_correct)  # fmt: skip

    def bytes_per_leaf(self):
        """Bytes of preallocated statistics per leaf slot (bounded: ``O(n0 d + d B K)``)."""
        return int(sum(getattr(self, n).nbytes for n in self._SLOT) // self.nwarm.shape[0])

    @property
    def state_size(self):
        """Floats of e-process state per candidate."""
        return n_state(self.betting)
