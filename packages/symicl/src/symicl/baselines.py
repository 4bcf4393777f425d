"""In-context classification baselines (the anchors of Lutz et al., ICML 2026, Sec. 5).

Paper: "Symmetry Reveals Layerwise Dynamics: How Transformers Perform In-Context
Classification" (arXiv 2604.11613).

Every baseline sees exactly what the transformer sees: the ``N`` context points of one
episode (unlabeled ones only through the prototype's zero label rows, which drop out) and
predicts the probe's class.

* prototype ``(1/N) sum_i y_i <x_i, x_q>``           -> :func:`prototype_scores`
  (one hand-set linear-attention layer, :func:`symicl.transformer.prototype_model`)
* k-step in-context gradient descent on the squared
  loss from ``W = 0`` (the "transformers do GD"
  hypothesis of von Oswald et al. 2023 / Ahn et al. 2023,
  which the paper argues against)                     -> :func:`gd_scores`, :func:`tune_gd_lr`
* ridge classifier, logistic regression, k-NN          -> :func:`sklearn_predict`
  (scikit-learn estimators fitted per episode on the labelled context points)
"""

from __future__ import annotations

import numpy as np
import torch
from sklearn.linear_model import LogisticRegression, RidgeClassifier
from sklearn.neighbors import KNeighborsClassifier

from symicl.episodes import one_hot_labels

SKLEARN_BASELINES = ("ridge", "logistic", "1-nn")


def prototype_scores(x: torch.Tensor, y: torch.Tensor, xq: torch.Tensor) -> torch.Tensor:
    """Prototype scores ``(1/N) sum_i y_i <x_i, x_q>``, shape ``(B, C)``.

    ``x (B, N, d)``, one-hot ``y (B, N, C)`` (zero rows for unlabeled points), ``xq (B, d)``.
    """
    sims = torch.einsum("bnd,bd->bn", x, xq)  # (B, N)
    return torch.einsum("bn,bnc->bc", sims, y.to(x.dtype)) / x.shape[1]


def gd_scores(
    x: torch.Tensor, y: torch.Tensor, xq: torch.Tensor, steps: int, lr: float
) -> torch.Tensor:
    """Scores ``W_k x_q`` after ``k`` GD steps on ``(1/2n) sum_i ||W x_i - y_i||^2`` from 0.

    Sums run over the ``n`` labelled points. One step with ``lr = 1`` on a fully labelled
    context is exactly the prototype classifier.
    """
    if steps < 1 or lr <= 0:
        raise ValueError(f"GD needs steps >= 1 and lr > 0, got steps={steps}, lr={lr}")
    mask = (y.sum(-1) > 0).to(x.dtype)  # (B, N) labelled points
    n_lab = mask.sum(1).clamp_min(1.0)[:, None, None]
    w = torch.zeros(x.shape[0], y.shape[-1], x.shape[-1], dtype=x.dtype)  # (B, C, d)
    for _ in range(steps):
        resid = (torch.einsum("bcd,bnd->bnc", w, x) - y) * mask[..., None]  # (B, N, C)
        w = w - lr * torch.einsum("bnc,bnd->bcd", resid, x) / n_lab
    return torch.einsum("bcd,bd->bc", w, xq)


def tune_gd_lr(
    batch: dict[str, torch.Tensor],
    n_classes: int,
    steps: int,
    grid: tuple[float, ...] = (0.05, 0.1, 0.2, 0.5, 1.0, 1.5),
) -> float:
    """Learning rate from ``grid`` with the best probe accuracy on a validation ``batch``."""
    y = one_hot_labels(batch["y"], n_classes)
    accs = [
        (gd_scores(batch["x"], y, batch["xq"], steps, lr).argmax(-1) == batch["yq"]).float().mean()
        for lr in grid
    ]
    return float(grid[int(np.argmax([float(a) for a in accs]))])


def _estimator(name: str):
    if name == "ridge":
        return RidgeClassifier(alpha=1.0)
    if name == "logistic":
        return LogisticRegression(C=1.0, max_iter=500)
    if name == "1-nn":
        return KNeighborsClassifier(n_neighbors=1)
    raise ValueError(f"unknown baseline {name!r}; expected one of {SKLEARN_BASELINES}")


def sklearn_predict(name: str, batch: dict[str, torch.Tensor]) -> torch.Tensor:
    """Probe predictions ``(B,)`` of a scikit-learn estimator fitted per episode.

    ``name`` is ``"ridge"`` (``RidgeClassifier(alpha=1)``), ``"logistic"``
    (``LogisticRegression(C=1)``) or ``"1-nn"``. Only labelled context points are used; an
    episode whose labelled points all share one class predicts that class.
    """
    _estimator(name)  # validate the name before looping
    x, y, xq = batch["x"].numpy(), batch["y"].numpy(), batch["xq"].numpy()
    preds = np.empty(len(x), dtype=np.int64)
    for b in range(len(x)):
        keep = y[b] >= 0
        xs, ys = x[b][keep], y[b][keep]
        if len(np.unique(ys)) == 1:
            preds[b] = ys[0]
            continue
        preds[b] = _estimator(name).fit(xs, ys).predict(xq[b : b + 1])[0]
    return torch.from_numpy(preds)


def accuracy(pred_or_scores: torch.Tensor, target: torch.Tensor) -> float:
    """Fraction of correct probe predictions (accepts scores ``(B, C)`` or labels ``(B,)``)."""
    pred = pred_or_scores.argmax(-1) if pred_or_scores.ndim == 2 else pred_or_scores
    return float((pred == target).float().mean())
