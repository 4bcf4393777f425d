"""Reward parity with the authors' scoring rules, and the edge cases that define them.

The reference below re-implements the rules of the authors' verl reward
(``verl/utils/reward_score/videokr.py``, github.com/Fu-Fu-Fu-Fu/VideoKR) independently of
``videokr.rewards``: answer extraction and the format full-match by string scanning (no
regular expressions), ROUGE-1/2/L F1 from n-gram counts and an LCS table over rouge-score's
tokenisation with its Porter stemmer (``nltk``), numerical and unknown types scored 0. The
parity test compares the two on 1,000 fuzzed (output, solution, problem type) triples.
"""

from collections import Counter

import numpy as np
import pytest
from videokr.rewards import (
    accuracy_reward,
    compute_score,
    extract_answer,
    format_reward,
    group_advantage,
    numerical_match,
    rouge_reward,
)

SOL = "<answer>B</answer>"

# ---------------------------------------------------------------- the reference


def ref_extract(text: str) -> str:
    start = text.find("<answer>")
    if start < 0:
        return ""
    end = text.find("</answer>", start + len("<answer>"))
    if end < 0:
        return ""
    return text[start + len("<answer>") : end].strip()


def ref_format(text: str) -> float:
    head, tail = "<think>", "</answer>"
    if not (text.startswith(head) and text.endswith(tail)):
        return 0.0
    last_open = len(text) - len(tail) - len("<answer>")  # latest start of the answer tag
    i = text.find("</think>", len(head))
    while i >= 0:
        j = i + len("</think>")
        while j < len(text) and text[j].isspace():
            j += 1
        if text.startswith("<answer>", j) and j <= last_open:
            return 1.0
        i = text.find("</think>", i + 1)
    return 0.0


def _stemmer():
    from nltk.stem import porter

    return porter.PorterStemmer()


STEM = _stemmer()


def ref_tokens(text: str) -> list[str]:
    low = text.lower()
    out, word = [], []
    for ch in low + " ":
        if ("a" <= ch <= "z") or ("0" <= ch <= "9"):
            word.append(ch)
        elif word:
            out.append("".join(word))
            word = []
    out = [STEM.stem(w) if len(w) > 3 else w for w in out]
    return [w for w in out if w and all(("a" <= c <= "z") or ("0" <= c <= "9") for c in w)]


def _f1(overlap: int, n_pred: int, n_ref: int) -> float:
    if overlap == 0 or n_pred == 0 or n_ref == 0:
        return 0.0
    p, r = overlap / n_pred, overlap / n_ref
    return 2 * p * r / (p + r)


def _ngram_f1(pred: list[str], ref: list[str], n: int) -> float:
    cp = Counter(tuple(pred[i : i + n]) for i in range(len(pred) - n + 1))
    cr = Counter(tuple(ref[i : i + n]) for i in range(len(ref) - n + 1))
    return _f1(sum((cp & cr).values()), sum(cp.values()), sum(cr.values()))


def _lcs(a: list[str], b: list[str]) -> int:
    row = [0] * (len(b) + 1)
    for x in a:
        prev = 0
        for j, y in enumerate(b, 1):
            cur = row[j]
            row[j] = prev + 1 if x == y else max(row[j], row[j - 1])
            prev = cur
    return row[-1]


def ref_rouge(pred: str, ref: str) -> float:
    p, r = ref_tokens(pred), ref_tokens(ref)
    lcs = _f1(_lcs(p, r), len(p), len(r))
    return (_ngram_f1(p, r, 1) + _ngram_f1(p, r, 2) + lcs) / 3.0


def ref_score(output: str, solution: str, problem_type: str) -> float:
    pred, gold = ref_extract(output), ref_extract(solution)
    if problem_type == "multiple choice":
        acc = float(pred == gold)
    elif problem_type == "open-ended":
        acc = min(1.0, max(0.0, ref_rouge(pred, gold)))
    else:
        acc = 0.0
    return 0.9 * acc + 0.1 * ref_format(output)


# ---------------------------------------------------------------- fuzzing

TAGS = ["<think>", "</think>", "<answer>", "</answer>", "<answer", "answer>", "</think", "<>"]
SPACES = [" ", "  ", "\n", "\t", "\r\n", "\u00a0", "\u2003", "\x0b", ""]
WORDS = [
    "the",
    "a",
    "cat",
    "cats",
    "was",
    "were",
    "run",
    "running",
    "runs",
    "ran",
    "studies",
    "studying",
    "studied",
    "generously",
    "happiness",
    "happily",
    "connection",
    "connected",
    "connecting",
    "a1",
    "B",
    "C",
    "D",
    "A",
    "1,000",
    "12.5",
    "-3",
    "café",
    "naïve",
    "Object",
    "objects",
    "moving",
    "moved",
    "left",
    "right",
    "up",
    "down",
    ",",
    ".",
    "?",
    "!",
    ";",
    "it's",
    "don't",
    "x-ray",
    "e.g.",
    "ÉCOLE",
]


