"""Autoregressive prior over the 1D tokens with a class prefix; guidance-free sampling.

Map to the method (EOSTok, arXiv 2605.00503, "AR model"):

1. ``p(q | y) = prod_i p(q_i | y, q_<i)`` with a causal transformer whose input at position
   ``i`` is ``[class(y), e_{q_1}, ..., e_{q_{i-1}}]``: :meth:`ARPrior.forward`. The inputs are
   *code embeddings* (``(B, K, d)``), so in end-to-end training the CE gradient can reach the
   tokenizer through the straight-through tokens;
2. next-token CE ``L_AR``: :meth:`ARPrior.nll`;
3. sampling with temperature and top-k, no classifier-free guidance: :func:`sample`.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from .tokenizer import vit_blocks


class ARPrior(nn.Module):
    """Causal transformer over K code embeddings, conditioned on a class prefix token.

    Parameters
    ----------
    num_tokens:
        Sequence length K.
    codebook_size:
        Number of codes C (output classes).
    token_dim:
        Dimension of the code embeddings it reads.
    num_classes:
        Number of image classes (prefix tokens).
    width, depth, heads:
        Transformer size.

    Examples
    --------
    >>> _ = torch.manual_seed(0)
    >>> prior = ARPrior(num_tokens=8, codebook_size=32, token_dim=8, num_classes=10, width=32)
    >>> prior(torch.randn(2, 8, 8), torch.tensor([1, 3])).shape
    torch.Size([2, 8, 32])
    """

    def __init__(
        self,
        num_tokens: int = 8,
        codebook_size: int = 64,
        token_dim: int = 8,
        num_classes: int = 10,
        width: int = 64,
        depth: int = 2,
        heads: int = 4,
    ) -> None:
        super().__init__()
        if num_tokens < 1:
            raise ValueError(f"number of tokens must be at least 1, got {num_tokens}")
        self.num_tokens, self.codebook_size, self.num_classes = (
            num_tokens,
            codebook_size,
            num_classes,
        )
        self.class_emb = nn.Embedding(num_classes, width)
        self.token_in = nn.Linear(token_dim, width)
        self.pos = nn.Parameter(0.02 * torch.randn(1, num_tokens, width))
        self.blocks = vit_blocks(width, depth, heads)
        self.norm = nn.LayerNorm(width)
        self.head = nn.Linear(width, codebook_size)
        mask = torch.triu(torch.full((num_tokens, num_tokens), float("-inf")), diagonal=1)
        self.register_buffer("causal_mask", mask, persistent=False)

    def check_labels(self, labels: torch.Tensor) -> None:
        """Raise ``ValueError`` for labels outside ``[0, num_classes)``."""
        if labels.numel() and (int(labels.min()) < 0 or int(labels.max()) >= self.num_classes):
            raise ValueError(
                f"class labels must lie in [0, {self.num_classes}), got {labels.min()}..{labels.max()}"
            )

    def forward(self, emb: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        """Logits ``(B, K, C)``; position i sees the class and embeddings ``emb[:, :i]``."""
        self.check_labels(labels)
        b, k, _ = emb.shape
        h = torch.cat([self.class_emb(labels)[:, None], self.token_in(emb[:, : k - 1])], 1)
        h = h + self.pos[:, :k]
        mask = self.causal_mask[:k, :k]
        for blk in self.blocks:
            h = blk(h, src_mask=mask)
        return self.head(self.norm(h))

    def nll(self, emb: torch.Tensor, codes: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        """Mean next-token cross entropy (nats per token) and the logits."""
        logits = self(emb, labels)
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), codes.reshape(-1)), logits


@torch.no_grad()
def sample(
    prior: ARPrior,
    codebook: torch.Tensor,
    labels: torch.Tensor,
    temperature: float = 1.0,
    top_k: int | None = None,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """Sample codes ``(B, K)`` for ``labels`` token by token (no classifier-free guidance).

    >>> _ = torch.manual_seed(0)
    >>> prior = ARPrior(num_tokens=4, codebook_size=8, token_dim=3, num_classes=2, width=16)
    >>> sample(prior, torch.randn(8, 3), torch.tensor([0, 1]), top_k=3).shape
    torch.Size([2, 4])
    """
    if not temperature > 0:
        raise ValueError(f"temperature must be positive, got {temperature}")
    c = codebook.shape[0]
    if top_k is not None and not 1 <= top_k <= c:
        raise ValueError(f"top_k must lie in [1, codebook size {c}], got {top_k}")
    prior.check_labels(labels)
    b, k = labels.shape[0], prior.num_tokens
    codes = torch.zeros(b, k, dtype=torch.long, device=labels.device)
    for i in range(k):
        emb = codebook[codes]
        logits = prior(emb, labels)[:, i] / temperature
        if top_k is not None:
            kth = logits.topk(top_k, -1).values[:, -1:]
            logits = logits.masked_fill(logits < kth, float("-inf"))
        probs = logits.softmax(-1)
        codes[:, i] = torch.multinomial(probs, 1, generator=generator)[:, 0]
    return codes
