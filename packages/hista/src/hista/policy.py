"""The causal policy of the offline testbed (a tiny ``transformers`` LM) and its SFT warm start.

The paper's policies are Qwen2.5 LMs. ``CausalLMPolicy`` wraps any ``transformers`` causal LM with
a *fast* tokenizer; offline it builds a tiny randomly initialised ``Qwen2ForCausalLM`` (the Qwen2.5
architecture, a few hundred thousand parameters) over the ArithChain character vocabulary
(``arith_chain.char_tokenizer``), and ``CausalLMPolicy.from_pretrained("Qwen/Qwen2.5-0.5B")``
runs the same code on a real model (Hub or cache). ``hidden_states[-1]`` feeds Hista and the
critic's value head, as in the paper.

1. ``CausalLMPolicy.forward``: next-token logits; ``CausalLMPolicy.hidden``: last-layer states.
2. ``CausalLMPolicy.generate``: temperature sampling of ``n`` continuations of one text, with the
   KV cache; a continuation ends at the EOS id (``;`` for ArithChain) or after ``max_new``.
   ``generate_many`` samples several texts at once (texts of equal token length share a batch,
   so no padding is needed).
3. ``sft_loss``: teacher forcing on noisy-teacher traces (the SFT warm start, so that groups
   have mixed rewards); :func:`hista.lightning.sft_warm_start` trains it through
   :class:`~hista.lightning.SFTModule` (``hista fit --config configs/sft.yaml``).

:data:`ARITH_POLICY` is the ArithChain policy of ``hista reproduce``.
"""

from __future__ import annotations

import inspect

import torch
from torch import nn

from .arith_chain import char_tokenizer

#: The ArithChain policy: a randomly initialised Qwen2 LM over the character vocabulary.
ARITH_POLICY = {"hidden": 96, "layers": 2, "heads": 4}


def tiny_qwen2(vocab_size: int, pad_id: int, eos_id: int, hidden: int, layers: int, heads: int):
    """A randomly initialised ``Qwen2ForCausalLM`` of the given width and depth."""
    from transformers import Qwen2Config, Qwen2ForCausalLM

    cfg = Qwen2Config(
        vocab_size=vocab_size,
        hidden_size=hidden,
        intermediate_size=2 * hidden,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=heads,
        max_position_embeddings=128,
        pad_token_id=pad_id,
        eos_token_id=eos_id,
        bos_token_id=eos_id,
        tie_word_embeddings=True,
    )
    return Qwen2ForCausalLM(cfg)


