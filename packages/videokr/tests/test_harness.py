"""Evaluation harness: chance, determinism, grouping, skipped open-ended items, lmms-eval export."""

import ast

import numpy as np
import pytest
from videokr.harness import (
    EvalHarness,
    RandomPredictor,
    RougeJudge,
    chance_accuracy,
    export_lmms_eval_task,
)


def _records(n=2000, k=4, seed=0):
    rng = np.random.default_rng(seed)
    return [
        {
            "id": f"q{i}",
            "options": [f"{c}. o{c}" for c in "ABCDEFGHIJ"[:k]],
            "problem_type": "multiple choice",
            "solution": f"<answer>{'ABCDEFGHIJ'[int(rng.integers(k))]}</answer>",
            "skill": ["VidR", "KnowVid", "KnowVidR"][i % 3],
            "subject": "S",
            "dataset": "d",
        }
        for i in range(n)
    ]


@pytest.mark.parametrize("k", [2, 4, 10])
def test_random_predictor_scores_one_over_options(k):
    recs = _records(k=k)
    res = EvalHarness(recs).evaluate(RandomPredictor(1)(recs))
    assert res.overall == pytest.approx(1 / k, abs=0.035)
    assert chance_accuracy(recs) == pytest.approx(1 / k)
    assert res.format_rate == 1.0


def test_deterministic_under_seed():
    recs = _records(300)
    a = EvalHarness(recs).evaluate(RandomPredictor(7)(recs))
    b = EvalHarness(recs).evaluate(RandomPredictor(7)(recs))
    c = EvalHarness(recs).evaluate(RandomPredictor(8)(recs))
    assert a.per_item == b.per_item and a.by == b.by
    assert a.per_item != c.per_item


def test_per_skill_accuracy_and_missing_outputs_count_as_wrong():
    recs = _records(6)
    outs = {r["id"]: f"<think>t</think>{r['solution']}" for r in recs if r["skill"] == "VidR"}
    res = EvalHarness(recs).evaluate(outs)
    assert res.by["skill"] == {"KnowVid": 0.0, "KnowVidR": 0.0, "VidR": 1.0}
    assert res.overall == pytest.approx(1 / 3) and res.n_scored == 6


def test_open_ended_skipped_without_judge_scored_with_rouge():
    recs = [
        {
            "id": "o",
            "options": [],
            "problem_type": "open-ended",
            "solution": "<answer>the cat sat</answer>",
        }
    ]
    out = {"o": "<think>t</think><answer>the cat sat</answer>"}
    rule = EvalHarness(recs).evaluate(out)
    assert rule.n_skipped == 1 and rule.n_scored == 0
    rouge = EvalHarness(recs, RougeJudge()).evaluate(out)
    assert rouge.overall == pytest.approx(1.0)


def test_lmms_eval_export(tmp_path):
    paths = export_lmms_eval_task(tmp_path, "data/VideoKR_eval.jsonl")
    names = sorted(p.name for p in paths)
    assert names == ["utils.py", "videokr_eval.yaml"]
    text = (tmp_path / "videokr_eval.yaml").read_text()
    assert "task: videokr_eval" in text and "data/VideoKR_eval.jsonl" in text
    tree = ast.parse((tmp_path / "utils.py").read_text())
    funcs = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    assert {"doc_to_visual", "doc_to_text", "doc_to_target", "process_results"} <= funcs
