"""Autoregressive Prediction Reconstruction (APR): AR predictions mapped back to pixels.

EOSTok (arXiv 2605.00503) passes the AR model's next-token predictions through the
tokenizer's decoder so that the generation result supervises the tokenizer and the codebook
does not collapse. Reconstruction used here (the paper's exact form is not public; see the
package notes):

``e_hat_i = sum_c softmax(logits_i / tau)_c e_c`` under teacher forcing (soft), or the
Gumbel-softmax straight-through one-hot (``hard=True``); ``L_APR = |x - Dec(e_hat)|^2``:
:class:`APRLoss`.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from .tokenizer import OneDTokenizer


class APRLoss(nn.Module):
    """Prediction-to-pixels loss ``|x - Dec(softmax(logits / tau) @ E)|^2``.

    Parameters
    ----------
    tau:
        Softmax temperature (> 0).
    hard:
        Gumbel-softmax straight-through one-hot codes instead of the soft mixture.

    Examples
    --------
    >>> _ = torch.manual_seed(0)
    >>> tok = OneDTokenizer(8, 4, num_latent_tokens=2, token_dim=4, codebook_size=8, width=16)
    >>> loss = APRLoss(tau=1.0)(tok, torch.randn(3, 2, 8), torch.rand(3, 1, 8, 8))
    >>> loss.ndim, bool(loss > 0)
    (0, True)
    """

    def __init__(self, tau: float = 1.0, hard: bool = False) -> None:
        super().__init__()
        if not tau > 0:
            raise ValueError(f"APR temperature tau must be positive, got {tau}")
        self.tau, self.hard = tau, hard

    def probs(self, logits: torch.Tensor) -> torch.Tensor:
        """Code probabilities ``(B, K, C)`` from AR logits."""
        if self.hard:
            return F.gumbel_softmax(logits, tau=self.tau, hard=True, dim=-1)
        return (logits / self.tau).softmax(-1)

    def forward(
        self, tokenizer: OneDTokenizer, logits: torch.Tensor, x: torch.Tensor
    ) -> torch.Tensor:
        recon, _ = tokenizer.decode(probs=self.probs(logits))
        return F.mse_loss(recon, x)
