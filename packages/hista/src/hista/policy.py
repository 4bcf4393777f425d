"""The tiny causal policy of the offline testbed, and its SFT warm start.

The paper's policies are Qwen2.5 LMs; at CPU scale the policy is a character-level GRU
language model (``CharPolicy``). Its last-layer hidden states play the role of
``hidden_states[-1]`` for Hista and the critic's value head.

1. ``CharPolicy.forward``: next-token logits; ``CharPolicy.hidden``: last-layer states.
2. ``CharPolicy.generate``: temperature sampling of ``n`` continuations of one text.
3. ``sft_warm_start``: teacher forcing on noisy-teacher traces (the SFT warm start, so that
   groups have mixed rewards).
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from .arith_chain import CharTokenizer, NoisyTeacher, Problem


class CharPolicy(nn.Module):
    """Character GRU language model.

    Examples
    --------
    >>> _ = torch.manual_seed(0)
    >>> pol = CharPolicy(hidden=16, layers=1)
    >>> outs = pol.generate("3+4=", n=2, max_new=5, generator=torch.Generator().manual_seed(0))
    >>> len(outs), all(len(o) <= 5 for o in outs)
    (2, True)
    >>> pol.hidden(torch.zeros(1, 3, dtype=torch.long)).shape
    torch.Size([1, 3, 16])
    """

    def __init__(self, hidden: int = 96, layers: int = 2, embed: int = 32):
        super().__init__()
        self.tokenizer = CharTokenizer()
        self.embed = nn.Embedding(self.tokenizer.vocab_size, embed)
        self.rnn = nn.GRU(embed, hidden, num_layers=layers, batch_first=True)
        self.head = nn.Linear(hidden, self.tokenizer.vocab_size)
        self.hidden_size = hidden

    def hidden(self, ids: torch.Tensor) -> torch.Tensor:
        """Last-layer hidden states, (B, T) -> (B, T, H)."""
        out, _ = self.rnn(self.embed(ids))
        return out

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        """Next-token logits, (B, T) -> (B, T, V)."""
        return self.head(self.hidden(ids))

    @torch.no_grad()
    def generate(
        self,
        text: str,
        n: int,
        max_new: int = 24,
        temperature: float = 1.0,
        generator: torch.Generator | None = None,
    ) -> list[str]:
        """``n`` sampled continuations of ``text`` (each ends at ``;`` or after ``max_new``)."""
        if temperature <= 0:
            raise ValueError(f"temperature must be > 0, got {temperature}")
        tok = self.tokenizer
        ids = torch.tensor([tok.encode(text)] * n)
        out, state = self.rnn(self.embed(ids))
        logits = self.head(out[:, -1])
        done = torch.zeros(n, dtype=torch.bool)
        new = []
        for _ in range(max_new):
            logits[:, tok.pad_id] = -torch.inf
            probs = torch.softmax(logits / temperature, -1)
            nxt = torch.multinomial(probs, 1, generator=generator).squeeze(1)
            nxt = torch.where(done, torch.full_like(nxt, tok.pad_id), nxt)
            new.append(nxt)
            done |= nxt == tok.eos_id
            if bool(done.all()):
                break
            out, state = self.rnn(self.embed(nxt.clamp(max=tok.pad_id - 1)[:, None]), state)
            logits = self.head(out[:, -1])
        cols = torch.stack(new, 1).tolist()
        return [tok.decode(row) for row in cols]


def batch_ids(texts: list[str], tokenizer: CharTokenizer) -> tuple[torch.Tensor, torch.Tensor]:
    """Right-padded ids (B, T) and the lengths (B,)."""
    enc = [tokenizer.encode(t) for t in texts]
    length = max(len(e) for e in enc)
    ids = torch.full((len(enc), length), tokenizer.pad_id, dtype=torch.long)
    for i, e in enumerate(enc):
        ids[i, : len(e)] = torch.tensor(e)
    return ids, torch.tensor([len(e) for e in enc])


def sft_warm_start(
    policy: CharPolicy,
    problems: list[Problem],
    teacher: NoisyTeacher,
    steps: int = 400,
    batch_size: int = 64,
    lr: float = 3e-3,
    seed: int = 0,
) -> list[float]:
    """Teacher-forced cross-entropy on teacher traces (response tokens only); returns losses."""
    rng = np.random.default_rng(seed)
    opt = torch.optim.Adam(policy.parameters(), lr=lr)
    tok = policy.tokenizer
    losses = []
    policy.train()
    for _ in range(steps):
        idx = rng.integers(0, len(problems), size=batch_size)
        texts, starts = [], []
        for i in idx:
            p = problems[int(i)]
            texts.append(p.prompt + teacher.sample(p, rng))
            starts.append(len(p.prompt))
        ids, lengths = batch_ids(texts, tok)
        target = ids[:, 1:].clone()
        pos = torch.arange(target.shape[1])[None]
        keep = (pos >= torch.tensor(starts)[:, None] - 1) & (pos < lengths[:, None] - 1)
        target[~keep] = -100
        logits = policy(ids[:, :-1])
        loss = nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), target.reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    policy.eval()
    return losses
