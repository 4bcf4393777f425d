"""The authors' reference implementation (PyPI ``revit-pde``, import name ``revit``) as a backbone.

``revit-pde`` is an optional anchor (the ``bench`` extra). This module wraps its
``build_revit_2d`` so the emulator, ``reproduce`` and the equivariance metric treat it like
our own backbones:

- input channels: every vector of the field spec (velocity first, then e.g. the forcing),
  passed through the reference's ``AOV-Flex`` encoder (frame from the first vector, the
  other vectors rebased into it);
- output: the state vector, with the residual step ``u_{t+1} = u_t + Phi(u_t)`` applied here
  (the reference's own ``euler_connection`` assumes input = output channels).

Only fields made of vectors with a vector state (``kolmogorov``, ``decaying``) are supported;
anything else raises one clear error. When ``revit-pde`` is not installed,
:func:`reference_available` is False and :class:`ReferenceReViT2d` raises ``ImportError``.
"""

from __future__ import annotations

import importlib.util
import warnings

import torch
from torch import nn

from .group import FieldSpec


def reference_available() -> bool:
    """Whether the authors' ``revit-pde`` (import name ``revit``) with ``build_revit_2d`` is importable."""
    if importlib.util.find_spec("revit") is None:
        return False
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from revit import build_revit_2d  # noqa: F401
    except ImportError:
        return False
    return True


class ReferenceReViT2d(nn.Module):
    """The authors' 2D ReViT (``revit-pde``) at our tiny sizes, with a residual step.

    Examples
    --------
    >>> import pytest
    >>> _ = pytest.importorskip("revit")
    >>> spec = FieldSpec(4, vectors=((0, 1), (2, 3)))
    >>> net = ReferenceReViT2d(spec, (0, 1), img_size=16, window=4, embed_dim=8, depths=(1, 1, 1))
    >>> net(torch.randn(1, 4, 16, 16)).shape
    torch.Size([1, 2, 16, 16])
    """

    def __init__(
        self,
        spec: FieldSpec,
        state: tuple[int, ...],
        img_size: int = 32,
        patch: int = 2,
        window: int = 4,
        embed_dim: int = 24,
        heads: int = 2,
        depths: tuple[int, ...] = (2, 2, 2),
        periodic: bool = True,
    ) -> None:
        super().__init__()
        if not reference_available():
            raise ImportError(
                "backbone 'reference' needs the authors' revit-pde: pip install 'revit-equivariant[bench]'"
            )
        order = [c for v in spec.vectors for c in v]
        if spec.scalars or spec.tensors or spec.pseudovectors or len(spec.vectors) == 0:
            raise ValueError(
                "backbone 'reference' supports only vector fields (problem kolmogorov or decaying)"
            )
        if tuple(state) != tuple(spec.vectors[0]):
            raise ValueError(
                "backbone 'reference' needs the first vector of the field as the state"
            )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from revit import ReViT2DConfig, build_revit_2d

            cfg = ReViT2DConfig(
                in_channels=len(order),
                out_channels=len(state),
                img_size=img_size,
                patch_size=patch,
                window_size=window,
                embed_dim=embed_dim,
                max_embed_dim=8 * embed_dim,
                depth=list(depths),
                num_heads=heads,
                drop_path_rate=0.0,
                periodic=periodic,
                embed_type="AOV-Flex",
                vector_chans=len(order),
                scalar_chans=0,
            )
            self.net = build_revit_2d(cfg)
        self.order = order
        self.state = list(state)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x[:, self.state] + self.net(x[:, self.order])
