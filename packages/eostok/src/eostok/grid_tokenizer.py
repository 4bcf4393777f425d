"""2D-grid tokenizer (VQGAN / LlamaGen-style patch tokens) for the raster-AR comparison row.

EOSTok (arXiv 2605.00503) argues that 2D grid tokens carry bidirectional spatial
dependencies that mismatch a raster-order AR model, unlike 1D latent tokens. The comparison
needs a 2D tokenizer of equal size: :class:`GridTokenizer` has the same ViT encoder/decoder
(width, depth, heads, patch size) and the same cosine quantizer as
:class:`~eostok.tokenizer.OneDTokenizer`, but quantises every *patch* output (P = (S/p)^2
tokens in raster order) instead of K learned latent queries:

1. encoder ``patches(x) -> ViT -> P vectors -> linear -> z`` (no latent queries):
   :meth:`GridTokenizer.encode_continuous`;
2. decoder ``[P tokens] -> ViT -> pixels`` from codes, embeddings or probabilities:
   :meth:`GridTokenizer.decode` (same signature and returns as the 1D tokenizer; no nested
   dropout, which has no meaning for a raster grid).
"""

from __future__ import annotations

import torch
from torch import nn

from .quantizer import CosineVectorQuantizer
from .tokenizer import OneDTokenizer, vit_blocks


class GridTokenizer(OneDTokenizer):
    """Patch-grid tokenizer: an image becomes ``(S/p)^2`` discrete tokens in raster order.

    Parameters are those of :class:`~eostok.tokenizer.OneDTokenizer` without
    ``num_latent_tokens`` (the token count is the number of patches) and ``nested_dropout``.

    Examples
    --------
    >>> _ = torch.manual_seed(0)
    >>> tok = GridTokenizer(16, 4, token_dim=8, codebook_size=32, width=32)
    >>> z_q, codes, vq_loss = tok.encode(torch.rand(2, 1, 16, 16))
    >>> codes.shape, tok.decode(codes=codes)[0].shape
    (torch.Size([2, 16]), torch.Size([2, 1, 16, 16]))
    """

    def __init__(
        self,
        image_size: int = 16,
        patch_size: int = 4,
        token_dim: int = 8,
        codebook_size: int = 64,
        width: int = 64,
        depth: int = 2,
        heads: int = 4,
        channels: int = 1,
        entropy_weight: float = 0.0,
        entropy_temperature: float = 0.05,
    ) -> None:
        nn.Module.__init__(self)
        if patch_size < 1 or image_size % patch_size:
            raise ValueError(f"image size {image_size} is not divisible by patch size {patch_size}")
        self.image_size, self.patch_size, self.channels = image_size, patch_size, channels
        self.grid = image_size // patch_size
        self.num_patches = p = self.grid**2
        self.num_latent_tokens = p
        self.nested_dropout = False
        patch_dim = channels * patch_size**2
        self.patch_in = nn.Linear(patch_dim, width)
        self.enc_pos = nn.Parameter(0.02 * torch.randn(1, p, width))
        self.encoder = vit_blocks(width, depth, heads)
        self.enc_norm = nn.LayerNorm(width)
        self.to_code = nn.Linear(width, token_dim)
        self.quantizer = CosineVectorQuantizer(
            codebook_size,
            token_dim,
            entropy_weight=entropy_weight,
            entropy_temperature=entropy_temperature,
        )
        self.from_code = nn.Linear(token_dim, width)
        self.dec_pos = nn.Parameter(0.02 * torch.randn(1, p, width))
        self.decoder = vit_blocks(width, depth, heads)
        self.dec_norm = nn.LayerNorm(width)
        self.patch_out = nn.Linear(width, patch_dim)
        self.width = width

    def encode_continuous(self, x: torch.Tensor) -> torch.Tensor:
        """Continuous patch tokens ``(B, P, token_dim)`` in raster order."""
        h = self.patch_in(self.patchify(x)) + self.enc_pos
        for blk in self.encoder:
            h = blk(h)
        return self.to_code(self.enc_norm(h))

    def tail_drop(self, emb: torch.Tensor, keep: torch.Tensor | None = None) -> torch.Tensor:
        raise ValueError("nested (tail) dropout is defined for 1D tokens only, not a 2D grid")

    def decode(
        self,
        codes: torch.Tensor | None = None,
        embeddings: torch.Tensor | None = None,
        probs: torch.Tensor | None = None,
        keep: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Image ``(B, C, H, W)`` and middle-layer patch features ``(B, P, width)``."""
        given = [t is not None for t in (codes, embeddings, probs)]
        if sum(given) != 1:
            raise ValueError("decode needs exactly one of codes, embeddings or probs")
        if keep is not None:
            self.tail_drop(embeddings, keep)
        if codes is not None:
            emb = self.quantizer.lookup(codes)
        elif probs is not None:
            emb = self.quantizer.lookup_soft(probs)
        else:
            emb = embeddings
        if emb.shape[1] != self.num_latent_tokens:
            raise ValueError(f"expected {self.num_latent_tokens} tokens, got {emb.shape[1]}")
        h = self.from_code(emb) + self.dec_pos
        mid = None
        for i, blk in enumerate(self.decoder):
            h = blk(h)
            if i == (len(self.decoder) - 1) // 2:
                mid = h
        return self.unpatchify(self.patch_out(self.dec_norm(h))), mid
