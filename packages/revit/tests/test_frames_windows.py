"""Frames co-rotate, tokens permute, shifted windows are invariant only for shift = w/2."""

import pytest
import torch
from revit_equivariant.frames import FramePyramid, frame_references, frames_from_references
from revit_equivariant.group import FieldSpec, c4, octahedral, rotate, transform_grid
from revit_equivariant.transformer import FrameEmbedding, ReViT2d
from revit_equivariant.windows import window_sets

VEC = FieldSpec(2, vectors=((0, 1),))


def _tokens_rot(t, r):
    """Rotate a channel-last token grid (B, *grid, C) spatially."""
    return transform_grid(t.movedim(-1, 1), r).movedim(1, -1)


@pytest.mark.parametrize("method", ["aov", "boa"])
def test_2d_frames_corotate(method):
    u = torch.randn(2, 2, 16, 16, dtype=torch.float64)
    pyr = FramePyramid.build(u, VEC, 2, 3, method, 2)
    for r in c4():
        rot = FramePyramid.build(rotate(u, VEC, r), VEC, 2, 3, method, 2)
        rd = r.double()
        for f, fr in zip(pyr.frames, rot.frames, strict=True):
            expect = rd @ _tokens_rot(f.flatten(-2), r).unflatten(-1, (2, 2))
            assert torch.allclose(fr, expect, atol=1e-12)
        assert torch.allclose(torch.det(f), torch.ones(()).double())


def test_grad_frame_for_scalar_fields_corotates():
    spec = FieldSpec(1, scalars=(0,))
    s = torch.randn(1, 1, 8, 8, dtype=torch.float64)
    f = FramePyramid.build(s, spec, 2, 1, "grad", 2).frames[0]
    r = c4()[1]
    fr = FramePyramid.build(rotate(s, spec, r), spec, 2, 1, "grad", 2).frames[0]
    assert torch.allclose(
        fr, r.double() @ _tokens_rot(f.flatten(-2), r).unflatten(-1, (2, 2)), atol=1e-12
    )


def test_3d_frames_corotate_over_o():
    spec = FieldSpec(3, vectors=((0, 1, 2),))
    u = torch.randn(1, 3, 8, 8, 8, dtype=torch.float64)
    f = FramePyramid.build(u, spec, 2, 2, "aovc", 3).frames
    for r in octahedral():
        fr = FramePyramid.build(rotate(u, spec, r), spec, 2, 2, "aovc", 3).frames
        for a, b in zip(f, fr, strict=True):
            expect = r.double() @ _tokens_rot(a.flatten(-2), r).unflatten(-1, (3, 3))
            assert torch.allclose(b, expect, atol=1e-12)


def test_degenerate_frames_fall_back_to_identity_and_are_counted():
    u = torch.zeros(1, 2, 8, 8)
    u[:, :, :2, :2] = 1.0  # one non-zero patch
    refs = frame_references(u, VEC, 2, "aov", 2)
    frames, bad = frames_from_references(refs, "aov", 2)
    assert bad == 15
    assert torch.equal(frames[0, 1, 1], torch.eye(2))


def test_scalar_only_field_with_vector_frame_method_is_rejected():
    spec = FieldSpec(1, scalars=(0,))
    with pytest.raises(ValueError, match="scalar-only"):
        ReViT2d(spec, (0,), window=2, frame_method="aov")
    with pytest.raises(ValueError, match="needs a vector field"):
        frame_references(torch.randn(1, 1, 4, 4), spec, 2, "aov", 2)


def test_tokens_permute_under_rotation():
    torch.manual_seed(0)
    emb = FrameEmbedding(VEC, patch=2, dim=2, embed_dim=8).double()
    u = torch.randn(1, 2, 8, 8, dtype=torch.float64)
    f = FramePyramid.build(u, VEC, 2, 1, "aov", 2).frames[0]
    t = emb(u, f)
    for r in c4():
        ur = rotate(u, VEC, r)
        tr = emb(ur, FramePyramid.build(ur, VEC, 2, 1, "aov", 2).frames[0])
        assert torch.allclose(tr, _tokens_rot(t, r), atol=1e-12)


@pytest.mark.parametrize("dim", [2, 3])
@pytest.mark.parametrize("periodic_shift", [0, 2])
def test_window_sets_are_rotation_invariant_for_half_shift(dim, periodic_shift):
    n, w = 8, 4
    ids = torch.arange(n**dim).reshape(*([n] * dim))
    base = window_sets(n, w, periodic_shift, dim)
    elems = c4() if dim == 2 else octahedral()
    for r in elems:
        rotated_ids = transform_grid(ids, r)
        assert window_sets(n, w, periodic_shift, dim, rotated_ids) == base


@pytest.mark.parametrize("shift", [1, 3])
def test_window_sets_break_for_other_shifts(shift):
    n, w = 8, 4
    ids = torch.arange(n * n).reshape(n, n)
    base = window_sets(n, w, shift)
    rotated = window_sets(n, w, shift, grid_ids=transform_grid(ids, c4()[1]))
    assert rotated != base
