"""How well a fit recovers the drift: scale-aligned error and edge AUROC.

Paper: "One Intervention per Component is Enough" (ICML 2026). The drift is
identified only up to the global scale ``(A, b, D) -> (cA, cb, cD)``, so:

1. :func:`scale_aligned_rel_error` - ``min_{c > 0} ||c A_hat - A||_F / ||A||_F``
   (closed form ``c = <A_hat, A> / ||A_hat||^2``, clipped at 0).
2. :func:`edge_auroc` - AUROC of ``|A_hat_ij|`` (``i != j``) as a score for the true
   edges ``A_ij != 0``, by the Mann-Whitney rank statistic (ties count one half).

The held-out-intervention distance is :func:`ou_ident.prediction.gaussian_w2`.
"""

from __future__ import annotations

import numpy as np
import scipy.stats

__all__ = ["edge_auroc", "scale_aligned_rel_error"]


def scale_aligned_rel_error(A_hat, A) -> float:
    """Relative Frobenius error of ``A_hat`` after the best positive rescaling.

    Examples
    --------
    >>> import numpy as np
    >>> A = np.array([[-1.0, 0.5], [0.0, -2.0]])
    >>> scale_aligned_rel_error(3.0 * A, A)
    0.0
    >>> scale_aligned_rel_error(np.zeros((2, 2)), A)
    1.0
    """
    A_hat, A = np.asarray(A_hat, float), np.asarray(A, float)
    if A_hat.shape != A.shape:
        raise ValueError(f"shapes differ: {A_hat.shape} vs {A.shape}")
    norm = float(np.linalg.norm(A))
    if norm == 0:
        raise ValueError("the true drift is zero; the relative error is undefined")
    den = float(np.sum(A_hat * A_hat))
    c = max(float(np.sum(A_hat * A)) / den, 0.0) if den > 0 else 0.0
    return float(np.linalg.norm(c * A_hat - A) / norm)


def edge_auroc(scores, A_true) -> float:
    """AUROC of off-diagonal ``|scores|`` for the edges of ``A_true`` (``nan`` if undefined).

    Examples
    --------
    >>> import numpy as np
    >>> A = np.array([[-1.0, 0.0, 0.0], [0.7, -1.0, 0.0], [0.0, 0.4, -1.0]])
    >>> edge_auroc(A + 0.01, A)
    1.0
    >>> edge_auroc(np.ones((3, 3)), A)
    0.5
    """
    S, A = np.abs(np.asarray(scores, float)), np.asarray(A_true)
    if S.shape != A.shape or S.ndim != 2 or S.shape[0] != S.shape[1]:
        raise ValueError(f"need two square matrices of one shape, got {S.shape} and {A.shape}")
    off = ~np.eye(A.shape[0], dtype=bool)
    y, s = A[off] != 0, S[off]
    n_pos, n_neg = int(y.sum()), int((~y).sum())
    if n_pos == 0 or n_neg == 0:
        return float("nan")
    ranks = scipy.stats.rankdata(s)
    return float((ranks[y].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))
