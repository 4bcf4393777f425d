"""VideoKR-Eval harness: accuracy per skill / subject / question type, baselines, judges, lmms-eval export.

Protocol of the authors' ``videokr_eval`` lmms-eval task: the model answers with ``<think>`` then
``<answer>``; multiple choice is scored by rule (exact letter) or by a judge; open-ended answers
need a judge and are *skipped and counted* without one; accuracy is aggregated by question type,
subject and dataset (here also by skill).

* :class:`Judge` -- protocol ``judge(record, output) -> float | None`` (``None``: cannot score).
* :class:`RuleJudge` -- multiple choice / numerical by rule, open-ended skipped (``None``).
* :class:`RougeJudge` -- the rule judge plus ROUGE for open-ended answers (the training reward).
* :class:`ChatJudge` -- a model judge behind an OpenAI-compatible endpoint (the authors: GPT-4o).
* :class:`EvalHarness` -- scores outputs into torchmetrics ``MeanMetric`` per group.
* :class:`RandomPredictor` -- uniform random letter (chance baseline, deterministic under a seed).
* :func:`chance_accuracy` -- the expected accuracy of a uniform guess, ``mean(1 / |options|)``.
* :func:`export_lmms_eval_task` -- the benchmark as an lmms-eval task folder (YAML + utils.py).

>>> recs = [{"id": "a", "options": ["A. x", "B. y"], "problem_type": "multiple choice",
...          "solution": "<answer>B</answer>", "skill": "VidR", "subject": "S", "dataset": "d"}]
>>> res = EvalHarness(recs).evaluate({"a": "<think>t</think><answer>B</answer>"})
>>> res.overall, res.by["skill"]["VidR"], res.format_rate
(1.0, 1.0, 1.0)
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from .rewards import accuracy_reward, format_reward, numerical_match
from .schema import OPTION_LETTERS

GROUPS = ("skill", "subject", "problem_type", "dataset")


@runtime_checkable
class Judge(Protocol):
    """Scores one output against its record in [0, 1]; ``None`` when it cannot."""

    def __call__(self, record: Mapping[str, Any], output: str) -> float | None: ...


class RuleJudge:
    """Rule-based scoring; open-ended answers need a model judge, so they are skipped.

    >>> RuleJudge()({"problem_type": "open-ended", "solution": "<answer>x</answer>"}, "x") is None
    True
    """

    def __call__(self, record: Mapping[str, Any], output: str) -> float | None:
        if record["problem_type"] == "open-ended":
            return None
        if record["problem_type"] == "numerical":  # the authors' eval judge accepts equal numbers
            return numerical_match(output, record["solution"])
        return accuracy_reward(output, record["solution"], record["problem_type"])


class RougeJudge(RuleJudge):
    """As :class:`RuleJudge`, with open-ended answers scored by mean ROUGE-1/2/L F1."""

    def __call__(self, record: Mapping[str, Any], output: str) -> float | None:
        if record["problem_type"] == "numerical":
            return numerical_match(output, record["solution"])
        return accuracy_reward(output, record["solution"], record["problem_type"])


JUDGE_PROMPT = (
    "You grade answers to a question about a video.\nQuestion: {question}\n"
    "Reference answer: {reference}\nModel answer: {prediction}\n"
    "Reply with one number between 0 and 1: 1 if the model answer means the same as the "
    "reference, 0 if not, a fraction for a partly right answer."
)
_SCORE = re.compile(r"(?<![\d.])(0(?:\.\d+)?|1(?:\.0+)?)(?![\d.])")


class ChatJudge(RuleJudge):
    """A model judge behind an OpenAI-compatible endpoint (the authors use GPT-4o).

    Multiple-choice and numerical items are scored by rule unless ``rule_first=False``;
    open-ended items (and the rest with ``rule_first=False``) go to the judge model, whose
    reply must contain a score in [0, 1]. An output without an answer scores 0 without a call;
    an unparsable reply gives ``None`` (the item is skipped and counted).

    >>> ChatJudge("http://localhost:1", "gpt-4o")(
    ...     {"problem_type": "open-ended", "question": "q", "solution": "<answer>x</answer>"}, "none")
    0.0
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str = "",
        rule_first: bool = True,
        timeout: float = 60.0,
    ) -> None:
        self.base_url, self.model, self.api_key = base_url, model, api_key
        self.rule_first, self.timeout = rule_first, timeout

    def __call__(self, record: Mapping[str, Any], output: str) -> float | None:
        from .generation import chat_completion
        from .rewards import extract_answer

        if self.rule_first and record["problem_type"] != "open-ended":
            return super().__call__(record, output)
        if "<answer>" not in output or not extract_answer(output):
            return 0.0
        prompt = JUDGE_PROMPT.format(
            question=record.get("question", ""),
            reference=extract_answer(record["solution"]),
            prediction=extract_answer(output),
        )
        reply = chat_completion(
            self.base_url,
            self.model,
            [{"role": "user", "content": prompt}],
            self.api_key,
            self.timeout,
            temperature=0.0,
        )
        m = _SCORE.search(reply)
        return float(m.group(1)) if m else None


@dataclass
class EvalResult:
    """Accuracies: ``overall``, ``by[group][value]``, format compliance, skipped count."""

    overall: float
    by: dict[str, dict[str, float]]
    format_rate: float
    n_scored: int
    n_skipped: int
    per_item: dict[str, float] = field(default_factory=dict)


