"""Tiny video-LM: a 3D-conv frame encoder projected as soft tokens into a small ``transformers`` decoder.

The stand-in for Qwen2.5-VL / Qwen3-VL at CPU scale (paper Sec. 4 trains those with SFT then GRPO):

* :func:`build_tokenizer` -- a word-level ``tokenizers`` vocabulary of the micro-world (no download).
* :class:`FrameEncoder` -- ``(B, 1, T, H, W)`` frames -> ``(B, K, d)`` soft tokens (K = 8).
* :class:`TinyVideoLM` -- ``[soft tokens ; text]`` into a randomly initialised ``LlamaForCausalLM``;
  :meth:`TinyVideoLM.token_logprobs` (the per-token log-probabilities GRPO needs) and
  :meth:`TinyVideoLM.generate` (greedy or sampled decoding with left-padded prompts).

>>> tok = build_tokenizer()
>>> lm = TinyVideoLM(tok.get_vocab_size(), d_model=32, layers=1, heads=2)
>>> ids = torch.tensor([tok.encode("question : which way does the object move ?").ids])
>>> lm(torch.zeros(1, 1, 7, 16, 16), ids, torch.ones_like(ids)).shape[:2]
torch.Size([1, 9])
"""

from __future__ import annotations

import functools

import torch
from torch import nn

from .generation import OPTIONS, QUESTIONS, rationale
from .knowledge import DIRECTIONS, MATERIALS, microworld_bank

PAD, UNK, BOS, EOS = "[PAD]", "[UNK]", "[BOS]", "[EOS]"
TAGS = ("<think>", "</think>", "<answer>", "</answer>")


def _corpus_words() -> list[str]:
    words: set[str] = set(
        [
            "question",
            ":",
            "options",
            "answer",
            ",",
            "as",
            "the",
            "narrator",
            "says",
            "at",
            "the",
            "very",
            "end",
            "here",
        ]
    )
    words |= {f"{c}." for c in "ABCDEFGHIJ"} | set("ABCDEFGHIJ")
    for qs in QUESTIONS.values():
        for q in qs:
            words |= set(q.split())
    for opts in OPTIONS.values():
        words |= set(opts)
    for skill in QUESTIONS:
        for d in DIRECTIONS:
            for m in MATERIALS:
                words |= set(rationale(skill, d, m)[0].split())
    for kp in microworld_bank():
        words |= set(kp.text.split())
    return sorted(words)


@functools.cache
def build_tokenizer():
    """Word-level tokenizer over the micro-world vocabulary (whitespace split, ``[UNK]`` else)."""
    from tokenizers import Tokenizer
    from tokenizers.models import WordLevel
    from tokenizers.pre_tokenizers import WhitespaceSplit

    vocab = {t: i for i, t in enumerate([PAD, UNK, BOS, EOS, *TAGS, *_corpus_words()])}
    tok = Tokenizer(WordLevel(vocab, unk_token=UNK))
    tok.pre_tokenizer = WhitespaceSplit()
    return tok


def prompt_text(record: dict) -> str:
    """The model's prompt: question and lettered options (the video goes in as soft tokens)."""
    return f"question : {record['question']} options : {' '.join(record['options'])} answer :"


def response_text(record: dict) -> str:
    """SFT target: ``<think> rationale </think> <answer> letter </answer>``."""
    from .schema import answer_of

    return f"<think> {record['think']} </think> <answer> {answer_of(record['solution'])} </answer>"


