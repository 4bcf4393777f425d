"""The real-model path: Qwen2.5 policies on math data with verifier rewards.

Everything goes through ``icml26_shared.hub`` (offline-aware): without network and without a
local cache, loading fails within seconds with one clear line naming the model or dataset and
the offline alternative (the ArithChain testbed, ``hista reproduce``).

1. ``MATH_DATASETS``: the paper's data (MATH-lighteval, DAPO-Math-17k, MATH-500, GSM8K, AIME
   2024/2025) with their question / answer fields; ``load_math_problems`` returns
   ``{"problem_id", "prompt", "answer"}`` rows; ``final_answer`` pulls the reference answer out
   of a solution (last ``\\boxed{}``, or GSM8K's ``#### x``).
2. ``load_policy``: ``AutoModelForCausalLM`` + a *fast* ``AutoTokenizer`` (Qwen/Qwen2.5-1.5B by
   default).
3. ``math_verify_reward``: 1.0 iff ``math-verify`` judges the completion's answer equal to the
   reference (the ``bench`` extra); ``trl_reward`` is the same in TRL's reward-function form.
4. ``sample_group``: G sampled completions of one prompt from a ``transformers`` causal LM, with
   rewards, token offsets and last-layer hidden states: a ``RolloutGroup`` ready for any
   ``advantage_provider``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import torch

from .advantage_provider import RolloutGroup, token_offsets

OFFLINE_HINT = "the offline ArithChain testbed (`hista reproduce --quick`)"
DEFAULT_MODEL = "Qwen/Qwen2.5-1.5B-Instruct"


@dataclass(frozen=True)
class MathDataset:
    """Where a math benchmark lives on the Hub and which fields hold question and answer."""

    hub_id: str
    config: str | None
    split: str
    question: str
    answer: str
    answer_is_solution: bool = False  # the answer must be extracted from a worked solution


MATH_DATASETS = {
    "math": MathDataset(
        "DigitalLearningGmbH/MATH-lighteval", "default", "train", "problem", "solution", True
    ),
    "dapo-math": MathDataset(
        "open-r1/DAPO-Math-17k-Processed", "en", "train", "prompt", "solution"
    ),
    "math-500": MathDataset("HuggingFaceH4/MATH-500", None, "test", "problem", "answer"),
    "gsm8k": MathDataset("openai/gsm8k", "main", "test", "question", "answer", True),
    "aime24": MathDataset("math-ai/aime24", None, "test", "problem", "solution", True),
    "aime25": MathDataset("math-ai/aime25", None, "test", "problem", "answer"),
}

PROMPT = "{question}\nPlease reason step by step, and put your final answer within \\boxed{{}}."


def final_answer(solution: str) -> str:
    """The reference answer inside a worked solution.

    Examples
    --------
    >>> final_answer("so $x = \\\\boxed{\\\\frac{1}{2}}$.")
    '\\\\frac{1}{2}'
    >>> final_answer("... 3 + 4 = 7\\n#### 7")
    '7'
    """
    m = re.search(r"####\s*(.+?)\s*$", solution)
    if m:
        return m.group(1).replace(",", "")
    start = solution.rfind("\\boxed{")
    if start < 0:
        return solution.strip()
    i, depth = start + len("\\boxed{"), 1
    for j in range(i, len(solution)):
        depth += {"{": 1, "}": -1}.get(solution[j], 0)
        if depth == 0:
            return solution[i:j]
    raise ValueError(f"unbalanced \\boxed{{}} in solution: {solution[start : start + 60]!r}")


def load_math_problems(name: str, split: str | None = None, limit: int | None = None) -> list[dict]:
    """Rows ``{"problem_id", "prompt", "answer"}`` of one of ``MATH_DATASETS``."""
    if name not in MATH_DATASETS:
        raise ValueError(f"unknown dataset {name!r}; use one of {sorted(MATH_DATASETS)}")
    from icml26_shared.hub import load_dataset

    spec = MATH_DATASETS[name]
    args = (spec.config,) if spec.config else ()
    ds = load_dataset(spec.hub_id, *args, split=split or spec.split, offline_hint=OFFLINE_HINT)
    rows = []
    for i, ex in enumerate(ds):
        if limit is not None and i >= limit:
            break
        ans = str(ex[spec.answer])
        rows.append(
            {
                "problem_id": f"{name}-{i}",
                "prompt": PROMPT.format(question=ex[spec.question]),
                "answer": final_answer(ans) if spec.answer_is_solution else ans,
            }
        )
    return rows


def load_policy(model_id: str = DEFAULT_MODEL, dtype: torch.dtype | None = None):
    """``(model, tokenizer)`` of a causal LM; the tokenizer must be fast (token offsets)."""
    from icml26_shared.hub import from_pretrained
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = from_pretrained(AutoTokenizer, model_id, offline_hint=OFFLINE_HINT)
    if not tok.is_fast:
        raise ValueError(f"a fast tokenizer is required for {model_id!r} (token offsets)")
    kwargs = {"dtype": dtype} if dtype is not None else {}
    model = from_pretrained(AutoModelForCausalLM, model_id, offline_hint=OFFLINE_HINT, **kwargs)
    return model, tok


def math_verify_reward(completion: str, answer: str) -> float:
    """1.0 iff ``math-verify`` finds the completion's final answer equal to ``answer``."""
    try:
        from math_verify import parse, verify
    except ImportError as exc:
        raise ImportError(
            "rewards on real math data need math-verify: pip install 'hista[bench]'"
        ) from exc
    gold = parse(answer if "$" in answer or "\\boxed" in answer else f"${answer}$")
    pred = parse(completion)
    return 1.0 if gold and pred and verify(gold, pred) else 0.0


