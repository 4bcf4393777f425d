"""Per-patch canonical frames and the reference-basis pyramid (ReViT Sec. 3.1 and 3.5).

Every frame ``B_i`` is an orthonormal, right-handed basis (``B_i in SO(d)``, columns
``b_1..b_d``) computed deterministically from the *input* field and detached from the
graph. Because the C4 / O actions map the patch grid onto itself, patch means co-rotate and
``B_{g.i}(L_g u) = R_g B_i(u)``; features rebased as ``B_i^T v`` are then invariant.

Map of the paper's frame constructions to functions:

* patch means ``ubar_i`` and the references of each method: :func:`frame_references`
  (``aov``: mean velocity; ``boa``: mean velocity + patch-averaged strain rate
  ``S = (grad u + grad u^T)/2``; ``grad``: patch-mean scalar gradient for scalar-only
  inputs; ``aovc`` (3D): mean velocity and mean vorticity);
* references -> frames, with the fallback to the identity when a frame is degenerate and a
  counter of how often that happened: :func:`frames_from_references`;
* the pyramid ``ubar^(l+1) = AvgPool_2(ubar^(l))`` with frames recomputed per level
  (learned features never enter a frame): :class:`FramePyramid`;
* rebase / unbase ``v_loc = B^T v``, ``v = B v_loc``: :func:`rebase`, :func:`unbase`.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .group import FieldSpec

FRAME_METHODS = ("aov", "boa", "grad", "aovc")
#: |reference| below this makes a frame degenerate; the identity is used there (not equivariant)
DEGENERATE = 1e-7


def rebase(b: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """``B^T v`` for frames ``(..., d, d)`` and vectors ``(..., d)``."""
    return torch.einsum("...ji,...j->...i", b, v)


def unbase(b: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """``B v`` for frames ``(..., d, d)`` and vectors ``(..., d)``."""
    return torch.einsum("...ij,...j->...i", b, v)


def central_gradient(s: torch.Tensor, dim: int) -> torch.Tensor:
    """Periodic central differences of ``s`` (``(B, *grid)``) along every coordinate.

    Returns ``(B, *grid, d)`` with component ``a`` the derivative along coordinate ``a``
    (x along the last axis). The stencil is reflection symmetric, so it commutes with the
    group action exactly (up to rounding).
    """
    comps = []
    for a in range(dim):
        ax = s.ndim - 1 - a
        comps.append((s.roll(-1, ax) - s.roll(1, ax)) / 2)
    return torch.stack(comps, -1)


def patch_mean(x: torch.Tensor, patch: int, dim: int) -> torch.Tensor:
    """Average channel-last ``(B, *grid, F)`` over non-overlapping ``patch^d`` blocks."""
    b = x.shape[0]
    grid = x.shape[1 : 1 + dim]
    shape = [b]
    for n in grid:
        shape += [n // patch, patch]
    y = x.reshape(*shape, -1)
    return y.mean(dim=tuple(2 + 2 * k for k in range(dim)))


def frame_references(
    x: torch.Tensor, spec: FieldSpec, patch: int, method: str, dim: int
) -> dict[str, torch.Tensor]:
    """Patch-averaged reference fields ``(B, *tokens, ...)`` that define each patch's frame."""
    if method not in FRAME_METHODS:
        raise ValueError(f"unknown frame method {method!r}; choose from {FRAME_METHODS}")
    if method in {"aov", "boa", "aovc"} and not spec.all_vectors:
        raise ValueError(
            f"frame method {method!r} needs a vector field; a scalar-only field needs "
            "frame_method='grad'"
        )
    if method == "grad" and not spec.scalars:
        raise ValueError("frame method 'grad' needs a scalar field")
    if method == "aovc" and dim != 3:
        raise ValueError("frame method 'aovc' is 3D only")
    if method in {"aov", "boa"} and dim != 2:
        raise ValueError(f"frame method {method!r} is 2D only (use 'aovc' in 3D)")
    refs: dict[str, torch.Tensor] = {}
    with torch.no_grad():
        if method == "grad":
            s = x[:, spec.scalars[0]]
            refs["primary"] = patch_mean(central_gradient(s, dim), patch, dim)
            return refs
        u = x[:, list(spec.all_vectors[0])].movedim(1, -1)  # (B, *grid, d)
        refs["primary"] = patch_mean(u, patch, dim)
        if method == "boa":
            grads = torch.stack([central_gradient(u[..., a], dim) for a in range(dim)], -2)
            strain = 0.5 * (grads + grads.transpose(-1, -2))  # (B, *grid, d, d): d u_a / d x_b
            refs["strain"] = patch_mean(strain.flatten(-2), patch, dim)
        if method == "aovc":
            g = torch.stack([central_gradient(u[..., a], dim) for a in range(3)], -2)
            curl = torch.stack(
                [
                    g[..., 2, 1] - g[..., 1, 2],
                    g[..., 0, 2] - g[..., 2, 0],
                    g[..., 1, 0] - g[..., 0, 1],
                ],
                -1,
            )
            refs["secondary"] = patch_mean(curl, patch, dim)
    return refs