class FrameEncoder(nn.Module):
    """Two 3D convolutions (the first strided in space) then max-pooling to a ``2x2x2`` grid: ``(B,1,T,H,W) -> (B, 8, d)``."""

    def __init__(self, d_model: int, channels: int = 32) -> None:
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv3d(1, channels // 2, 3, padding=1, stride=(1, 2, 2)),
            nn.GELU(),
            nn.Conv3d(channels // 2, channels, 3, padding=1),
            nn.GELU(),
            nn.AdaptiveMaxPool3d((2, 2, 2)),  # the object is small: keep its peak response
        )
        self.proj = nn.Sequential(nn.Linear(channels, d_model), nn.LayerNorm(d_model))

    def forward(self, video: torch.Tensor) -> torch.Tensor:
        h = self.net(video)  # (B, C, 2, 2, 2)
        return self.proj(h.flatten(2).transpose(1, 2))  # (B, 8, d)


class TinyVideoLM(nn.Module):
    """Soft video tokens followed by text into a small, randomly initialised Llama decoder."""

    def __init__(
        self,
        vocab_size: int,
        d_model: int = 64,
        layers: int = 2,
        heads: int = 4,
        max_len: int = 160,
    ) -> None:
        super().__init__()
        from transformers import LlamaConfig, LlamaForCausalLM

        cfg = LlamaConfig(
            vocab_size=vocab_size,
            hidden_size=d_model,
            intermediate_size=2 * d_model,
            num_hidden_layers=layers,
            num_attention_heads=heads,
            num_key_value_heads=heads,
            max_position_embeddings=max_len,
            tie_word_embeddings=True,
            pad_token_id=0,
            bos_token_id=2,
            eos_token_id=3,
        )
        self.encoder = FrameEncoder(d_model)
        self.decoder = LlamaForCausalLM(cfg)
        self.n_soft = 8

    def forward(
        self, video: torch.Tensor, input_ids: torch.Tensor, attention_mask: torch.Tensor
    ) -> torch.Tensor:
        """Logits ``(B, L, V)`` at the text positions (position i predicts token i+1)."""
        soft = self.encoder(video)
        text = self.decoder.get_input_embeddings()(input_ids)
        embeds = torch.cat([soft, text], 1)
        mask = torch.cat([attention_mask.new_ones(soft.shape[:2]), attention_mask], 1)
        pos = (mask.cumsum(1) - 1).clamp(min=0)
        out = self.decoder(inputs_embeds=embeds, attention_mask=mask, position_ids=pos)
        return out.logits[:, self.n_soft :]

    def token_logprobs(
        self,
        video: torch.Tensor,
        prompt_ids: torch.Tensor,
        prompt_mask: torch.Tensor,
        completion: torch.Tensor,
        completion_mask: torch.Tensor,
    ) -> torch.Tensor:
        """``log pi(o_t | q, o_<t)`` for each completion token, ``(B, Lc)``."""
        ids = torch.cat([prompt_ids, completion], 1)
        mask = torch.cat([prompt_mask, completion_mask], 1)
        logits = self(video, ids, mask)[:, prompt_ids.shape[1] - 1 : -1]
        return torch.log_softmax(logits.float(), -1).gather(-1, completion[..., None])[..., 0]

    @torch.no_grad()
    def generate(
        self,
        video: torch.Tensor,
        prompt_ids: torch.Tensor,
        prompt_mask: torch.Tensor,
        max_new_tokens: int = 48,
        temperature: float = 0.0,
        eos_id: int = 3,
        pad_id: int = 0,
        generator: torch.Generator | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Decode after left-padded prompts; returns ``(tokens, mask)`` (mask covers up to EOS)."""
        b = prompt_ids.shape[0]
        out = prompt_ids.new_full((b, 0), pad_id)
        mask = prompt_mask.new_zeros((b, 0))
        done = torch.zeros(b, dtype=torch.bool, device=prompt_ids.device)
        for _ in range(max_new_tokens):
            ids = torch.cat([prompt_ids, out], 1)
            am = torch.cat([prompt_mask, mask], 1)
            logits = self(video, ids, am)[:, -1].float()
            if temperature > 0:
                probs = torch.softmax(logits / temperature, -1)
                nxt = torch.multinomial(probs, 1, generator=generator)[:, 0]
            else:
                nxt = logits.argmax(-1)
            nxt = torch.where(done, torch.full_like(nxt, pad_id), nxt)
            out = torch.cat([out, nxt[:, None]], 1)
            mask = torch.cat([mask, (~done).long()[:, None]], 1)
            done = done | (nxt == eos_id)
            if bool(done.all()):
                break
        return out, mask


def decode(tokens: torch.Tensor, mask: torch.Tensor) -> list[str]:
    """Completion tokens -> text (special tokens dropped)."""
    tok = build_tokenizer()
    inv = {i: t for t, i in tok.get_vocab().items()}
    texts = []
    for row, m in zip(tokens.tolist(), mask.tolist(), strict=True):
        words = [inv[t] for t, k in zip(row, m, strict=True) if k and inv[t] not in (PAD, EOS, BOS)]
        texts.append(" ".join(words))
    return texts