class EvalHarness:
    """Scores model outputs on a benchmark with a pluggable judge (default :class:`RuleJudge`)."""

    def __init__(self, records: Sequence[Mapping[str, Any]], judge: Judge | None = None) -> None:
        self.records = list(records)
        self.judge = judge or RuleJudge()

    def evaluate(self, outputs: Mapping[str, str]) -> EvalResult:
        """``outputs``: record id -> model output; a missing output scores 0 (never skipped)."""
        import torch
        from torchmetrics.aggregation import MeanMetric

        per_item, fmt, skipped = {}, [], 0
        groups: dict[str, dict[str, list[float]]] = {g: {} for g in GROUPS}
        for r in self.records:
            out = outputs.get(r["id"], "")
            score = self.judge(r, out)
            if score is None:
                skipped += 1
                continue
            per_item[r["id"]] = float(score)
            fmt.append(format_reward(out))
            for g in GROUPS:
                key = str(r.get(g) or "")
                if key:
                    groups[g].setdefault(key, []).append(float(score))

        def mean(values: list[float]) -> float:
            if not values:
                return float("nan")
            metric = MeanMetric()
            metric.update(torch.tensor(values, dtype=torch.float64))
            return float(metric.compute())

        return EvalResult(
            overall=mean(list(per_item.values())),
            by={g: {k: mean(v) for k, v in sorted(d.items())} for g, d in groups.items()},
            format_rate=mean(fmt),
            n_scored=len(per_item),
            n_skipped=skipped,
            per_item=per_item,
        )


def chance_accuracy(records: Sequence[Mapping[str, Any]]) -> float:
    """Expected accuracy of a uniform guess over the options (multiple choice only).

    >>> chance_accuracy([{"options": ["A. x", "B. y"], "problem_type": "multiple choice"}])
    0.5
    """
    mc = [r for r in records if r["problem_type"] == "multiple choice"]
    return float(np.mean([1.0 / len(r["options"]) for r in mc])) if mc else float("nan")


class RandomPredictor:
    """Answers a uniformly random option letter in the expected format.

    >>> recs = [{"id": str(i), "options": ["A. x", "B. y"]} for i in range(3)]
    >>> RandomPredictor(0)(recs) == RandomPredictor(0)(recs)
    True
    """

    def __init__(self, seed: int = 0) -> None:
        self.seed = seed

    def __call__(self, records: Sequence[Mapping[str, Any]]) -> dict[str, str]:
        rng = np.random.default_rng(self.seed)
        return {
            r[
                "id"
            ]: f"<think>guess</think><answer>{OPTION_LETTERS[int(rng.integers(len(r['options'])))]}</answer>"
            for r in records
        }


def letters_to_outputs(
    records: Sequence[Mapping[str, Any]], letters: Sequence[str]
) -> dict[str, str]:
    """Wrap predicted letters (a probe's) as well-formed outputs for the harness."""
    return {
        r["id"]: f"<think>probe</think><answer>{c}</answer>"
        for r, c in zip(records, letters, strict=True)
    }


_TASK_YAML = """\
# lmms-eval task exported by videokr {version} (schema {schema}); data: {data_files}
task: videokr_eval
dataset_path: json
dataset_kwargs:
  data_files: {data_files}
test_split: train
output_type: generate_until
doc_to_visual: !function utils.doc_to_visual
doc_to_text: !function utils.doc_to_text
doc_to_target: !function utils.doc_to_target
process_results: !function utils.process_results
generation_kwargs:
  max_new_tokens: 8192
  temperature: 0.1
  top_p: 0.001
  do_sample: false
metric_list:
  - metric: accuracy
    aggregation: mean
    higher_is_better: true
metadata:
  version: {schema}
"""

_TASK_UTILS = '''\
"""videokr_eval helpers for lmms-eval (exported by videokr; the scoring mirrors videokr.rewards)."""
import os
import re

VIDEO_ROOT = os.environ.get("VIDEOKR_VIDEO_ROOT", "")
PROMPT = ("{question}\\n{options}\\nThink step by step inside <think></think> tags, then give "
          "{what} inside <answer></answer> tags.")
_ANSWER = re.compile(r"<answer>(.*?)</answer>", re.DOTALL)


def doc_to_visual(doc):
    return [os.path.join(VIDEO_ROOT, doc["video_path"])]


def doc_to_text(doc, lmms_eval_specific_kwargs=None):
    mc = doc["problem_type"] == "multiple choice"
    return PROMPT.format(question=doc["question"], options="\\n".join(doc.get("options") or []),
                         what="only the option letter" if mc else "the final answer")


def doc_to_target(doc):
    m = _ANSWER.search(doc["solution"])
    return (m.group(1) if m else doc["solution"]).strip()


def process_results(doc, results):
    m = _ANSWER.search(results[0])
    pred = (m.group(1) if m else "").strip()
    return {"accuracy": float(doc["problem_type"] != "open-ended" and pred == doc_to_target(doc))}
'''


def export_lmms_eval_task(
    out: str | os.PathLike, data_files: str = "VideoKR_eval.jsonl"
) -> list[Path]:
    """Write ``videokr_eval.yaml`` and ``utils.py`` into ``out`` (an lmms-eval ``tasks/`` folder)."""
    from icml26_shared.results import atomic_write_text

    from . import __version__
    from .schema import SCHEMA_VERSION

    out = Path(out)
    yaml = _TASK_YAML.format(version=__version__, schema=SCHEMA_VERSION, data_files=data_files)
    return [
        atomic_write_text(out / "videokr_eval.yaml", yaml),
        atomic_write_text(out / "utils.py", _TASK_UTILS),
    ]
