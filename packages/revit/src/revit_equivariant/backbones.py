"""The emulator backbones, built for a problem's field spec: :func:`build_backbone`.

``revit`` (ReViT, :class:`~revit_equivariant.transformer.ReViT2d` / ``ReViT3d``), ``swin``
(the same backbone with ``equivariant=False``), ``unet``, ``fno`` (``neuraloperator``'s FNO
when installed, else the re-implementation with a warning), ``fno-own`` (always the
re-implementation), ``reference`` (the authors' ``revit-pde``).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Literal

import torch

from .fno import FNO2d, NeuralOperatorFNO2d, neuraloperator_version
from .pde_data import ProblemSpec, problem_spec
from .transformer import ReViT2d, ReViT3d
from .unet import UNet2d

Backbone = Literal["revit", "swin", "unet", "fno", "fno-own", "reference"]


def build_backbone(
    backbone: str,
    problem: str | ProblemSpec,
    patch: int = 2,
    window: int = 4,
    embed_dim: int = 24,
    heads: int = 2,
    depths: Sequence[int] = (2, 2, 2),
    frame_method: str = "aov",
    periodic: bool = True,
    width: int = 16,
    modes: int = 8,
    img_size: int = 32,
    drop_path: float = 0.0,
    pooling: str = "mean",
) -> torch.nn.Module:
    """Build one of the emulator backbones for a problem's field spec (3D: revit / swin only).

    ``problem`` is a problem name or, for one's own fields, their
    :class:`~revit_equivariant.pde_data.ProblemSpec`. A field without any vector takes its
    frames from the scalar gradient (``grad``) whatever ``frame_method`` says (2D only).
    """
    ps = problem if isinstance(problem, ProblemSpec) else problem_spec(problem)
    if not ps.spec.all_vectors and frame_method in ("aov", "aovc", "boa"):
        if ps.spec.dim == 3 and backbone == "revit":
            raise ValueError(
                "a 3D field without any vector has no ReViT frame (aovc needs a velocity); "
                "declare a vector field or use --model.backbone swin"
            )
        frame_method = "grad"
    if ps.spec.dim == 3:
        if backbone not in ("revit", "swin"):
            raise ValueError(f"backbone {backbone!r} is 2D only; a 3D problem takes revit or swin")
        return ReViT3d(
            ps.spec,
            ps.state,
            patch=patch,
            window=window,
            embed_dim=embed_dim,
            heads=heads,
            depths=tuple(depths),
            frame_method="aovc" if frame_method == "aov" else frame_method,
            equivariant=backbone == "revit",
            periodic=periodic,
            drop_path=drop_path,
            pooling=pooling,
        )
    if backbone in ("revit", "swin"):
        return ReViT2d(
            ps.spec,
            ps.state,
            patch=patch,
            window=window,
            embed_dim=embed_dim,
            heads=heads,
            depths=tuple(depths),
            frame_method=frame_method,
            equivariant=backbone == "revit",
            periodic=periodic,
            drop_path=drop_path,
            pooling=pooling,
        )
    if backbone == "unet":
        return UNet2d(ps.spec.n_channels, ps.state, width=width)
    if backbone == "fno" and neuraloperator_version() is not None:
        return NeuralOperatorFNO2d(ps.spec.n_channels, ps.state, width=width, modes=modes)
    if backbone == "fno":
        warnings.warn(
            "neuraloperator is not installed: backbone fno uses the re-implementation FNO2d "
            "(pip install 'revit-equivariant[bench]' for the anchor)",
            stacklevel=2,
        )
    if backbone in ("fno", "fno-own"):
        return FNO2d(ps.spec.n_channels, ps.state, width=width, modes=modes)
    if backbone == "reference":
        from .reference_model import ReferenceReViT2d

        return ReferenceReViT2d(
            ps.spec,
            ps.state,
            img_size=img_size,
            patch=patch,
            window=window,
            embed_dim=embed_dim,
            heads=heads,
            depths=tuple(depths),
            periodic=periodic,
        )
    raise ValueError(
        f"unknown backbone {backbone!r}; choose revit, swin, unet, fno, fno-own or reference"
    )