class CausalLMPolicy(nn.Module):
    """A ``transformers`` causal LM and its fast tokenizer as an RL policy.

    Without ``model``, a tiny Qwen2 LM over the ArithChain characters (one token per character,
    so token offsets are exact).

    Examples
    --------
    >>> _ = torch.manual_seed(0)
    >>> pol = CausalLMPolicy(hidden=16, layers=1, heads=2)
    >>> type(pol.model).__name__, pol.tokenizer.is_fast
    ('Qwen2ForCausalLM', True)
    >>> outs = pol.generate("3+4=", n=2, max_new=5, generator=torch.Generator().manual_seed(0))
    >>> len(outs), all(len(o) <= 5 for o in outs)
    (2, True)
    >>> pol.hidden(torch.zeros(1, 3, dtype=torch.long)).shape
    torch.Size([1, 3, 16])
    """

    def __init__(
        self,
        hidden: int = 96,
        layers: int = 2,
        heads: int = 4,
        model: nn.Module | None = None,
        tokenizer=None,
    ):
        super().__init__()
        if (model is None) != (tokenizer is None):
            raise ValueError("pass both model and tokenizer, or neither (the tiny ArithChain LM)")
        if tokenizer is None:
            tokenizer = char_tokenizer()
            model = tiny_qwen2(
                len(tokenizer),
                tokenizer.pad_token_id,
                tokenizer.eos_token_id,
                hidden,
                layers,
                heads,
            )
        if not getattr(tokenizer, "is_fast", False):
            raise ValueError(
                "a fast tokenizer is required (token offsets map numbers to milestones); "
                f"got {type(tokenizer).__name__}"
            )
        self.model, self.tokenizer = model, tokenizer
        self.hidden_size = int(model.config.hidden_size)
        self.eos_id = int(tokenizer.eos_token_id)
        pad = tokenizer.pad_token_id
        self.pad_id = int(self.eos_id if pad is None else pad)
        self._unk = tokenizer.unk_token_id
        params = inspect.signature(model.forward).parameters
        self._cache_kw = "cache" if "cache" in params else "past_key_values"

    @classmethod
    def from_pretrained(cls, model_id: str, dtype: torch.dtype | None = None) -> CausalLMPolicy:
        """A Hub (or cached / local) causal LM, e.g. ``Qwen/Qwen2.5-0.5B`` (offline-aware)."""
        from .qwen_math import load_policy

        model, tok = load_policy(model_id, dtype)
        return cls(model=model, tokenizer=tok)

    @property
    def n_parameters(self) -> int:
        return sum(p.numel() for p in self.model.parameters())

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text`` without special tokens (unknown characters are an error)."""
        ids = self.tokenizer(text, add_special_tokens=False)["input_ids"]
        if self._unk is not None and self._unk in ids:
            raise ValueError(f"{text!r} holds characters outside the tokenizer's vocabulary")
        return ids

    def decode(self, ids) -> str:
        """Text of ``ids`` (padding dropped; the EOS character is kept)."""
        return self.tokenizer.decode([int(i) for i in ids if int(i) != self.pad_id])

    def hidden(self, ids: torch.Tensor) -> torch.Tensor:
        """Last-layer hidden states, (B, T) -> (B, T, H) (right padding is harmless: causal)."""
        out = self.model.model(input_ids=ids.to(self.model.device))
        return out.last_hidden_state

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        """Next-token logits, (B, T) -> (B, T, V)."""
        return self.model(input_ids=ids.to(self.model.device)).logits

    @torch.no_grad()
    def generate(
        self,
        text: str,
        n: int,
        max_new: int = 24,
        temperature: float = 1.0,
        generator: torch.Generator | None = None,
    ) -> list[str]:
        """``n`` sampled continuations of ``text`` (each ends at EOS or after ``max_new``)."""
        return self.generate_many([text], n, max_new, temperature, generator)[0]

    @torch.no_grad()
    def generate_many(
        self,
        texts: list[str],
        n: int,
        max_new: int = 24,
        temperature: float = 1.0,
        generator: torch.Generator | None = None,
    ) -> list[list[str]]:
        """``n`` continuations of each text; texts of equal token length share one batch."""
        if temperature <= 0:
            raise ValueError(f"temperature must be > 0, got {temperature}")
        if n < 1:
            raise ValueError(f"n must be >= 1, got {n}")
        enc = [self.encode(t) for t in texts]
        buckets: dict[int, list[int]] = {}
        for i, e in enumerate(enc):
            buckets.setdefault(len(e), []).append(i)
        result: list[list[str]] = [[] for _ in texts]
        for members in buckets.values():
            rows = [enc[i] for i in members for _ in range(n)]
            outs = self._sample(torch.tensor(rows), max_new, temperature, generator)
            for k, i in enumerate(members):
                result[i] = outs[k * n : (k + 1) * n]
        return result

    def _sample(self, ids, max_new, temperature, generator) -> list[str]:
        dev = self.model.device
        kw = self._cache_kw
        out = self.model(input_ids=ids.to(dev), use_cache=True)
        past, logits = out[kw], out.logits[:, -1].float().cpu()
        b = ids.shape[0]
        done = torch.zeros(b, dtype=torch.bool)
        new = []
        for _ in range(max_new):
            logits[:, self.pad_id] = -torch.inf
            if self._unk is not None:
                logits[:, self._unk] = -torch.inf
            probs = torch.softmax(logits / temperature, -1)
            nxt = torch.multinomial(probs, 1, generator=generator).squeeze(1)
            nxt = torch.where(done, torch.full_like(nxt, self.pad_id), nxt)
            new.append(nxt)
            done |= nxt == self.eos_id
            if bool(done.all()):
                break
            feed = torch.where(done, torch.full_like(nxt, self.eos_id), nxt)
            out = self.model(input_ids=feed[:, None].to(dev), use_cache=True, **{kw: past})
            past, logits = out[kw], out.logits[:, -1].float().cpu()
        cols = torch.stack(new, 1).tolist()
        return [self.decode(row) for row in cols]


def batch_ids(texts: list[str], policy: CausalLMPolicy) -> tuple[torch.Tensor, torch.Tensor]:
    """Right-padded ids (B, T) and the lengths (B,)."""
    enc = [policy.encode(t) for t in texts]
    length = max(len(e) for e in enc)
    ids = torch.full((len(enc), length), policy.pad_id, dtype=torch.long)
    for i, e in enumerate(enc):
        ids[i, : len(e)] = torch.tensor(e, dtype=torch.long)
    return ids, torch.tensor([len(e) for e in enc])


def sft_loss(policy: CausalLMPolicy, prompts: list[str], responses: list[str]) -> torch.Tensor:
    """Teacher-forced cross-entropy on the response tokens of ``prompt + response``."""
    starts = [len(policy.encode(p)) for p in prompts]
    ids, lengths = batch_ids([p + r for p, r in zip(prompts, responses, strict=True)], policy)
    target = ids[:, 1:].clone()
    pos = torch.arange(target.shape[1])[None]
    keep = (pos >= torch.tensor(starts)[:, None] - 1) & (pos < lengths[:, None] - 1)
    target[~keep] = -100
    logits = policy(ids[:, :-1])
    return nn.functional.cross_entropy(
        logits.reshape(-1, logits.shape[-1]), target.reshape(-1).to(logits.device)
    )
