"""Pure-numpy reference of one leaf's predictive e-split (no numba), for equivalence tests.

It re-derives, vectorised over all candidates, what the compiled kernel computes at the
root: the quantile grid of the warm-up buffer, the Laplace forecasters of the leaf and of
each candidate's child, the Brier increments and the aGRAPA wealth.
"""

import numpy as np


def reference_root_log_e(X, y, n_classes, n_bins=16, warmup=100, cap=0.5):
    """``log K`` of every root candidate after learning ``X (n, d)``, ``y (n,)``; (d, B-1)."""
    n, d = X.shape
    B = n_bins
    buf = X[:warmup]
    grid = np.empty((d, B - 1))
    active = np.zeros((d, B - 1), bool)
    for j in range(d):
        v = np.sort(buf[:, j])
        last = -np.inf
        for q in range(1, B):
            hi = min(max(q * warmup // B, 1), warmup - 1)
            c = 0.5 * (v[hi - 1] + v[hi])
            grid[j, q - 1] = c
            if c > last and c < v[-1]:
                active[j, q - 1] = True
                last = c
    onehot = np.eye(n_classes)[y]  # (n, K)
    left_counts = np.einsum("ndb,nk->dbk", (buf[:, :, None] <= grid).astype(float), onehot[:warmup])
    counts = onehot[:warmup].sum(axis=0)  # (K,)
    logk = np.zeros((d, B - 1))
    s1 = np.zeros((d, B - 1))
    s2 = np.zeros((d, B - 1))

    def brier(c, k):  # c: (..., K) counts -> Brier loss of the Laplace forecaster on label k
        p = (c + 1.0) / (c.sum(axis=-1, keepdims=True) + n_classes)
        return (p**2).sum(axis=-1) - 2 * p[..., k] + 1

    for i in range(warmup, n):
        x, k = X[i], y[i]
        goes_left = x[:, None] <= grid  # (d, B-1)
        child = np.where(goes_left[..., None], left_counts, counts - left_counts)
        g = (brier(counts, k) - brier(child, k)) / 2.0
        lam = np.clip(s1 / (1.0 + s2), 0.0, cap)
        logk = np.where(active, logk + np.log1p(lam * g), logk)
        s1 = s1 + g
        s2 = s2 + g * g
        left_counts = left_counts + goes_left[..., None] * onehot[i]
        counts = counts + onehot[i]
    return np.where(active, logk, -np.inf)
