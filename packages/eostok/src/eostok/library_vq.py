"""The third-party two-stage anchor: vector-quantize-pytorch's quantizer in the 1D tokenizer.

EOSTok (arXiv 2605.00503) compares its end-to-end tokenizer + AR generator with two-stage
pipelines (TiTok / LlamaGen: train a VQ tokenizer, freeze it, train an AR model on its codes).
Our two-stage row uses the package's own cosine quantizer (:mod:`eostok.quantizer`). The
anchor swaps in the established library ``vector-quantize-pytorch``
(``vector_quantize_pytorch.VectorQuantize``, the ``bench`` extra) with its recommended settings:

* Euclidean codebook updated by exponential moving averages (decay 0.8), not by gradients;
* k-means initialisation of the codebook on the first batch (10 iterations);
* expiry of codes whose EMA cluster size falls below 2 (re-seeded from the batch);
* gradients through the quantiser by the rotation trick (Fifty et al., 2024; the library's
  default) instead of the plain straight-through estimator;
* commitment weight 0.25 (VQ-VAE).

:class:`LibraryVectorQuantizer` wraps it behind the interface the tokenizers use
(``forward -> (z_q, codes, loss)``, ``lookup``, ``lookup_soft``, ``codebook``), so the same ViT
encoder/decoder, AR prior (:mod:`eostok.ar_prior`), training loop and metrics apply; only the
quantizer is third-party. ``EOSTokModule(quantizer="library")`` builds it.
"""

from __future__ import annotations

import torch
from torch import nn

INSTALL_HINT = (
    "the vector-quantize-pytorch anchor needs the bench extra: pip install 'eostok[bench]'"
)


class LibraryVectorQuantizer(nn.Module):
    """``vector_quantize_pytorch.VectorQuantize`` behind the package's quantizer interface.

    Parameters
    ----------
    codebook_size:
        Number of codes C (at least 2).
    dim:
        Dimension of a code.
    commitment:
        Weight of the commitment term (0.25 as in VQ-VAE).
    decay:
        EMA decay of the codebook (the library's default 0.8).
    dead_code_threshold:
        Expire codes whose EMA cluster size is below this (the library's
        ``threshold_ema_dead_code``).

    Reference: van den Oord et al., "Neural discrete representation learning" (VQ-VAE, 2017);
    the library is https://github.com/lucidrains/vector-quantize-pytorch.

    Examples
    --------
    >>> _ = torch.manual_seed(0)
    >>> vq = LibraryVectorQuantizer(16, 4)
    >>> z_q, idx, loss = vq(torch.randn(2, 8, 4))
    >>> z_q.shape, idx.shape, loss.ndim
    (torch.Size([2, 8, 4]), torch.Size([2, 8]), 0)
    >>> bool(torch.equal(vq.lookup(idx), vq.codebook[idx]))
    True
    """

    def __init__(
        self,
        codebook_size: int,
        dim: int,
        commitment: float = 0.25,
        decay: float = 0.8,
        dead_code_threshold: float = 2.0,
    ) -> None:
        super().__init__()
        try:
            from vector_quantize_pytorch import VectorQuantize
        except ImportError as err:  # the bench extra is not installed
            raise ImportError(INSTALL_HINT) from err
        if codebook_size < 2:
            raise ValueError(f"codebook_size must be at least 2, got {codebook_size}")
        self.codebook_size, self.dim = codebook_size, dim
        self.vq = VectorQuantize(
            dim=dim,
            codebook_size=codebook_size,
            decay=decay,
            commitment_weight=commitment,
            kmeans_init=True,
            kmeans_iters=10,
            threshold_ema_dead_code=dead_code_threshold,
        )

    @property
    def codebook(self) -> torch.Tensor:
        """The codebook ``(C, dim)``."""
        return self.vq.codebook

    def nearest(self, z: torch.Tensor) -> torch.Tensor:
        """Indices of the nearest code (Euclidean) to each vector of ``z`` ``(..., dim)``."""
        flat = z.reshape(-1, self.dim)
        return torch.cdist(flat, self.codebook).argmin(-1).reshape(z.shape[:-1])

    def lookup(self, indices: torch.Tensor) -> torch.Tensor:
        """Codes of ``indices`` ``(...,)`` as ``(..., dim)``."""
        if indices.numel() and (int(indices.min()) < 0 or int(indices.max()) >= self.codebook_size):
            raise ValueError(f"code indices must lie in [0, {self.codebook_size})")
        return self.codebook[indices]

    def lookup_soft(self, probs: torch.Tensor) -> torch.Tensor:
        """Expected code ``probs @ E`` for probabilities ``(..., C)``."""
        if probs.shape[-1] != self.codebook_size:
            raise ValueError(
                f"probabilities need {self.codebook_size} entries, got {probs.shape[-1]}"
            )
        return probs @ self.codebook

    def forward(self, z: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Quantise ``z`` ``(B, K, dim)``: quantised vectors (gradient to ``z``), codes, loss."""
        z_q, idx, loss = self.vq(z)
        return z_q, idx, loss.sum()
