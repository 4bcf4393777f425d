"""Group actions: rot^4 = id, O composes, the sign convention via gradients of a potential."""

import itertools

import pytest
import torch
from revit_equivariant.group import (
    R_C4,
    R_OX,
    R_OZ,
    FieldSpec,
    c4,
    equivariance_error,
    octahedral,
    octahedral_words,
    rotate,
    transform_grid,
)
from revit_equivariant.navier_stokes import spectral_gradient

VEC = FieldSpec(2, vectors=((0, 1),))


def test_c4_generator_is_torch_rot90_and_rot4_is_identity():
    x = torch.randn(2, 3, 6, 6)
    assert torch.equal(transform_grid(x, R_C4), torch.rot90(x, 1, dims=(-2, -1)))
    spec = FieldSpec(7, scalars=(0,), vectors=((1, 2),), tensors=((3, 4, 5, 6),))
    u = torch.randn(2, 7, 6, 6)
    v = u
    for _ in range(4):
        v = rotate(v, spec, 1)
    assert torch.equal(v, u)
    assert not torch.allclose(rotate(u, spec, 1), u)


def test_octahedral_group_has_24_distinct_proper_rotations_and_closes():
    elems = octahedral()
    keys = {tuple(m.flatten().tolist()) for m in elems}
    assert len(keys) == 24
    for a, b in itertools.product(elems, elems):
        assert tuple((a @ b).flatten().tolist()) in keys
    gens = {"x": torch.tensor(R_OX), "z": torch.tensor(R_OZ)}
    for word, m in octahedral_words():  # every word in the 90-degree generators is its matrix
        prod = torch.eye(3, dtype=torch.int64)
        for letter in word:
            prod = prod @ gens[letter]
        assert torch.equal(prod, m)


@pytest.mark.parametrize("k", range(4))
def test_rotating_a_potential_then_differentiating_equals_rotating_the_gradient(k):
    n = 16
    g = torch.Generator().manual_seed(k)
    phi = torch.randn(1, 1, n, n, generator=g, dtype=torch.float64)
    phi = torch.fft.irfft2(
        torch.fft.rfft2(phi) * (torch.rand(n, n // 2 + 1, generator=g) < 0.3), s=(n, n)
    )
    grad = spectral_gradient(phi[:, 0])  # (1, 2, n, n) = (d_x, d_y)
    scalar = FieldSpec(1, scalars=(0,))
    lhs = spectral_gradient(rotate(phi, scalar, k)[:, 0])
    rhs = rotate(grad, VEC, k)
    assert torch.allclose(lhs, rhs, atol=1e-12)
    if k % 2:  # the opposite sign convention is wrong: the test can fail
        wrong = rhs.clone()
        wrong[:, :] = -wrong
        assert not torch.allclose(lhs, wrong, atol=1e-3)


def test_octahedral_action_on_gradients_3d():
    n = 6
    phi = torch.randn(1, 1, n, n, n, dtype=torch.float64)

    def grad3(p):
        return torch.stack([(p.roll(-1, -1 - a) - p.roll(1, -1 - a)) / 2 for a in range(3)], 1)[
            :, :, 0
        ]

    spec_s, spec_v = FieldSpec(1, scalars=(0,)), FieldSpec(3, vectors=((0, 1, 2),))
    for r in octahedral():
        assert torch.allclose(
            grad3(rotate(phi, spec_s, r)), rotate(grad3(phi), spec_v, r), atol=1e-12
        )


def test_rank2_tensor_rotates_as_r_t_rt():
    spec = FieldSpec(4, tensors=((0, 1, 2, 3),))
    t = torch.randn(1, 4, 4, 4)
    r = c4()[1].float()
    out = rotate(t, spec, 1)
    moved = transform_grid(t, c4()[1])
    expect = (r @ moved.permute(0, 2, 3, 1).reshape(1, 4, 4, 2, 2) @ r.T).reshape(1, 4, 4, 4)
    assert torch.allclose(out.permute(0, 2, 3, 1), expect)


def test_equivariance_error_detects_a_non_equivariant_map():
    u = torch.randn(2, 2, 8, 8)
    assert equivariance_error(lambda v: v * 3, u, VEC) < 1e-7
    assert equivariance_error(lambda v: v[:, [1, 0]], u, VEC) > 0.5  # swapping components


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"n_channels": 3, "vectors": ((0, 1),)}, "covers 2 of 3"),
        ({"n_channels": 2, "vectors": ((0, 0),)}, "twice"),
        ({"n_channels": 2, "vectors": ((0, 2),)}, "outside"),
        (
            {"n_channels": 5, "vectors": ((0, 1),), "pseudovectors": ((2, 3, 4),)},
            "all be 2D or all 3D",
        ),
    ],
)
def test_bad_field_specs(kwargs, match):
    with pytest.raises(ValueError, match=match):
        FieldSpec(**kwargs)


def test_rotate_rejects_channel_mismatch_and_non_square():
    with pytest.raises(ValueError, match="channels"):
        rotate(torch.randn(1, 3, 4, 4), VEC, 1)
    with pytest.raises(ValueError, match="square"):
        rotate(torch.randn(1, 2, 4, 6), VEC, 1)


def test_rotate_angle_matches_c4_and_inverts_on_smooth_fields():
    import math

    from revit_equivariant.group import rotate_angle

    spec = FieldSpec(6, vectors=((0, 1),), tensors=((2, 3, 4, 5),))
    x = torch.randn(2, 6, 12, 12, dtype=torch.float64)
    for k in (1, 2, 3):
        torch.testing.assert_close(rotate_angle(x, spec, -k * math.pi / 2), rotate(x, spec, k))
    n = 32
    g = torch.arange(n, dtype=torch.float64) * 2 * math.pi / n
    sx, cy = torch.sin(g)[None, :], torch.cos(g)[:, None]
    smooth = torch.stack([sx * cy, cy.expand(n, n)])[None]
    vec = FieldSpec(2, vectors=((0, 1),))
    back = rotate_angle(rotate_angle(smooth, vec, 0.4), vec, -0.4)
    idx = torch.arange(n) - (n - 1) / 2
    disk = (idx[:, None] ** 2 + idx[None, :] ** 2) <= (0.3 * n) ** 2
    assert float((back - smooth)[..., disk].abs().max()) < 0.05  # interpolation only
    with pytest.raises(ValueError, match="square 2D"):
        rotate_angle(torch.randn(1, 2, 8, 12), vec, 0.1)


def test_so2_error_is_exact_at_c4_angles_and_approximate_between():
    import math

    from revit_equivariant.group import so2_equivariance_error
    from revit_equivariant.transformer import ReViT2d

    spec = FieldSpec(2, vectors=((0, 1),))
    torch.manual_seed(0)
    net = ReViT2d(spec, (0, 1), patch=2, window=2, embed_dim=8, depths=(1, 1, 1)).eval()
    x = torch.randn(1, 2, 16, 16)
    assert so2_equivariance_error(net, x, spec, -math.pi / 2, net.out_spec) < 1e-5
    off = so2_equivariance_error(net, x, spec, math.pi / 4, net.out_spec)
    assert 1e-4 < off < 10  # finite, and not exact off the 90-degree multiples
