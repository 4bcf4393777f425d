"""ArithChain: the offline testbed (procedural addition chains with exact prefix values).

Research notes C4 of "Hista and Numca" (arXiv 2605.29782), reduced to CPU scale:

1. ``sample_problems``: prompts ``t1+t2+...+tn=`` with one-digit terms.
2. The response is the trace of running partial sums ``s2 s3 ... sn;`` (``;`` ends it);
   ``reward`` is 1 iff the last number equals the true sum.
3. ``NoisyTeacher``: writes partial sum ``i`` wrongly with probability
   ``p_i = p_base + p_carry * [step i carries]``; after a mistake it continues exactly from
   the wrong value, so the answer is wrong for sure. Hence the exact value of a prefix is
   ``exact_value``: 0 if a written partial sum is wrong, else the product of ``1 - p_i`` over
   the remaining steps.
4. ``char_tokenizer``: a fast ``transformers`` tokenizer with one token per character, so
   token offsets equal character offsets (what Numca needs from a fast tokenizer).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

VOCAB = "0123456789+= ;"
PAD = len(VOCAB)  # padding id, outside the character vocabulary
EOS = ";"


def char_tokenizer():
    """A fast ``transformers`` tokenizer with one token per ArithChain character.

    Ids follow ``VOCAB``; ``<pad>`` and ``<unk>`` come last; ``;`` is the EOS token. Offsets
    are exact (token ``i`` covers character ``i``), which Numca's milestones need.

    Examples
    --------
    >>> tok = char_tokenizer()
    >>> ids = tok("3+4=7;", add_special_tokens=False)["input_ids"]
    >>> ids, tok.decode(ids), tok.is_fast
    ([3, 10, 4, 11, 7, 13], '3+4=7;', True)
    >>> tok("12 5", return_offsets_mapping=True)["offset_mapping"]
    [(0, 1), (1, 2), (2, 3), (3, 4)]
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {c: i for i, c in enumerate(VOCAB)}
    vocab["<pad>"] = PAD
    vocab["<unk>"] = PAD + 1
    tk = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tk.pre_tokenizer = pre_tokenizers.Split("", behavior="isolated")
    tk.decoder = decoders.Fuse()
    return PreTrainedTokenizerFast(
        tokenizer_object=tk, pad_token="<pad>", unk_token="<unk>", eos_token=EOS
    )


@dataclass(frozen=True)
class Problem:
    """One addition chain ``terms[0] + ... + terms[-1]``."""

    terms: tuple[int, ...]

    @property
    def prompt(self) -> str:
        return "+".join(map(str, self.terms)) + "="

    @property
    def answer(self) -> int:
        return sum(self.terms)

    def partial_sums(self) -> list[int]:
        """Correct running sums ``s2 ... sn`` (the last is the answer)."""
        return list(np.cumsum(self.terms)[1:].astype(int))

    def carries(self) -> list[bool]:
        """Whether adding term ``i >= 1`` to the correct running sum carries a digit."""
        run = np.cumsum(self.terms)
        return [bool(run[i - 1] % 10 + self.terms[i] >= 10) for i in range(1, len(self.terms))]


def sample_problems(n: int, min_terms: int = 3, max_terms: int = 5, seed: int = 0) -> list[Problem]:
    """``n`` seeded problems with one-digit terms (1..9) and ``min_terms..max_terms`` terms."""
    if not 2 <= min_terms <= max_terms:
        raise ValueError(f"need 2 <= min_terms <= max_terms, got {min_terms}, {max_terms}")
    rng = np.random.default_rng(seed)
    lengths = rng.integers(min_terms, max_terms + 1, size=n)
    return [Problem(tuple(int(t) for t in rng.integers(1, 10, size=k))) for k in lengths]


_NUM = re.compile(r"\d+")


def reward(problem: Problem, response: str) -> float:
    """1.0 iff the response is terminated and its last number is the exact sum."""
    if not response.endswith(EOS):
        return 0.0
    nums = _NUM.findall(response)
    return float(bool(nums) and int(nums[-1]) == problem.answer)


@dataclass(frozen=True)
class NoisyTeacher:
    """Procedural teacher whose mistakes make every prefix value known exactly.

    Examples
    --------
    >>> t = NoisyTeacher(p_base=0.0, p_carry=0.0)
    >>> p = Problem((3, 4, 5))
    >>> t.sample(p, np.random.default_rng(0))
    '7 12;'
    >>> t.exact_value(p, "7 ")
    1.0
    >>> t.exact_value(p, "8 ")
    0.0
    """

    p_base: float = 0.05
    p_carry: float = 0.25

    def step_error_probs(self, problem: Problem) -> list[float]:
        return [self.p_base + self.p_carry * c for c in problem.carries()]

    def sample(self, problem: Problem, rng: np.random.Generator) -> str:
        return self.continue_from(problem, "", rng)

    def continue_from(self, problem: Problem, prefix: str, rng: np.random.Generator) -> str:
        """Rest of a response after ``prefix`` (complete numbers, cut at a space)."""
        probs = self.step_error_probs(problem)
        written = [int(x) for x in _NUM.findall(prefix)]
        truth = problem.partial_sums()
        if len(written) >= len(truth):
            return EOS
        wrong = written != truth[: len(written)]
        run = written[-1] if written else problem.terms[0]
        out = []
        for i in range(len(written), len(truth)):
            t = problem.terms[i + 1]
            run += t
            if not wrong and rng.random() < probs[i]:
                wrong = True
                run = max(0, run + int(rng.choice([-10, -1, 1, 10])))
                if run == truth[i]:  # clipping at 0 undid the error
                    run += 1
            out.append(str(run))
        return " ".join(out) + EOS

    def exact_value(self, problem: Problem, prefix: str) -> float:
        """Probability that the teacher's continuation of ``prefix`` earns reward 1."""
        written = [int(x) for x in _NUM.findall(prefix)]
        if not prefix.endswith((" ", EOS)) and written:
            raise ValueError("exact_value needs a prefix cut at a space (complete numbers)")
        truth = problem.partial_sums()
        if prefix.endswith(EOS):
            return reward(problem, prefix)
        if len(written) >= len(truth) or written != truth[: len(written)]:
            return 0.0
        probs = self.step_error_probs(problem)[len(written) :]
        return float(np.prod([1.0 - p for p in probs]))
