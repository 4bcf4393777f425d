"""torchmetrics metrics for POET's two invariants: the spectrum and the rotations' orthogonality.

Paper: "POET-X: Memory-efficient LLM Training by Scaling Orthogonal Transformation",
Qiu, Liu, Weller, Shi, Liu, ICML 2026 (arXiv 2603.05500). POET trains W = R W0 P with R, P
orthogonal, so sigma(W) = sigma(W0) (Sec. 2 of POET; exact with the Cayley map, up to the
truncation error with Cayley-Neumann). The two metrics measure how far a run is from that:

* :class:`SpectralDrift`: max over matrices of max_k |sigma_k(after) - sigma_k(before)| /
  sigma_max(before) (0 for POET in exact arithmetic; grows under AdamW / Muon);
* :class:`OrthogonalityError`: max over blocks of ||G^T G - I||_F / sqrt(b) of the b x b
  rotation blocks (0 for the exact Cayley map, O(||Q||^{k+1}) for k Neumann terms).

Both reduce across processes with ``max`` (``dist_reduce_fx="max"``), so they can be logged
from a DDP / FSDP run.
"""

from __future__ import annotations

import torch
from torch import nn
from torchmetrics import Metric

from .cayley import orthogonality_error


class SpectralDrift(Metric):
    """Maximum relative singular-value drift between pairs of matrices.

    ``update(before, after)`` takes two matrices (m, n) of the same shape, or two vectors of
    their singular values (k,); the state keeps the running maximum of
    ``max_k |sigma_k(after) - sigma_k(before)| / sigma_max(before)`` (float64 SVD).

    Reference: POET / POET-X (Qiu et al.), spectrum preservation of W = R W0 P.

    Examples
    --------
    >>> g = torch.Generator().manual_seed(0)
    >>> w0 = torch.randn(6, 4, generator=g)
    >>> q, _ = torch.linalg.qr(torch.randn(6, 6, generator=g, dtype=torch.float64))
    >>> drift = SpectralDrift()
    >>> drift.update(w0, (q @ w0.double()).float())        # an orthogonal map: no drift
    >>> bool(drift.compute() < 1e-5)
    True
    >>> drift.update(w0, 2 * w0)                            # doubling the matrix: drift 1
    >>> round(float(drift.compute()), 6)
    1.0
    """

    full_state_update = False
    higher_is_better = False

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.add_state("drift", torch.tensor(0.0, dtype=torch.float64), dist_reduce_fx="max")

    @staticmethod
    def _svals(t: torch.Tensor) -> torch.Tensor:
        t = t.detach().to(torch.float64)
        return torch.linalg.svdvals(t) if t.dim() == 2 else t

    def update(self, before: torch.Tensor, after: torch.Tensor) -> None:  # noqa: D102
        if before.shape != after.shape or before.dim() not in (1, 2):
            raise ValueError(
                "SpectralDrift.update needs two matrices (or two singular-value vectors) of "
                f"one shape, got {tuple(before.shape)} and {tuple(after.shape)}"
            )
        s0, s1 = self._svals(before), self._svals(after)
        rel = ((s1 - s0).abs() / s0.abs().max().clamp_min(1e-300)).max()
        self.drift = torch.maximum(self.drift, rel.to(self.drift))

    def compute(self) -> torch.Tensor:  # noqa: D102
        return self.drift


class OrthogonalityError(Metric):
    """Maximum ``||G^T G - I||_F / sqrt(b)`` over rotation blocks.

    ``update`` takes a tensor of blocks (K, b, b), or a module whose
    :class:`~poet_x.poet_linear.POETLinear` layers are all read (input and output side).

    Reference: POET / POET-X (Qiu et al.), Cayley and Cayley-Neumann parametrisation.

    Examples
    --------
    >>> from poet_x.config import POETConfig
    >>> from poet_x.poet_linear import POETLinear
    >>> layer = POETLinear(torch.randn(8, 8), None, POETConfig(block_size=4))
    >>> metric = OrthogonalityError()
    >>> metric.update(layer)                  # Q = 0 at initialisation: G = I exactly
    >>> float(metric.compute())
    0.0
    >>> metric.update(2 * torch.eye(4)[None])  # G = 2I: ||4I - I||_F / 2 = 3
    >>> float(metric.compute())
    3.0
    """

    full_state_update = False
    higher_is_better = False

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.add_state("error", torch.tensor(0.0, dtype=torch.float64), dist_reduce_fx="max")

    def update(self, blocks: torch.Tensor | nn.Module) -> None:  # noqa: D102
        from .poet_linear import POETLinear

        if isinstance(blocks, nn.Module):
            errs = [m.orthogonality_error() for m in blocks.modules() if isinstance(m, POETLinear)]
            if not errs:
                raise ValueError("OrthogonalityError.update: the module has no POETLinear layer")
            err = max(errs)
        else:
            if blocks.dim() != 3 or blocks.shape[1] != blocks.shape[2]:
                raise ValueError(
                    f"OrthogonalityError.update needs blocks (K, b, b), got {tuple(blocks.shape)}"
                )
            err = orthogonality_error(blocks.detach())
        self.error = torch.maximum(self.error, torch.tensor(float(err), dtype=torch.float64))

    def compute(self) -> torch.Tensor:  # noqa: D102
        return self.error
