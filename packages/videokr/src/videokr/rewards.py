"""GRPO reward of VideoKR: ``r = 0.9 * accuracy + 0.1 * format``; group-relative advantage.

Paper: VideoKR (ICML 2026), Sec. 4 (RL stage). The scoring rules follow the authors' published
verl reward (``verl/utils/reward_score/videokr.py`` in github.com/Fu-Fu-Fu-Fu/VideoKR), rule
by rule (tested on 1,000 fuzzed strings against an independent re-implementation in
``tests/test_rewards.py``):

* :func:`format_reward` -- 1 iff the *whole* output matches
  ``<think>.*?</think>\\s*<answer>.*?</answer>`` (a full match: no leading or trailing
  whitespace; several blocks can still match, as in the authors' rule). ``strict=True`` also
  requires exactly one block of each (our hardening against tag-count hacking; not the default).
* :func:`extract_answer` -- content of the first ``<answer>\\s*(.*?)\\s*</answer>``, stripped;
  ``""`` when there is none.
* :func:`accuracy_reward` -- by ``problem_type``: ``"multiple choice"``: exact match of the
  two extracted answers (so two empty answers match); ``"open-ended"``: mean of ROUGE-1/2/L F1
  from Google's ``rouge-score`` *with its Porter stemmer* (:func:`rouge_reward`), clipped to
  [0, 1]; any other type (``"numerical"`` included) scores 0, as in the authors' reward.
* :func:`compute_score` -- ``0.9 * acc + 0.1 * fmt`` (:data:`ACCURACY_WEIGHT`,
  :data:`FORMAT_WEIGHT`).
* :func:`numerical_match` -- equal numbers; used by the *evaluation* rule judge only
  (the authors' eval judge accepts matching numbers; their RL reward does not).
* :func:`group_advantage` -- ``(r - mean_group) / std_group``.

>>> compute_score("<think>x</think> <answer>B</answer>", "<answer>B</answer>")
1.0
>>> compute_score("B", "<answer>B</answer>")
0.0
>>> round(compute_score(" <think>x</think><answer>B</answer>", "<answer>B</answer>"), 6)
0.9
"""

from __future__ import annotations

import functools
import re

import numpy as np

_FORMAT = re.compile(r"<think>.*?</think>\s*<answer>.*?</answer>", re.DOTALL)
_ANSWER = re.compile(r"<answer>\s*(.*?)\s*</answer>", re.DOTALL)
ROUGE_TYPES = ("rouge1", "rouge2", "rougeL")
ACCURACY_WEIGHT, FORMAT_WEIGHT = 0.9, 0.1  # the authors' reward: 0.9 accuracy + 0.1 format


def format_reward(output: str, strict: bool = False) -> float:
    """1.0 when the whole output is ``<think>..</think>`` then ``<answer>..</answer>``.

    ``strict=True`` gives 0 to several think/answer blocks (tag-count hacking); the authors'
    rule (the default) accepts them.

    >>> format_reward("<think>a</think><answer>A</answer><answer>B</answer>")
    1.0
    >>> format_reward("<think>a</think><answer>A</answer><answer>B</answer>", strict=True)
    0.0
    >>> format_reward("<think>a</think><answer>A</answer>\\n")
    0.0
    """
    output = str(output or "")
    if not _FORMAT.fullmatch(output):
        return 0.0
    if strict:
        counts = [output.count(t) for t in ("<think>", "</think>", "<answer>", "</answer>")]
        return 1.0 if counts == [1, 1, 1, 1] else 0.0
    return 1.0


def extract_answer(text: str) -> str:
    """Content of the first ``<answer>`` block, stripped; ``""`` if there is none.

    >>> extract_answer("<think>t</think><answer>  B \\n</answer>"), extract_answer("B")
    ('B', '')
    """
    m = _ANSWER.search(str(text or ""))
    return m.group(1).strip() if m else ""


@functools.cache
def _scorer():
    from rouge_score import rouge_scorer

    return rouge_scorer.RougeScorer(list(ROUGE_TYPES), use_stemmer=True)


def rouge_reward(prediction: str, reference: str) -> float:
    """Mean of ROUGE-1, ROUGE-2 and ROUGE-L F1 (``rouge-score``, Porter stemmer on).

    Tokens are lower-cased ``[a-z0-9]+`` runs, words longer than 3 characters stemmed; an
    empty side scores 0.

    >>> rouge_reward("the cat sat", "the cat sat")
    1.0
    >>> round(rouge_reward("the cats were running", "the cat was run"), 4)
    0.6111
    """
    s = _scorer().score(str(reference), str(prediction))
    return float(sum(s[k].fmeasure for k in ROUGE_TYPES) / 3.0)


def accuracy_reward(output: str, solution: str, problem_type: str = "multiple choice") -> float:
    """Accuracy of the first ``<answer>`` block of ``output`` against ``solution``'s.

    >>> accuracy_reward("<answer>B</answer>", "<answer> B</answer>")
    1.0
    >>> accuracy_reward("<answer>12</answer>", "<answer>12</answer>", "numerical")
    0.0
    """
    pred, ref = extract_answer(output), extract_answer(solution)
    if problem_type == "multiple choice":
        return 1.0 if pred == ref else 0.0
    if problem_type == "open-ended":
        return max(0.0, min(1.0, rouge_reward(pred, ref)))
    return 0.0


def compute_score(output: str, solution: str, problem_type: str = "multiple choice") -> float:
    """``0.9 * accuracy + 0.1 * format`` (the authors' ``compute_score``)."""
    return ACCURACY_WEIGHT * accuracy_reward(
        output, solution, problem_type
    ) + FORMAT_WEIGHT * format_reward(output)


def _number(text: str) -> float | None:
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return None


def numerical_match(output: str, solution: str, rel: float = 1e-6) -> float:
    """1.0 when both answers parse as the same number (relative tolerance ``rel``).

    Evaluation only (see the module docstring).

    >>> numerical_match("<answer>1,000</answer>", "<answer>1000.0</answer>")
    1.0
    """
    a, b = _number(extract_answer(output)), _number(extract_answer(solution))
    return 1.0 if a is not None and b is not None and abs(a - b) <= rel * max(1, abs(b)) else 0.0


def group_advantage(rewards, eps: float = 1e-6) -> np.ndarray:
    """Group-relative advantage ``(r - mean) / (std + eps)`` along the last axis.

    Groups whose rewards are all equal get exactly 0 (as :func:`videokr.lightning.group_advantages`).
    """
    r = np.asarray(rewards, dtype=float)
    adv = (r - r.mean(-1, keepdims=True)) / (r.std(-1, keepdims=True) + eps)
    return np.where(r.max(-1, keepdims=True) == r.min(-1, keepdims=True), 0.0, adv)
