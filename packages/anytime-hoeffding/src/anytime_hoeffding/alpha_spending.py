"""Alpha spending over the tree: the level each leaf's split test is run at.

Paper: Amoukou, Mishra & Veloso, ICML 2026 (arXiv:2605.31239). Reconstruction (see README):

- ``"node"``: every leaf tests at ``alpha_l = alpha`` (the analogue of the Hoeffding tree's
  per-split ``delta``; false splits are controlled per node, not over the tree).
- ``"tree"`` (default): a leaf at depth ``d`` tests at
  ``alpha_l = alpha / ((d + 1)(d + 2) 2^d)``. A binary tree has at most ``2^d`` positions at
  depth ``d`` and each position is occupied by at most one leaf, so the levels of all nodes
  that could ever exist sum to ``alpha * sum_d 1/((d+1)(d+2)) = alpha``: by a union bound,
  ``P(any false split, ever, anywhere in the tree) <= alpha``.

Within a leaf the ``|S_l|`` candidate e-processes are combined by Bonferroni: split when
``max_s K^s >= |S_l| / alpha_l`` -> :func:`log_split_threshold`.
"""

from __future__ import annotations

import math

__all__ = ["SPENDINGS", "leaf_alpha", "log_split_threshold"]

SPENDINGS = ("tree", "node")


def leaf_alpha(alpha: float, depth: int, spending: str = "tree") -> float:
    """Level ``alpha_l`` of a leaf at ``depth`` (root = 0).

    >>> leaf_alpha(0.05, 0)
    0.025
    >>> round(sum(2**d * leaf_alpha(1.0, d) for d in range(200)), 6)
    0.995025
    """
    if spending == "node":
        return alpha
    if spending == "tree":
        return alpha / ((depth + 1) * (depth + 2) * 2.0**depth)
    raise ValueError(f"unknown alpha_spending {spending!r}; choose one of {list(SPENDINGS)}")


def log_split_threshold(alpha: float, depth: int, n_candidates: int, spending: str = "tree"):
    """``log(|S_l| / alpha_l)``: the log e-value a leaf's best candidate must reach."""
    return math.log(max(n_candidates, 1)) - math.log(leaf_alpha(alpha, depth, spending))
