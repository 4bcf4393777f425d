"""1D TiTok-style tokenizer: ViT encoder with K latent queries, cosine VQ, ViT decoder.

Map of the method (EOSTok, arXiv 2605.00503, Sec. "1D tokenizer"; TiTok) to code:

1. encoder ``[patches(x); latent queries] -> ViT -> K latent vectors -> linear -> z``:
   :meth:`OneDTokenizer.encode_continuous`;
2. quantisation ``z -> z_q`` (straight-through, commitment): :meth:`OneDTokenizer.encode`;
3. nested (tail) dropout: keep the first k ~ U{1..K} tokens and replace the rest by a learned
   mask token, which orders the tokens coarse-to-fine: :meth:`OneDTokenizer.tail_drop`;
4. decoder ``[mask tokens for P patches; K tokens] -> ViT -> pixels`` from codes, embeddings or
   code probabilities: :meth:`OneDTokenizer.decode`, returning the middle-layer patch
   features the implicit alignment (REPA-style, on decoder features) uses.
"""

from __future__ import annotations

import torch
from torch import nn

from .quantizer import CosineVectorQuantizer


def vit_blocks(width: int, depth: int, heads: int) -> nn.ModuleList:
    """``depth`` pre-norm transformer encoder layers of ``width`` (GELU MLP, ratio 4)."""
    return nn.ModuleList(
        nn.TransformerEncoderLayer(
            width,
            heads,
            4 * width,
            dropout=0.0,
            activation="gelu",
            batch_first=True,
            norm_first=True,
        )
        for _ in range(depth)
    )


