"""Reward edge cases: tags, several answer blocks, whitespace, empty answers, weights, ROUGE."""

import numpy as np
import pytest
from videokr.rewards import (
    accuracy_reward,
    compute_score,
    extract_answer,
    format_reward,
    group_advantage,
    rouge_reward,
)

SOL = "<answer>B</answer>"


def test_weights():
    assert compute_score("<think>a</think>\n<answer>B</answer>", SOL) == 1.0
    assert compute_score("<think>a</think><answer>C</answer>", SOL) == pytest.approx(0.1)
    assert compute_score("<answer>B</answer>", SOL) == pytest.approx(0.9)
    assert compute_score("B", SOL) == 0.0


def test_missing_tags():
    assert format_reward("<think>a</think>") == 0.0
    assert format_reward("<answer>B</answer>") == 0.0
    assert format_reward("<think>a<answer>B</answer>") == 0.0
    assert accuracy_reward("B", SOL) == 0.0  # no answer block: no credit for a bare letter
    assert format_reward("prefix <think>a</think><answer>B</answer>") == 0.0


def test_several_answer_blocks_first_counts_and_format_fails():
    out = "<think>a</think><answer>A</answer><answer>B</answer>"
    assert extract_answer(out) == "A"
    assert accuracy_reward(out, SOL) == 0.0
    assert format_reward(out) == 0.0
    assert format_reward("<think>a</think><think>b</think><answer>B</answer>") == 0.0


def test_whitespace_and_empty_answer():
    assert compute_score("  <think>\n a \n</think>\n\n<answer>  B \n</answer>  ", SOL) == 1.0
    assert accuracy_reward("<think>a</think><answer>  </answer>", SOL) == 0.0
    assert accuracy_reward("<think>a</think><answer></answer>", "<answer></answer>") == 0.0


def test_open_ended_rouge_and_numerical():
    assert rouge_reward("", "x") == 0.0
    assert (
        accuracy_reward(
            "<answer>the cat sat</answer>", "<answer>the cat sat</answer>", "open-ended"
        )
        == 1.0
    )
    part = accuracy_reward(
        "<answer>the cat</answer>", "<answer>the cat sat down</answer>", "open-ended"
    )
    assert 0.0 < part < 1.0
    assert accuracy_reward("<answer>1,000</answer>", "<answer>1000.0</answer>", "numerical") == 1.0
    assert accuracy_reward("<answer>12</answer>", "<answer>13</answer>", "numerical") == 0.0


def test_rouge_parity_with_rouge_score():
    rouge_scorer = pytest.importorskip("rouge_score.rouge_scorer")
    scorer = rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL"])
    for pred, ref in [
        ("the cat", "the cat sat down"),
        ("a b c d", "d c b a"),
        ("x y z", "x q z y"),
    ]:
        want = np.mean([s.fmeasure for s in scorer.score(ref, pred).values()])
        assert rouge_reward(pred, ref) == pytest.approx(want, abs=1e-6)


def test_group_advantage_sums_to_zero_and_equal_rewards_give_zero():
    a = group_advantage(np.array([[1.0, 0.0, 0.5, 0.1], [0.3, 0.3, 0.3, 0.3]]))
    assert np.allclose(a.sum(-1), 0.0)
    assert np.allclose(a[1], 0.0)
