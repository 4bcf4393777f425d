"""GRPO reward of VideoKR: ``r = 0.9 * accuracy + 0.1 * format``; group-relative advantage.

* :func:`format_reward` -- 1 iff the whole output matches ``<think>...</think>\\s*<answer>...</answer>``.
* :func:`extract_answer` -- content of the ``<answer>`` block (stripped).
* :func:`accuracy_reward` -- multiple choice: exact match of the answer content.
* :func:`compute_score` -- ``0.9 * acc + 0.1 * fmt``.
* :func:`group_advantage` -- ``(r - mean_group) / std_group``.

>>> compute_score("<think>x</think> <answer>B</answer>", "<answer>B</answer>")
1.0
>>> compute_score("B", "<answer>B</answer>")
0.0
"""

from __future__ import annotations

import re

import numpy as np

_FORMAT = re.compile(r"^\s*<think>.*?</think>\s*<answer>.*?</answer>\s*$", re.DOTALL)
_ANSWER = re.compile(r"<answer>(.*?)</answer>", re.DOTALL)


def format_reward(output: str) -> float:
    """1.0 when the whole output is ``<think>..</think>`` then ``<answer>..</answer>``."""
    return 1.0 if _FORMAT.match(output) else 0.0


def extract_answer(text: str) -> str:
    """Content of the first ``<answer>`` block, stripped; the whole text if there is none."""
    m = _ANSWER.search(text)
    return (m.group(1) if m else text).strip()


def accuracy_reward(output: str, solution: str) -> float:
    """Exact match of the ``<answer>`` contents (multiple choice)."""
    if not _ANSWER.search(output):
        return 0.0
    return 1.0 if extract_answer(output) == extract_answer(solution) else 0.0


def compute_score(output: str, solution: str) -> float:
    """``0.9 * accuracy + 0.1 * format``."""
    return 0.9 * accuracy_reward(output, solution) + 0.1 * format_reward(output)


def group_advantage(rewards, eps: float = 1e-6) -> np.ndarray:
    """Group-relative advantage ``(r - mean) / (std + eps)`` along the last axis."""
    r = np.asarray(rewards, dtype=float)
    return (r - r.mean(-1, keepdims=True)) / (r.std(-1, keepdims=True) + eps)
