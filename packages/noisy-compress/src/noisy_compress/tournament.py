"""Hypothesis selection on the noisy hold-out half: Scheffe tournament, minimum distance, knockout.

Candidates are given by their (noise-convolved) probabilities ``P[i, c]`` of the cells ``c`` of a
partition and the hold-out sample by its empirical cell frequencies ``h[c]``; Scheffe sets
``A_ij = {P_i > P_j}`` are unions of cells. ``Delta = max_A |mu_n(A) - mu(A)|`` over the sets used.

Paper concept -> code (Devroye & Lugosi 2001, Ch. 6; Acharya et al. 2014 for the knockout):

1. Scheffe test ``i`` vs ``j``: ``i`` wins iff ``|P_i(A_ij) - mu_n(A_ij)| < |P_j(A_ij) - mu_n(A_ij)|``:
   :func:`scheffe_tournament` (round robin, most wins). Guarantee in L1 ``9 OPT + 16 Delta``,
   i.e. in TV ``TV <= 9 OPT + 8 Delta``;
2. minimum-distance estimate ``argmin_i max_{A in Yatracos} |P_i(A) - mu_n(A)|``:
   :func:`minimum_distance`. Guarantee in L1 ``3 OPT + 4 Delta`` (the "factor 4"), i.e. in TV
   ``TV <= 3 OPT + 2 Delta``;
3. knockout: random pairs, Scheffe winners advance until ``survivors`` remain, then the minimum
   distance estimate among them: :func:`knockout_tournament` (``O(M)`` tests instead of
   ``O(M^2)``; its guarantee is relative to the best survivor);
4. ``Delta <= sqrt(log(2 K / delta) / (2 n))`` for ``K`` sets (Hoeffding + union bound), or,
   with the largest empirical variance ``V`` of a set indicator, the smaller of that (at
   ``delta / 2``) and the empirical-Bernstein bound of Maurer & Pontil (2009, Thm 4) at
   ``delta / 2``: ``sqrt(2 V log(8K/delta) / n) + 7 log(8K/delta) / (3 (n - 1))``:
   :func:`deviation_bound`. Every selector records ``V`` over the sets it looked at
   (``Selection.set_variance``).

Every selector first sorts the candidates into a canonical order (lexicographic on ``P``), so the
result does not depend on the order they were given in, and ties go to the canonically first one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

SCHEFFE_CONSTANTS = (9.0, 8.0)  # TV <= 9 OPT + 8 Delta
MIN_DISTANCE_CONSTANTS = (3.0, 2.0)  # TV <= 3 OPT + 2 Delta


@dataclass
class Selection:
    """Outcome of a selector: winner index (in the caller's order) and per-candidate scores."""

    winner: int
    method: str
    scores: np.ndarray  # wins (Scheffe/knockout) or -max deviation (minimum distance)
    n_sets: int  # number of Scheffe/Yatracos sets the guarantee unions over
    constants: tuple[float, float]  # (C_opt, C_delta) in TV <= C_opt OPT + C_delta Delta
    survivors: np.ndarray | None = None
    set_variance: float = 0.25  # largest empirical variance m (1 - m) of a set indicator used


def deviation_bound(n: int, n_sets: int, delta: float, variance: float | None = None) -> float:
    """W.p. ``1 - delta`` no set's empirical mass is off by more than this.

    Hoeffding with a union bound, ``sqrt(log(2 K / delta) / (2 n))``; with ``variance`` (the largest
    empirical variance ``m (1 - m)`` of a set indicator) the smaller of Hoeffding and the empirical
    Bernstein bound (Maurer & Pontil 2009, Thm 4), each at ``delta / 2``.

    Examples
    --------
    >>> round(deviation_bound(1000, 10, 0.1), 4)
    0.0515
    >>> deviation_bound(5000, 10**5, 0.1, variance=0.01) < deviation_bound(5000, 10**5, 0.1)
    True
    """
    K = max(n_sets, 1)
    if variance is None:
        return math.sqrt(math.log(2 * K / delta) / (2 * n))
    hoeffding = math.sqrt(math.log(4 * K / delta) / (2 * n))
    if n < 2:
        return hoeffding
    v = min(max(float(variance), 0.0), 0.25) * n / (n - 1)
    log_term = math.log(8 * K / delta)
    bernstein = math.sqrt(2 * v * log_term / n) + 7 * log_term / (3 * (n - 1))
    return min(hoeffding, bernstein)


def _variance(e: np.ndarray) -> float:
    return float(np.max(e * (1 - e))) if len(e) else 0.0


def _check(P: np.ndarray, h: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    P, h = np.asarray(P, dtype=float), np.asarray(h, dtype=float)
    if P.ndim != 2 or h.ndim != 1 or P.shape[1] != h.shape[0]:
        raise ValueError(f"P must be (M, cells) and h (cells,); got {P.shape} and {h.shape}")
    if len(P) == 0:
        raise ValueError("no candidates to select from")
    return P, h


def canonical_order(P: np.ndarray) -> np.ndarray:
    """A permutation sorting the rows of ``P`` lexicographically (order-independent tie-breaks)."""
    return np.lexsort(P.T[::-1])


def _scheffe_row(
    P: np.ndarray, h: np.ndarray, i: int, js: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Whether ``i`` beats each of ``js`` (ties: the lower index, in canonical order, wins), and
    the empirical masses of the Scheffe sets."""
    A = P[i][None, :] > P[js]  # (len(js), cells)
    pi, pj, e = A @ P[i], (A * P[js]).sum(axis=1), A @ h
    di, dj = np.abs(pi - e), np.abs(pj - e)
    return (di < dj) | ((di == dj) & (i < js)), e


def scheffe_tournament(P: np.ndarray, h: np.ndarray) -> Selection:
    """Round-robin Scheffe tournament; the candidate with the most wins is selected.

    Examples
    --------
    >>> P = np.array([[0.5, 0.5], [0.9, 0.1], [0.2, 0.8]])
    >>> scheffe_tournament(P, np.array([0.85, 0.15])).winner
    1
    """
    P, h = _check(P, h)
    order = canonical_order(P)
    Q = P[order]
    M = len(Q)
    wins = np.zeros(M)
    var = 0.0
    for i in range(M):
        js = np.arange(i + 1, M)
        if len(js) == 0:
            continue
        beat, e = _scheffe_row(Q, h, i, js)
        var = max(var, _variance(e))
        wins[i] += beat.sum()
        wins[js] += ~beat
    best = int(np.flatnonzero(wins == wins.max())[0])
    out = np.empty(M)
    out[order] = wins
    return Selection(int(order[best]), "scheffe", out, M * (M - 1) // 2, SCHEFFE_CONSTANTS,
                     set_variance=var)  # fmt: skip


def minimum_distance(P: np.ndarray, h: np.ndarray, chunk: int = 4096) -> Selection:
    """Minimum-distance estimate over the Yatracos class ``{A_jl = {P_j > P_l}: j < l}``.

    Examples
    --------
    >>> P = np.array([[0.5, 0.5], [0.9, 0.1], [0.2, 0.8]])
    >>> minimum_distance(P, np.array([0.25, 0.75])).winner
    2
    """
    P, h = _check(P, h)
    order = canonical_order(P)
    Q = P[order]
    M = len(Q)
    jj, ll = np.triu_indices(M, k=1)
    worst = np.zeros(M)
    var = 0.0
    for start in range(0, len(jj), chunk):
        A = (Q[jj[start : start + chunk]] > Q[ll[start : start + chunk]]).astype(float)
        e = A @ h
        var = max(var, _variance(e))
        dev = np.abs(Q @ A.T - e[None, :])  # (M, sets)
        worst = np.maximum(worst, dev.max(axis=1))
    best = int(np.flatnonzero(worst == worst.min())[0])
    out = np.empty(M)
    out[order] = -worst
    return Selection(int(order[best]), "min_distance", out, max(len(jj), 1),
                     MIN_DISTANCE_CONSTANTS, set_variance=var)  # fmt: skip


def knockout_tournament(
    P: np.ndarray, h: np.ndarray, survivors: int = 32, seed: int = 0
) -> Selection:
    """Knockout rounds of random Scheffe pairs until ``survivors`` remain, then minimum distance.

    Examples
    --------
    >>> P = np.array([[0.5, 0.5], [0.9, 0.1], [0.2, 0.8], [0.6, 0.4]])
    >>> knockout_tournament(P, np.array([0.88, 0.12]), survivors=2).winner
    1
    """
    P, h = _check(P, h)
    order = canonical_order(P)
    Q = P[order]
    rng = np.random.default_rng(seed)
    alive = np.arange(len(Q))
    wins = np.zeros(len(Q))
    n_tests = 0
    var = 0.0
    while len(alive) > max(survivors, 1):
        perm = rng.permutation(alive)
        nxt = [perm[-1]] if len(perm) % 2 else []
        for a, b in zip(perm[0:-1:2], perm[1::2], strict=False):
            i, j = min(a, b), max(a, b)
            beat_row, e = _scheffe_row(Q, h, i, np.array([j]))
            beat = bool(beat_row[0])
            var = max(var, _variance(e))
            winner = i if beat else j
            wins[winner] += 1
            nxt.append(winner)
            n_tests += 1
        alive = np.sort(np.array(nxt))
    final = minimum_distance(Q[alive], h)
    winner = int(alive[final.winner])
    out = np.empty(len(Q))
    out[order] = wins
    surv = np.sort(order[alive])
    return Selection(
        int(order[winner]),
        "knockout",
        out,
        n_tests + final.n_sets,
        MIN_DISTANCE_CONSTANTS,
        survivors=surv,
        set_variance=max(var, final.set_variance),
    )


def select(P: np.ndarray, h: np.ndarray, method: str = "auto", seed: int = 0) -> Selection:
    """Dispatch: ``scheffe``, ``min_distance``, ``knockout`` or ``auto`` (by candidate count)."""
    M = len(P)
    if method == "auto":
        method = "min_distance" if M <= 120 else ("scheffe" if M <= 600 else "knockout")
    if method == "scheffe":
        return scheffe_tournament(P, h)
    if method == "min_distance":
        return minimum_distance(P, h)
    if method == "knockout":
        return knockout_tournament(P, h, seed=seed)
    raise ValueError(
        f"unknown selection {method!r}; choose scheffe, min_distance, knockout or auto"
    )
