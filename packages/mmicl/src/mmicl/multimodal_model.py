"""Projector, encoders and the multimodal model of the three-stage pipeline.

Paper: "Dissecting Multimodal In-Context Learning", Huang et al., ICML 2026 (arXiv 2601.20796).

1. projector ``P(z) = W_2 GELU(W_1 z)`` from ``D2`` to ``D1``, bias-free -> :class:`Projector`;
2. encoders of the secondary modality: :class:`MLPEncoder` (vectors) and
   :class:`CNNEncoder` (8x8 images, e.g. scikit-learn's digits);
3. the model ``decoder(interleave(M1, P(E(M2)), y))`` -> :class:`MultimodalICL`.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from mmicl.multimodal_data import interleave
from mmicl.transformer import ICLDecoder


class Projector(nn.Module):
    """Two bias-free linear maps with a GELU between them, ``D2 -> D1``.

    Examples
    --------
    >>> Projector(6, 16)(torch.randn(2, 5, 6)).shape
    torch.Size([2, 5, 16])
    """

    def __init__(self, d_in: int, d_out: int, hidden: int | None = None) -> None:
        super().__init__()
        hidden = hidden or 2 * d_out
        self.w1 = nn.Linear(d_in, hidden, bias=False)
        self.w2 = nn.Linear(hidden, d_out, bias=False)

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        return self.w2(F.gelu(self.w1(z)))


class MLPEncoder(nn.Module):
    """Two-layer GELU MLP encoder of vector items.

    Examples
    --------
    >>> MLPEncoder(6, 8)(torch.randn(3, 6)).shape
    torch.Size([3, 8])
    """

    def __init__(self, d_in: int, d_out: int, hidden: int = 64) -> None:
        super().__init__()
        self.d_in, self.d_out = d_in, d_out
        self.net = nn.Sequential(nn.Linear(d_in, hidden), nn.GELU(), nn.Linear(hidden, d_out))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


class CNNEncoder(nn.Module):
    """Small CNN encoder of flattened 8x8 images (64 pixels) to ``d_out`` features.

    Examples
    --------
    >>> CNNEncoder(16)(torch.rand(2, 5, 64)).shape
    torch.Size([2, 5, 16])
    """

    def __init__(self, d_out: int = 32, channels: int = 16) -> None:
        super().__init__()
        self.d_in, self.d_out = 64, d_out
        self.conv = nn.Sequential(
            nn.Conv2d(1, channels, 3, padding=1),
            nn.GELU(),
            nn.MaxPool2d(2),
            nn.Conv2d(channels, 2 * channels, 3, padding=1),
            nn.GELU(),
            nn.MaxPool2d(2),
        )
        self.fc = nn.Linear(2 * channels * 4, d_out)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        lead = x.shape[:-1]
        if x.shape[-1] != 64:
            raise ValueError(f"CNNEncoder expects 64-pixel (8x8) images, got {x.shape[-1]}")
        h = self.conv(x.reshape(-1, 1, 8, 8))
        return self.fc(h.flatten(1)).reshape(*lead, self.d_out)


class MultimodalICL(nn.Module):
    """Decoder over ``[M1, P(E(M2)), y] x N + [M1_q, P(E(M2_q))]``.

    Parameters
    ----------
    decoder:
        The (pre-trained) :class:`~mmicl.transformer.ICLDecoder` over modality 1.
    d2:
        Dimension of the secondary modality's raw items.
    encoder:
        Optional encoder of M2 (``None``: the projector reads raw items).
    projector_hidden:
        Hidden width of the projector.

    Examples
    --------
    >>> dec = ICLDecoder(16, 8, d_model=16)
    >>> mm = MultimodalICL(dec, d2=6)
    >>> batch = {"m1": torch.randn(2, 5, 16), "m2": torch.randn(2, 5, 6),
    ...          "label_tokens": torch.randn(2, 4, 16)}
    >>> mm(batch).shape
    torch.Size([2, 8])
    """

    def __init__(
        self,
        decoder: ICLDecoder,
        d2: int,
        encoder: nn.Module | None = None,
        projector_hidden: int | None = None,
    ) -> None:
        super().__init__()
        self.decoder = decoder
        self.encoder = encoder
        d_enc = getattr(encoder, "d_out", d2) if encoder is not None else d2
        self.projector = Projector(d_enc, decoder.d_in, projector_hidden)
        self.d2 = d2

    def tokens(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        """The interleaved input tokens (S, 3N+2, D1)."""
        m2 = batch["m2"]
        if m2.shape[-1] != self.d2:
            raise ValueError(f"M2 items have dimension {m2.shape[-1]}, the model expects {self.d2}")
        z = self.encoder(m2) if self.encoder is not None else m2
        return interleave(batch["m1"], self.projector(z), batch["label_tokens"])

    def forward(self, batch: dict[str, torch.Tensor], return_attention: bool = False):
        return self.decoder(self.tokens(batch), return_attention=return_attention)
