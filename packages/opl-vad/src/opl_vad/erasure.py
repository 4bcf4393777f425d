"""Concept-erasure anchors that use face labels: LEACE and INLP (upper references).

Unlike G-OPL, which sees only the weak face-presence signal during training, these erase the
face concept with labels, once, before the anomaly head is trained on the erased features.

- :func:`fit_leace`: LEACE (Belrose et al., NeurIPS 2023), the closed-form least-squares
  concept eraser, through the ``concept-erasure`` package (the ``bench`` extra)
- :func:`fit_inlp`: iterative nullspace projection (Ravfogel et al., ACL 2020): train a linear
  classifier for the concept, project the features onto the nullspace of its weights, repeat.
  No maintained PyPI package implements INLP, so it is written here (a few lines on
  scikit-learn's ``LinearSVC``)

Both return a :class:`LinearEraser` ``x -> (x - mu) P^T + mu`` and its removed basis.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["LinearEraser", "fit_inlp", "fit_leace", "leace_available"]


@dataclass
class LinearEraser:
    """An affine eraser ``x -> (x - mean) @ P.T + mean`` with removed basis ``(D, r)``."""

    P: np.ndarray  # (D, D)
    mean: np.ndarray  # (D,)
    removed_basis: np.ndarray  # (D, r)
    name: str

    def __call__(self, X: np.ndarray) -> np.ndarray:
        shape = X.shape
        flat = X.reshape(-1, shape[-1]).astype(np.float64)
        return ((flat - self.mean) @ self.P.T + self.mean).reshape(shape).astype(X.dtype)


def _removed_basis(P: np.ndarray, tol: float = 1e-6) -> np.ndarray:
    """Orthonormal basis of the range of ``I - P``."""
    U, s, _ = np.linalg.svd(np.eye(len(P)) - P)
    return U[:, s > tol]


def leace_available() -> bool:
    import importlib.util

    return importlib.util.find_spec("concept_erasure") is not None


def fit_leace(X: np.ndarray, concept: np.ndarray) -> LinearEraser:
    """LEACE eraser for a binary concept, fitted on rows ``X`` ``(N, D)``."""
    if not leace_available():
        raise ImportError("the LEACE anchor needs concept-erasure: pip install 'opl-vad[bench]'")
    import torch
    from concept_erasure import LeaceEraser

    Xt = torch.as_tensor(np.asarray(X, dtype=np.float64))
    z = torch.as_tensor(np.asarray(concept, dtype=np.int64))
    eraser = LeaceEraser.fit(Xt, z)
    D = Xt.shape[1]
    mean = Xt.mean(0)
    with torch.no_grad():  # the eraser is affine: read off its linear part around the mean
        at_mean = eraser(mean[None, :])[0]
        lin = eraser(torch.eye(D, dtype=Xt.dtype) + mean) - at_mean
    if not torch.allclose(at_mean, mean, atol=1e-8 * (1 + float(mean.abs().max()))):
        raise RuntimeError("LEACE eraser does not fix the mean; cannot express it as P")
    P = lin.T.numpy()  # eraser(x) = mean + (x - mean) @ lin
    return LinearEraser(P, mean.numpy(), _removed_basis(P), "LEACE")


def fit_inlp(
    X: np.ndarray, concept: np.ndarray, iterations: int = 8, seed: int = 0
) -> LinearEraser:
    """INLP: ``iterations`` rounds of LinearSVC + projection onto its weights' nullspace."""
    from sklearn.svm import LinearSVC

    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(concept).astype(np.int64)
    mean = X.mean(0)
    Xc = X - mean
    D = X.shape[1]
    directions = np.zeros((D, 0))
    P = np.eye(D)
    for _ in range(int(iterations)):
        clf = LinearSVC(C=1.0, max_iter=5000, random_state=seed).fit(Xc @ P.T, y)
        w = clf.coef_.reshape(-1, D).T  # (D, 1)
        directions = np.linalg.qr(np.hstack([directions, w]))[0]
        P = np.eye(D) - directions @ directions.T
    return LinearEraser(P, mean, directions, "INLP")