def fuzz_case(rng: np.random.Generator) -> tuple[str, str, str]:
    def pick(xs):
        return xs[int(rng.integers(len(xs)))]

    def words(k):
        return pick(SPACES[:3]).join(pick(WORDS) for _ in range(k))

    kind = int(rng.integers(4))
    answer = pick(["A", "B", "C", "D"]) if rng.random() < 0.5 else words(int(rng.integers(0, 7)))
    gold = pick(["A", "B", "C", "D"]) if rng.random() < 0.5 else words(int(rng.integers(1, 7)))
    if rng.random() < 0.3:
        gold = answer  # exact (or near-exact, after whitespace) answers
    sol = f"<answer>{pick(SPACES)}{gold}{pick(SPACES)}</answer>"
    if kind == 0:  # well formed, with whitespace variations
        out = f"<think>{words(3)}</think>{pick(SPACES)}<answer>{pick(SPACES)}{answer}{pick(SPACES)}</answer>"
    elif kind == 1:  # well formed plus surrounding whitespace or text
        core = f"<think>{words(2)}</think>{pick(SPACES)}<answer>{answer}</answer>"
        out = f"{pick(SPACES + ['x', 'Answer: '])}{core}{pick(SPACES + ['.', ' ok'])}"
    elif kind == 2:  # several blocks, missing or broken tags
        parts = [
            pick(TAGS) if rng.random() < 0.5 else words(1) for _ in range(int(rng.integers(1, 9)))
        ]
        out = "".join(p + pick(SPACES) for p in parts)
    else:  # a random mix around a real answer block
        out = f"{pick(TAGS)}{words(2)}{pick(TAGS)}{pick(SPACES)}<answer>{answer}</answer>{pick(TAGS + [''])}"
    ptype = pick(
        ["multiple choice", "multiple choice", "open-ended", "open-ended", "numerical", ""]
    )
    return out, sol, ptype


def test_reward_parity_on_1000_fuzzed_strings():
    rng = np.random.default_rng(2026)
    cases = [fuzz_case(rng) for _ in range(1000)]
    fmt_ones = mc_ones = partial_rouge = 0
    for out, sol, ptype in cases:
        want = ref_score(out, sol, ptype)
        got = compute_score(out, sol, ptype)
        assert got == pytest.approx(want, abs=1e-12), (out, sol, ptype)
        assert extract_answer(out) == ref_extract(out), out
        assert format_reward(out) == ref_format(out), out
        fmt_ones += ref_format(out) == 1.0
        mc_ones += ptype == "multiple choice" and ref_extract(out) == ref_extract(sol)
        partial_rouge += (
            ptype == "open-ended" and 0.0 < ref_rouge(ref_extract(out), ref_extract(sol)) < 1.0
        )
    # the fuzzer reaches every branch often enough for the comparison to mean something
    assert fmt_ones >= 150 and 1000 - fmt_ones >= 150
    assert mc_ones >= 50
    assert partial_rouge >= 50


def test_rouge_parity_with_rouge_score_stemmed():
    from rouge_score import rouge_scorer

    scorer = rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL"], use_stemmer=True)
    rng = np.random.default_rng(7)
    for _ in range(300):
        pred = " ".join(rng.choice(WORDS, int(rng.integers(0, 8))))
        ref = " ".join(rng.choice(WORDS, int(rng.integers(0, 8))))
        want = np.mean([s.fmeasure for s in scorer.score(ref, pred).values()])
        assert rouge_reward(pred, ref) == pytest.approx(want, abs=1e-12)
        assert ref_rouge(pred, ref) == pytest.approx(want, abs=1e-12)


def test_the_reported_deviations_are_gone():
    # stemming: "cats"/"cat", "running"/"run" match (0.25 without the stemmer)
    r = accuracy_reward(
        "<answer>the cats were running</answer>", "<answer>the cat was run</answer>", "open-ended"
    )
    assert r == pytest.approx((0.75 + 1 / 3 + 0.75) / 3)  # rouge-1, rouge-2, rouge-L F1
    # the format regex is a full match: surrounding whitespace fails the format part
    assert compute_score(" <think>a</think><answer>B</answer>", SOL) == pytest.approx(0.9)
    assert compute_score("<think>a</think><answer>B</answer>\n", SOL) == pytest.approx(0.9)
    # numerical items get no accuracy credit from the RL reward (the authors' rule) ...
    out = "<think>a</think><answer>12</answer>"
    assert compute_score(out, "<answer>12</answer>", "numerical") == pytest.approx(0.1)
    # ... while the evaluation rule judge compares the numbers
    assert numerical_match("<answer>1,000</answer>", "<answer>1000.0</answer>") == 1.0
    assert numerical_match("<answer>12</answer>", "<answer>13</answer>") == 0.0


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


def test_several_answer_blocks_first_counts():
    out = "<think>a</think><answer>A</answer><answer>B</answer>"
    assert extract_answer(out) == "A"
    assert accuracy_reward(out, SOL) == 0.0
    assert format_reward(out) == 1.0  # the authors' full match accepts it ...
    assert format_reward(out, strict=True) == 0.0  # ... the strict option does not
    assert format_reward("<think>a</think><think>b</think><answer>B</answer>", strict=True) == 0.0


def test_whitespace_and_empty_answer():
    assert compute_score("<think>\n a \n</think>\n\n<answer>  B \n</answer>", SOL) == 1.0
    assert accuracy_reward("<think>a</think><answer>  </answer>", SOL) == 0.0
    # the authors compare extracted strings: two empty answers match
    assert accuracy_reward("<think>a</think><answer></answer>", "<answer></answer>") == 1.0


def test_open_ended_rouge():
    assert rouge_reward("", "x") == 0.0
    sol = "<answer>the cat sat</answer>"
    assert accuracy_reward("<answer>the cat sat</answer>", sol, "open-ended") == 1.0
    part = accuracy_reward(
        "<answer>the cat</answer>", "<answer>the cat sat down</answer>", "open-ended"
    )
    assert 0.0 < part < 1.0


def test_group_advantage_sums_to_zero_and_equal_rewards_give_zero():
    a = group_advantage(np.array([[1.0, 0.0, 0.5, 0.1], [0.3, 0.3, 0.3, 0.3]]))
    assert np.allclose(a.sum(-1), 0.0)
    assert np.all(group_advantage(np.full((3, 8), [[0.1], [0.9], [0.3]], dtype=np.float32)) == 0)
