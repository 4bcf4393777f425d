"""Cosine vector quantizer with straight-through gradients (TiTok-style VQ).

Paper: "End-to-end autoregressive image generation with a 1D semantic tokenizer" (EOSTok,
arXiv 2605.00503); the quantizer follows TiTok / VQ-VAE.

Map of the equations to code:

1. nearest code on the unit sphere, ``q_i = argmax_c <z_i/|z_i|, e_c/|e_c|>``:
   :meth:`CosineVectorQuantizer.nearest`;
2. straight-through estimator ``z_q = z + sg(q - z)``: :func:`straight_through`;
3. data-dependent codebook init on the first training batch (as k-means-style init in
   TiTok / vector-quantize-pytorch; avoids the trivial collapse of a random init):
   :meth:`CosineVectorQuantizer.init_from_data`, and restart of codes unused for a number
   of batches (dead-code handling as in vector-quantize-pytorch):
   :meth:`CosineVectorQuantizer.restart_dead_codes`;
4. VQ loss ``|sg(z) - q|^2 + beta |z - sg(q)|^2`` (codebook + commitment, beta = 0.25):
   :meth:`CosineVectorQuantizer.forward`;
5. soft lookup ``e_hat = p @ E`` for the prediction-to-pixels (APR) loss:
   :meth:`CosineVectorQuantizer.lookup_soft`;
6. codebook-entropy regulariser (as in MAGVIT-v2 / LFQ): with soft assignments
   ``p_i = softmax(cos(z_i, E) / T)``, ``L_ent = mean_i H(p_i) - H(mean_i p_i)`` (confident
   per-token assignment, spread-out batch usage): :meth:`CosineVectorQuantizer.entropy_penalty`;
7. codebook usage (fraction of codes used) and perplexity ``exp(H(p_code))``:
   :func:`codebook_usage`.

The quantizer is written here rather than taken from ``vector-quantize-pytorch``: the
package needs the soft (probability) lookup on the same normalised codebook, and the
library is not in this workspace's lock.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


def straight_through(z: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """Return ``z + sg(q - z)``: the value of ``q`` with the gradient of ``z`` (identity)."""
    return z + (q - z).detach()


class CosineVectorQuantizer(nn.Module):
    """Vector quantizer over an l2-normalised codebook.

    Parameters
    ----------
    codebook_size:
        Number of codes C (at least 2).
    dim:
        Dimension of a code.
    commitment:
        Weight beta of the commitment term (0.25 as in VQ-VAE / TiTok).
    dead_code_patience:
        Restart a code unused for this many training batches (0 = never).
    entropy_weight, entropy_temperature:
        Weight and softmax temperature of the codebook-entropy regulariser added to the VQ
        loss in training (0 = off).

    Examples
    --------
    >>> _ = torch.manual_seed(0)
    >>> vq = CosineVectorQuantizer(16, 4)
    >>> z_q, idx, loss = vq(torch.randn(2, 3, 4))
    >>> z_q.shape, idx.shape, bool(loss >= 0)
    (torch.Size([2, 3, 4]), torch.Size([2, 3]), True)
    """

    def __init__(
        self,
        codebook_size: int,
        dim: int,
        commitment: float = 0.25,
        dead_code_patience: int = 20,
        entropy_weight: float = 0.0,
        entropy_temperature: float = 0.05,
    ) -> None:
        super().__init__()
        if codebook_size < 2:
            raise ValueError(f"codebook_size must be at least 2, got {codebook_size}")
        if dim < 1:
            raise ValueError(f"code dimension must be at least 1, got {dim}")
        self.codebook_size = codebook_size
        self.dim = dim
        self.commitment = commitment
        if entropy_weight < 0 or not entropy_temperature > 0:
            raise ValueError(
                "entropy_weight must be >= 0 and entropy_temperature > 0, got "
                f"{entropy_weight} and {entropy_temperature}"
            )
        self.entropy_weight, self.entropy_temperature = entropy_weight, entropy_temperature
        self.embedding = nn.Parameter(torch.randn(codebook_size, dim))
        self.dead_code_patience = dead_code_patience
        self.register_buffer("initialized", torch.tensor(False))
        self.register_buffer("unused_steps", torch.zeros(codebook_size, dtype=torch.long))

    @torch.no_grad()
    def restart_dead_codes(self, z: torch.Tensor, idx: torch.Tensor) -> None:
        """Replace codes unused for ``dead_code_patience`` training batches by batch vectors."""
        used = torch.bincount(idx.reshape(-1), minlength=self.codebook_size) > 0
        self.unused_steps.add_(1).masked_fill_(used, 0)
        dead = (self.unused_steps >= self.dead_code_patience).nonzero()[:, 0]
        if len(dead):
            flat = z.reshape(-1, self.dim)
            pick = torch.randint(0, len(flat), (len(dead),), device=z.device)
            self.embedding[dead] = flat[pick] + 0.01 * torch.randn_like(self.embedding[dead])
            self.unused_steps[dead] = 0

    @torch.no_grad()
    def init_from_data(self, z: torch.Tensor) -> None:
        """Data-dependent init: codes = randomly chosen encoder outputs (+ small noise)."""
        flat = F.normalize(z.reshape(-1, self.dim), dim=-1)
        pick = torch.randint(0, len(flat), (self.codebook_size,), device=z.device)
        self.embedding.copy_(flat[pick] + 0.01 * torch.randn_like(self.embedding))
        self.initialized.fill_(True)

    @property
    def codebook(self) -> torch.Tensor:
        """The normalised codebook ``(C, dim)``."""
        return F.normalize(self.embedding, dim=-1)

    def nearest(self, z: torch.Tensor) -> torch.Tensor:
        """Indices ``(...,)`` of the nearest code (cosine) to each vector of ``z`` ``(..., dim)``."""
        sims = F.normalize(z, dim=-1) @ self.codebook.t()
        return sims.argmax(-1)

    def lookup(self, indices: torch.Tensor) -> torch.Tensor:
        """Codes of ``indices`` ``(...,)`` as ``(..., dim)``."""
        if indices.numel() and (int(indices.min()) < 0 or int(indices.max()) >= self.codebook_size):
            raise ValueError(f"code indices must lie in [0, {self.codebook_size})")
        return self.codebook[indices]

    def lookup_soft(self, probs: torch.Tensor) -> torch.Tensor:
        """Expected code ``probs @ E`` for probabilities ``(..., C)`` (differentiable)."""
        if probs.shape[-1] != self.codebook_size:
            raise ValueError(
                f"probabilities need {self.codebook_size} entries, got {probs.shape[-1]}"
            )
        return probs @ self.codebook

    def entropy_penalty(self, z: torch.Tensor) -> torch.Tensor:
        """``mean_i H(p_i) - H(mean_i p_i)`` of the soft assignments of ``z`` ``(..., dim)``.

        Lies in ``[-log C, log C]``; minimal (``-log C``) when every vector is assigned to
        one code with certainty and the codes are used uniformly.
        """
        sims = F.normalize(z, dim=-1).reshape(-1, self.dim) @ self.codebook.t()
        logp = (sims / self.entropy_temperature).log_softmax(-1)  # (N, C)
        per_token = -(logp.exp() * logp).sum(-1).mean()
        avg = logp.exp().mean(0)
        batch = -(avg * avg.clamp_min(1e-12).log()).sum()
        return per_token - batch

    def forward(self, z: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Quantise ``z`` ``(..., dim)``: straight-through codes, indices and the VQ loss."""
        if self.training and not bool(self.initialized):
            self.init_from_data(z)
        z = F.normalize(z, dim=-1)
        idx = self.nearest(z)
        if self.training and self.dead_code_patience > 0:
            self.restart_dead_codes(z.detach(), idx)
            idx = self.nearest(z)
        q = self.codebook[idx]
        loss = F.mse_loss(q, z.detach()) + self.commitment * F.mse_loss(z, q.detach())
        if self.training and self.entropy_weight > 0:
            loss = loss + self.entropy_weight * self.entropy_penalty(z)
        return straight_through(z, q), idx, loss


def codebook_usage(indices: torch.Tensor, codebook_size: int) -> tuple[float, float]:
    """Fraction of codes used and perplexity ``exp(H)`` of the code histogram.

    >>> codebook_usage(torch.tensor([0, 0, 1, 1]), 4)
    (0.5, 2.0)
    """
    counts = torch.bincount(indices.reshape(-1), minlength=codebook_size).double()
    p = counts / counts.sum()
    nz = p[p > 0]
    return float((counts > 0).double().mean()), float(torch.exp(-(nz * nz.log()).sum()))
