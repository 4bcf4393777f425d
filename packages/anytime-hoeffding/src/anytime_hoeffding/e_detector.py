"""Anytime-valid drift adaptation: an e-detector on the error stream and the swap test.

Paper: Amoukou, Mishra & Veloso, ICML 2026 (arXiv:2605.31239) evaluates its tree on
drifting streams; the single tree's drift adaptation below is this package's construction
(issue #35), in the spirit of the Hoeffding Adaptive Tree (Bifet & Gavalda 2009) with its
statistics replaced by e-processes:

1. Change detection: a Shiryaev-Roberts e-detector (Shin, Ramdas & Rinaldo 2024,
   "E-detectors: a nonparametric framework for sequential change detection", NEJSDS) on the
   deployed tree's 0/1 errors, ``M_t = (M_{t-1} + 1)(1 + lambda (e_t - p_{t-1}))`` with
   ``p_{t-1}`` the error rate since the last reset, averaged over a grid of bets ``lambda``
   (an average of e-detectors is one); an alarm when ``M_t >= 1 / alpha_d``
   -> :func:`detector_scan`. The alarm only *starts* an alternate tree; it never changes the
   deployed model by itself.
2. Swap test: an alternate tree grown from the alarm on is compared with the deployed tree
   on the instances both predict before learning, ``g_t = e_t(main) - e_t(alternate)``
   in [-1, 1]; the alternate replaces the deployed tree when the betting e-process of
   ``H0: E[g_t | past] <= 0`` crosses ``1 / alpha_m`` (``alpha_m = alpha_swap / (m (m+1))``
   for the ``m``-th alternate, so the levels of all alternates sum to ``alpha_swap``)
   -> :func:`swap_scan`, :func:`swap_level`.
3. What the alternate is (in :class:`anytime_hoeffding.tree.AnytimeHoeffdingTreeClassifier`):
   by default the deployed tree regrown (its splits, fresh leaves), so splits shared by the
   old and the new concept survive; a one-leaf challenger then replaces a regrown tree at
   the end of its patience if it is smaller and made no more errors over the patience's
   second half. Neither adds a split, so the false-split guarantee is untouched.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from .eprocess import eprocess_step, init_state

__all__ = ["DETECTOR_BETS", "detector_scan", "new_detector", "new_swap_state", "swap_level",
           "swap_scan"]  # fmt: skip

DETECTOR_BETS = (0.05, 0.1, 0.2, 0.4)  # grid of constant bets of the SR mixture e-detector
DETECTOR_WARMUP = 100  # errors seen since a reset before the detector may alarm


def new_detector() -> np.ndarray:
    """Fresh detector state ``[n, n_errors, M(lambda_1), ..., M(lambda_G)]``."""
    return np.zeros(2 + len(DETECTOR_BETS), np.float64)


def swap_level(alpha_swap: float, m: int) -> float:
    """Level of the ``m``-th alternate's swap test (``m >= 1``); they sum to ``alpha_swap``.

    >>> round(sum(swap_level(0.05, m) for m in range(1, 10_000)), 4)
    0.05
    """
    return alpha_swap / (m * (m + 1.0))


@njit(cache=True)
def detector_scan(state, err, start, stop, log_thr):
    """Feed ``err[start:stop]`` (0/1; negative = skipped row) to the SR e-detector ``state``.

    Returns the first row index at which the mixture ``mean_g M_t(lambda_g)`` reaches
    ``exp(log_thr)`` (the state is then reset), or -1.
    """
    g = state.shape[0] - 2
    thr = math.exp(log_thr)
    for i in range(start, stop):
        e = err[i]
        if e < 0.0:
            continue
        n = state[0]
        p = (state[1] + 1.0) / (n + 2.0)  # predictable error rate (Laplace)
        acc = 0.0
        for k in range(g):
            lam = 0.05 * 2.0**k  # DETECTOR_BETS
            state[2 + k] = (state[2 + k] + 1.0) * (1.0 + lam * (e - p))
            acc += state[2 + k]
        state[0] = n + 1.0
        state[1] += e
        if n + 1.0 >= 100.0 and acc / g >= thr:  # DETECTOR_WARMUP
            for k in range(state.shape[0]):
                state[k] = 0.0
            return i
    return -1


def new_swap_state(betting: int) -> np.ndarray:
    """Fresh swap e-process state (``K_0 = 1``)."""
    return init_state((), betting)


@njit(cache=True)
def swap_scan(state, err_main, err_alt, start, stop, log_thr, betting, cap):
    """Advance the swap e-process on ``g_i = err_main[i] - err_alt[i]``, ``i in [start, stop)``.

    Returns the first index where ``log K >= log_thr`` (the alternate is significantly
    better), or -1.
    """
    for i in range(start, stop):
        a, b = err_main[i], err_alt[i]
        if a < 0.0 or b < 0.0:
            continue
        eprocess_step(state, a - b, 1.0, betting, cap)
        if state[0] >= log_thr:
            return i
    return -1