def _perp(b1: torch.Tensor) -> torch.Tensor:
    """``b1`` rotated by +90 degrees in the (x, y) plane."""
    return torch.stack([-b1[..., 1], b1[..., 0]], -1)


def frames_from_references(
    refs: dict[str, torch.Tensor], method: str, dim: int
) -> tuple[torch.Tensor, int]:
    """Frames ``(B, *tokens, d, d)`` (columns = basis vectors) and the fallback count."""
    ref = refs["primary"]
    norm = ref.norm(dim=-1, keepdim=True)
    bad = norm[..., 0] < DEGENERATE
    b1 = ref / norm.clamp_min(DEGENERATE)
    if method == "boa":
        s = refs["strain"].reshape(*ref.shape[:-1], 2, 2)
        theta = 0.5 * torch.atan2(2 * s[..., 0, 1], s[..., 0, 0] - s[..., 1, 1])
        e1 = torch.stack([theta.cos(), theta.sin()], -1)
        e2 = _perp(e1)
        p1 = (e1 * ref).sum(-1)
        p2 = (e2 * ref).sum(-1)
        pick = (p1.abs() >= p2.abs()).unsqueeze(-1)
        v = torch.where(pick, e1, e2)
        sign = torch.where((v * ref).sum(-1, keepdim=True) < 0, -1.0, 1.0).to(v.dtype)
        b1 = v * sign
        bad = bad | (p1.abs() - p2.abs()).abs().lt(DEGENERATE)
    if dim == 2:
        basis = torch.stack([b1, _perp(b1)], -1)
    else:
        sec = refs["secondary"]
        w = sec - (sec * b1).sum(-1, keepdim=True) * b1
        wn = w.norm(dim=-1, keepdim=True)
        bad = bad | (wn[..., 0] < DEGENERATE)
        b2 = w / wn.clamp_min(DEGENERATE)
        b3 = torch.linalg.cross(b1, b2, dim=-1)
        basis = torch.stack([b1, b2, b3], -1)
    eye = torch.eye(dim, dtype=basis.dtype, device=basis.device)
    basis = torch.where(bad[..., None, None], eye, basis)
    return basis.detach(), int(bad.sum())


def pool_references(refs: dict[str, torch.Tensor], dim: int) -> dict[str, torch.Tensor]:
    """``AvgPool_2`` of every reference field (one level up the pyramid)."""
    return {k: patch_mean(v, 2, dim) for k, v in refs.items()}


@dataclass
class FramePyramid:
    """Frames of every level of the hierarchy, built once per forward pass.

    ``frames[l]`` has shape ``(B, *tokens_l, d, d)``; level 0 is the patch level. With
    ``method=None`` every frame is the identity (the non-equivariant Swin baseline).

    Examples
    --------
    >>> from revit_equivariant.group import FieldSpec, rotate
    >>> spec = FieldSpec(2, vectors=((0, 1),))
    >>> u = torch.randn(1, 2, 8, 8, dtype=torch.float64)
    >>> p = FramePyramid.build(u, spec, patch=2, levels=2, method="aov", dim=2)
    >>> [tuple(f.shape) for f in p.frames]
    [(1, 4, 4, 2, 2), (1, 2, 2, 2, 2)]
    """

    frames: list[torch.Tensor]
    fallbacks: int = 0

    @classmethod
    def build(
        cls,
        x: torch.Tensor,
        spec: FieldSpec,
        patch: int,
        levels: int,
        method: str | None,
        dim: int,
    ) -> FramePyramid:
        b = x.shape[0]
        grid = [n // patch for n in x.shape[2:]]
        if method is None:
            frames = []
            for level in range(levels):
                shape = [b, *(n // 2**level for n in grid), dim, dim]
                eye = torch.eye(dim, dtype=x.dtype, device=x.device)
                frames.append(eye.expand(*shape).contiguous())
            return cls(frames, 0)
        refs = frame_references(x, spec, patch, method, dim)
        frames, total = [], 0
        for level in range(levels):
            if level:
                refs = pool_references(refs, dim)
            f, n_bad = frames_from_references(refs, method, dim)
            frames.append(f)
            total += n_bad
        return cls(frames, total)
