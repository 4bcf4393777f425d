"""GRPO reward of VideoKR: ``r = 0.9 * accuracy + 0.1 * format``; group-relative advantage.

* :func:`format_reward` -- 1 iff the whole output matches ``<think>...</think>\\s*<answer>...</answer>``
  with exactly one block of each.
* :func:`extract_answer` -- content of the ``<answer>`` block (stripped).
* :func:`accuracy_reward` -- multiple choice: exact match of the answer content; open-ended:
  mean of ROUGE-1/2/L F1 (:func:`rouge_reward`, torchmetrics' ``ROUGEScore``, the same
  definitions as Google's ``rouge-score`` that the authors call); numerical: equal numbers.
* :func:`compute_score` -- ``0.9 * acc + 0.1 * fmt``.
* :func:`group_advantage` -- ``(r - mean_group) / std_group``.

>>> compute_score("<think>x</think> <answer>B</answer>", "<answer>B</answer>")
1.0
>>> compute_score("B", "<answer>B</answer>")
0.0
"""

from __future__ import annotations

import functools
import re

import numpy as np

_FORMAT = re.compile(r"^\s*<think>.*?</think>\s*<answer>.*?</answer>\s*$", re.DOTALL)
_ANSWER = re.compile(r"<answer>(.*?)</answer>", re.DOTALL)


def format_reward(output: str) -> float:
    """1.0 when the whole output is one ``<think>..</think>`` then one ``<answer>..</answer>``.

    Several think/answer blocks (tag-count hacking) get 0.

    >>> format_reward("<think>a</think><answer>A</answer><answer>B</answer>")
    0.0
    """
    if not _FORMAT.match(output):
        return 0.0
    counts = [output.count(t) for t in ("<think>", "</think>", "<answer>", "</answer>")]
    return 1.0 if counts == [1, 1, 1, 1] else 0.0


def extract_answer(text: str) -> str:
    """Content of the first ``<answer>`` block, stripped; the whole text if there is none."""
    m = _ANSWER.search(text)
    return (m.group(1) if m else text).strip()


@functools.cache
def _rouge():
    from torchmetrics.text.rouge import ROUGEScore

    return ROUGEScore(rouge_keys=("rouge1", "rouge2", "rougeL"))


def rouge_reward(prediction: str, reference: str) -> float:
    """Mean of ROUGE-1, ROUGE-2 and ROUGE-L F1 (0 when either side is empty).

    >>> rouge_reward("the cat sat", "the cat sat")
    1.0
    >>> round(rouge_reward("the cat", "the cat sat down"), 3)
    0.611
    """
    if not prediction.strip() or not reference.strip():
        return 0.0
    s = _rouge()(prediction, reference)
    return float(sum(s[f"{k}_fmeasure"] for k in ("rouge1", "rouge2", "rougeL")) / 3)


def _number(text: str) -> float | None:
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return None


def accuracy_reward(output: str, solution: str, problem_type: str = "multiple choice") -> float:
    """Accuracy of the first ``<answer>`` block; 0 without one or when it is empty."""
    if not _ANSWER.search(output):
        return 0.0
    pred, ref = extract_answer(output), extract_answer(solution)
    if not pred:
        return 0.0
    if problem_type == "open-ended":
        return rouge_reward(pred, ref)
    if problem_type == "numerical":
        a, b = _number(pred), _number(ref)
        return (
            1.0 if a is not None and b is not None and abs(a - b) <= 1e-6 * max(1, abs(b)) else 0.0
        )
    return 1.0 if pred == ref else 0.0


ACCURACY_WEIGHT, FORMAT_WEIGHT = 0.9, 0.1


def compute_score(output: str, solution: str, problem_type: str = "multiple choice") -> float:
    """``0.9 * accuracy + 0.1 * format``."""
    return ACCURACY_WEIGHT * accuracy_reward(
        output, solution, problem_type
    ) + FORMAT_WEIGHT * format_reward(output)


def group_advantage(rewards, eps: float = 1e-6) -> np.ndarray:
    """Group-relative advantage ``(r - mean) / (std + eps)`` along the last axis."""
    r = np.asarray(rewards, dtype=float)
    return (r - r.mean(-1, keepdims=True)) / (r.std(-1, keepdims=True) + eps)