def trl_reward(completions, answer, **kwargs) -> list[float]:
    """TRL reward-function form of ``math_verify_reward`` (``answer`` is a dataset column)."""
    texts = [c if isinstance(c, str) else c[-1]["content"] for c in completions]
    return [math_verify_reward(t, a) for t, a in zip(texts, answer, strict=True)]


@torch.no_grad()
def sample_group(
    model,
    tokenizer,
    problem: dict,
    group_size: int,
    max_new_tokens: int = 256,
    temperature: float = 0.7,
    reward_fn=math_verify_reward,
) -> RolloutGroup:
    """Sample ``group_size`` completions of ``problem["prompt"]`` and score them."""
    offsets_check = token_offsets(tokenizer, problem["prompt"])  # fails early on slow tokenizers
    del offsets_check
    enc = tokenizer(problem["prompt"], return_tensors="pt").to(model.device)
    start = enc["input_ids"].shape[1]
    out = model.generate(
        **enc,
        do_sample=True,
        temperature=temperature,
        max_new_tokens=max_new_tokens,
        num_return_sequences=group_size,
        pad_token_id=tokenizer.pad_token_id or tokenizer.eos_token_id,
    )
    responses, offsets, hidden, starts, rewards = [], [], [], [], []
    stop = {tokenizer.eos_token_id, tokenizer.pad_token_id} - {None}
    for seq in out:
        ids = seq[start:].tolist()
        n = next((i for i, t in enumerate(ids) if t in stop), len(ids))
        ids = ids[: max(n, 1)]
        text = tokenizer.decode(ids, skip_special_tokens=True)
        spans, prev = [], 0
        for k in range(1, len(ids) + 1):  # spans of the *generated* ids, by prefix decoding
            cur = len(tokenizer.decode(ids[:k], skip_special_tokens=True))
            spans.append((prev, cur))
            prev = cur
        full = torch.tensor([seq[:start].tolist() + ids], device=model.device)
        h = model(full, output_hidden_states=True).hidden_states[-1][0]
        responses.append(text)
        offsets.append(spans)
        hidden.append(h.float().cpu())
        starts.append(start)
        rewards.append(float(reward_fn(text, problem["answer"])))
    return RolloutGroup(problem["problem_id"], responses, rewards, offsets, hidden, starts)
