"""Bounded proper losses and the predictable Laplace forecasters of the predictive e-split.

Paper: Amoukou, Mishra & Veloso, "Correcting Split Selection in Online Decision Trees via
Anytime-Valid Inference", ICML 2026 (arXiv:2605.31239); the split test compares sequential
forecasters in the sense of Choe & Ramdas (2023).

1. Forecasters built only from data seen before ``t``: the leaf forecaster ``f0`` and the
   child forecaster ``f_s`` are Laplace class frequencies ``(N_k + 1) / (N + K)`` of the
   instances (weighted) that reached the leaf, resp. the child of ``x_t`` under split ``s``
   -> :func:`laplace_loss`.
2. Increment ``g_t^s = (l(f0(x_t), y_t) - l(f_s(x_t), y_t)) / L in [-1, 1]`` with a bounded
   loss of range ``L``: Brier (``L = 2``), zero-one (``L = 1``), log-loss clipped at
   ``p_min`` (``L = ln(1/p_min)``) -> :data:`LOSSES`, :func:`loss_range`.
"""

from __future__ import annotations

import math

from numba import njit

__all__ = [
    "BRIER",
    "LOG",
    "LOSSES",
    "ZERO_ONE",
    "laplace_loss",
    "loss_code",
    "loss_range",
    "prob_loss",
]

BRIER, ZERO_ONE, LOG = 0, 1, 2
LOSSES = {"brier": BRIER, "zero_one": ZERO_ONE, "log": LOG}


def loss_code(loss: str) -> int:
    """Integer code of a loss name; raises ``ValueError`` for unknown names."""
    try:
        return LOSSES[loss]
    except (KeyError, TypeError):
        raise ValueError(f"unknown loss {loss!r}; choose one of {sorted(LOSSES)}") from None


def loss_range(code: int, p_min: float) -> float:
    """Range ``L`` of the loss, so that ``l / L in [0, 1]``."""
    if code == BRIER:
        return 2.0
    if code == ZERO_ONE:
        return 1.0
    return math.log(1.0 / p_min)


@njit(cache=True, inline="always")
def laplace_loss(counts, n_classes, y, code, p_min):
    """Loss of the Laplace forecaster ``(N_k + 1) / (N + K)`` on label ``y``.

    ``counts`` is a 1-d array of (weighted) class counts of length ``>= n_classes``.
    """
    total = 0.0
    for k in range(n_classes):
        total += counts[k]
    denom = total + n_classes
    if code == BRIER:
        sq = 0.0
        for k in range(n_classes):
            p = (counts[k] + 1.0) / denom
            sq += p * p
        return sq - 2.0 * (counts[y] + 1.0) / denom + 1.0
    if code == ZERO_ONE:
        best = 0
        for k in range(1, n_classes):
            if counts[k] > counts[best]:
                best = k
        return 0.0 if best == y else 1.0
    p = (counts[y] + 1.0) / denom
    if p < p_min:
        p = p_min
    return -math.log(p)


@njit(cache=True, inline="always")
def prob_loss(p, n_classes, y, code, p_min):
    """Loss of a probability forecast ``p[:n_classes]`` (summing to 1) on label ``y``.

    The same bounded losses as :func:`laplace_loss`, for forecasters that are not class
    frequencies (the naive-Bayes leaf forecaster of :mod:`anytime_hoeffding.flat_tree`).
    """
    if code == BRIER:
        sq = 0.0
        for k in range(n_classes):
            sq += p[k] * p[k]
        return sq - 2.0 * p[y] + 1.0
    if code == ZERO_ONE:
        best = 0
        for k in range(1, n_classes):
            if p[k] > p[best]:
                best = k
        return 0.0 if best == y else 1.0
    q = p[y]
    if q < p_min:
        q = p_min
    return -math.log(q)