class OneDTokenizer(nn.Module):
    """TiTok-style 1D tokenizer: an image becomes K discrete tokens.

    Parameters
    ----------
    image_size, patch_size:
        Square image side and patch side (``image_size % patch_size == 0``).
    num_latent_tokens:
        Number of 1D tokens K (at least 1).
    token_dim:
        Dimension of a code.
    codebook_size:
        Number of codes C (at least 2).
    width, depth, heads:
        ViT width, depth (encoder and decoder each) and heads.
    channels:
        Image channels.
    nested_dropout:
        Apply tail dropout in training mode.
    entropy_weight, entropy_temperature:
        Codebook-entropy regulariser of the quantizer (0 = off).

    Examples
    --------
    >>> _ = torch.manual_seed(0)
    >>> tok = OneDTokenizer(16, 4, num_latent_tokens=8, token_dim=8, codebook_size=32, width=32)
    >>> x = torch.rand(2, 1, 16, 16)
    >>> z_q, codes, vq_loss = tok.encode(x)
    >>> codes.shape, tok.decode(codes=codes)[0].shape
    (torch.Size([2, 8]), torch.Size([2, 1, 16, 16]))
    """

    def __init__(
        self,
        image_size: int = 16,
        patch_size: int = 4,
        num_latent_tokens: int = 8,
        token_dim: int = 8,
        codebook_size: int = 64,
        width: int = 64,
        depth: int = 2,
        heads: int = 4,
        channels: int = 1,
        nested_dropout: bool = True,
        entropy_weight: float = 0.0,
        entropy_temperature: float = 0.05,
    ) -> None:
        super().__init__()
        if patch_size < 1 or image_size % patch_size:
            raise ValueError(f"image size {image_size} is not divisible by patch size {patch_size}")
        if num_latent_tokens < 1:
            raise ValueError(
                f"number of latent tokens K must be at least 1, got {num_latent_tokens}"
            )
        self.image_size, self.patch_size, self.channels = image_size, patch_size, channels
        self.grid = image_size // patch_size
        self.num_patches = self.grid**2
        self.num_latent_tokens = num_latent_tokens
        self.nested_dropout = nested_dropout
        patch_dim = channels * patch_size**2
        p, k = self.num_patches, num_latent_tokens
        # encoder
        self.patch_in = nn.Linear(patch_dim, width)
        self.enc_pos = nn.Parameter(0.02 * torch.randn(1, p + k, width))
        self.latent_queries = nn.Parameter(0.02 * torch.randn(1, k, width))
        self.encoder = vit_blocks(width, depth, heads)
        self.enc_norm = nn.LayerNorm(width)
        self.to_code = nn.Linear(width, token_dim)
        self.quantizer = CosineVectorQuantizer(
            codebook_size,
            token_dim,
            entropy_weight=entropy_weight,
            entropy_temperature=entropy_temperature,
        )
        # decoder
        self.from_code = nn.Linear(token_dim, width)
        self.drop_token = nn.Parameter(torch.zeros(1, 1, token_dim))
        self.mask_tokens = nn.Parameter(0.02 * torch.randn(1, p, width))
        self.dec_pos = nn.Parameter(0.02 * torch.randn(1, p + k, width))
        self.decoder = vit_blocks(width, depth, heads)
        self.dec_norm = nn.LayerNorm(width)
        self.patch_out = nn.Linear(width, patch_dim)
        self.width = width

    # ------------------------------------------------------------------ patches
    def patchify(self, x: torch.Tensor) -> torch.Tensor:
        """``(B, C, H, W) -> (B, P, C*p*p)``."""
        b, c, h, w = x.shape
        if (c, h, w) != (self.channels, self.image_size, self.image_size):
            raise ValueError(
                f"expected images of shape ({self.channels}, {self.image_size}, {self.image_size}),"
                f" got {tuple(x.shape[1:])}"
            )
        g, s = self.grid, self.patch_size
        x = x.reshape(b, c, g, s, g, s).permute(0, 2, 4, 1, 3, 5)
        return x.reshape(b, g * g, c * s * s)

    def unpatchify(self, t: torch.Tensor) -> torch.Tensor:
        """``(B, P, C*p*p) -> (B, C, H, W)``."""
        b = t.shape[0]
        g, s, c = self.grid, self.patch_size, self.channels
        t = t.reshape(b, g, g, c, s, s).permute(0, 3, 1, 4, 2, 5)
        return t.reshape(b, c, g * s, g * s)

    # ------------------------------------------------------------------ encoder
    def encode_continuous(self, x: torch.Tensor) -> torch.Tensor:
        """Continuous latent tokens ``(B, K, token_dim)`` before quantisation."""
        h = self.patch_in(self.patchify(x))
        h = torch.cat([h, self.latent_queries.expand(h.shape[0], -1, -1)], 1) + self.enc_pos
        for blk in self.encoder:
            h = blk(h)
        return self.to_code(self.enc_norm(h[:, self.num_patches :]))

    def encode(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Straight-through quantised tokens ``(B, K, d)``, codes ``(B, K)`` and the VQ loss."""
        return self.quantizer(self.encode_continuous(x))

    def tail_drop(self, emb: torch.Tensor, keep: torch.Tensor | None = None) -> torch.Tensor:
        """Replace tokens at positions ``>= keep[b]`` by the learned drop token.

        ``keep`` ``(B,)`` defaults to ``k ~ U{1..K}`` per image.
        """
        b, k, _ = emb.shape
        if keep is None:
            keep = torch.randint(1, k + 1, (b,), device=emb.device)
        mask = torch.arange(k, device=emb.device)[None, :] < keep[:, None]
        return torch.where(mask[..., None], emb, self.drop_token.to(emb.dtype).expand(b, k, -1))

    # ------------------------------------------------------------------ decoder
    def decode(
        self,
        codes: torch.Tensor | None = None,
        embeddings: torch.Tensor | None = None,
        probs: torch.Tensor | None = None,
        keep: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Decode from exactly one of codes ``(B,K)``, embeddings ``(B,K,d)``, probs ``(B,K,C)``.

        Returns the image ``(B, C, H, W)`` and the middle-layer decoder patch features
        ``(B, P, width)`` (for the implicit alignment). ``keep`` applies tail dropout with
        fixed lengths; in training mode with ``nested_dropout`` it is sampled.
        """
        given = [t is not None for t in (codes, embeddings, probs)]
        if sum(given) != 1:
            raise ValueError("decode needs exactly one of codes, embeddings or probs")
        if codes is not None:
            emb = self.quantizer.lookup(codes)
        elif probs is not None:
            emb = self.quantizer.lookup_soft(probs)
        else:
            emb = embeddings
        if emb.shape[1] != self.num_latent_tokens:
            raise ValueError(f"expected {self.num_latent_tokens} tokens, got {emb.shape[1]}")
        if keep is not None or (self.training and self.nested_dropout):
            emb = self.tail_drop(emb, keep)
        b = emb.shape[0]
        h = torch.cat([self.mask_tokens.expand(b, -1, -1), self.from_code(emb)], 1) + self.dec_pos
        mid = None
        for i, blk in enumerate(self.decoder):
            h = blk(h)
            if i == (len(self.decoder) - 1) // 2:
                mid = h[:, : self.num_patches]
        out = self.patch_out(self.dec_norm(h[:, : self.num_patches]))
        return self.unpatchify(out), mid
