"""The whole network: exact C4 / O equivariance (random init and after training), bad input."""

import pytest
import torch
from revit_equivariant.group import FieldSpec, equivariance_error
from revit_equivariant.transformer import ReViT2d, ReViT3d

SMALL = {"patch": 2, "window": 2, "embed_dim": 8, "heads": 2, "depths": (1, 1, 1)}

SPECS_2D = {
    "vector": (FieldSpec(2, vectors=((0, 1),)), (0, 1)),
    "vector+scalar": (FieldSpec(3, scalars=(2,), vectors=((0, 1),)), (0, 1, 2)),
    "two-vector": (FieldSpec(4, vectors=((0, 1), (2, 3))), (0, 1)),
    "tensor": (FieldSpec(6, vectors=((0, 1),), tensors=((2, 3, 4, 5),)), (0, 1, 2, 3, 4, 5)),
}


@pytest.mark.parametrize("fields", list(SPECS_2D))
@pytest.mark.parametrize("periodic", [True, False])
def test_revit2d_is_c4_equivariant_and_swin_is_not(fields, periodic):
    spec, state = SPECS_2D[fields]
    torch.manual_seed(0)
    x = torch.randn(2, spec.n_channels, 16, 16)
    net = ReViT2d(spec, state, periodic=periodic, **SMALL)
    assert equivariance_error(net, x, spec, "c4", net.out_spec) < 1e-5
    torch.manual_seed(0)
    swin = ReViT2d(spec, state, periodic=periodic, equivariant=False, **SMALL)
    assert equivariance_error(swin, x, spec, "c4", swin.out_spec) > 1e-3


def test_boa_frames_and_deeper_net_are_equivariant():
    spec, state = SPECS_2D["two-vector"]
    torch.manual_seed(1)
    net = ReViT2d(
        spec, state, patch=2, window=2, embed_dim=12, depths=(1, 1, 1, 1, 1), frame_method="boa"
    )
    x = torch.randn(1, 4, 16, 16)
    assert equivariance_error(net, x, spec, "c4", net.out_spec) < 1e-5


def test_scalar_only_with_gradient_frame_is_equivariant():
    spec = FieldSpec(1, scalars=(0,))
    torch.manual_seed(2)
    net = ReViT2d(spec, (0,), frame_method="grad", **SMALL)
    x = torch.randn(2, 1, 16, 16)
    assert equivariance_error(net, x, spec, "c4", net.out_spec) < 1e-5


@pytest.mark.parametrize("fields", list(SPECS_2D))
def test_equivariance_survives_training_steps(fields):
    spec, state = SPECS_2D[fields]
    torch.manual_seed(0)
    net = ReViT2d(spec, state, **SMALL)
    opt = torch.optim.Adam(net.parameters(), lr=1e-2)
    x, y = torch.randn(4, spec.n_channels, 16, 16), torch.randn(4, len(state), 16, 16)
    for _ in range(3):
        opt.zero_grad()
        (net(x) - y).pow(2).mean().backward()
        opt.step()
    assert equivariance_error(net, x[:2], spec, "c4", net.out_spec) < 1e-5


@pytest.mark.parametrize(
    "spec,state",
    [
        (FieldSpec(3, vectors=((0, 1, 2),)), (0, 1, 2)),
        (FieldSpec(4, scalars=(3,), vectors=((0, 1, 2),)), (0, 1, 2, 3)),
        (FieldSpec(6, vectors=((0, 1, 2),), pseudovectors=((3, 4, 5),)), (0, 1, 2)),
        (FieldSpec(12, vectors=((0, 1, 2),), tensors=(tuple(range(3, 12)),)), tuple(range(12))),
    ],
    ids=["vector", "vector+scalar", "two-vector", "tensor"],
)
def test_revit3d_is_equivariant_over_all_24_elements_of_o(spec, state):
    torch.manual_seed(0)
    x = torch.randn(1, spec.n_channels, 8, 8, 8)
    net = ReViT3d(spec, state, patch=2, window=2, embed_dim=6, heads=2, depths=(1, 1, 1))
    assert equivariance_error(net, x, spec, "o", net.out_spec) < 1e-5
    torch.manual_seed(0)
    swin = ReViT3d(
        spec, state, patch=2, window=2, embed_dim=6, heads=2, depths=(1, 1, 1), equivariant=False
    )
    assert equivariance_error(swin, x, spec, "o", swin.out_spec) > 1e-3


def test_revit3d_stays_equivariant_over_o_after_training_steps():
    spec = FieldSpec(4, scalars=(3,), vectors=((0, 1, 2),))
    torch.manual_seed(0)
    net = ReViT3d(spec, (0, 1, 2), patch=2, window=2, embed_dim=6, heads=2, depths=(1, 1, 1))
    opt = torch.optim.Adam(net.parameters(), lr=1e-2)
    x, y = torch.randn(2, 4, 8, 8, 8), torch.randn(2, 3, 8, 8, 8)
    for _ in range(3):
        opt.zero_grad()
        (net(x) - y).pow(2).mean().backward()
        opt.step()
    assert equivariance_error(net, x[:1], spec, "o", net.out_spec) < 1e-5


VEC = FieldSpec(2, vectors=((0, 1),))


@pytest.mark.parametrize(
    ("x", "match"),
    [
        (torch.randn(1, 2, 16, 32), "square"),
        (torch.randn(1, 2, 20, 20), "not divisible"),
        (torch.randn(1, 3, 16, 16), "channels"),
        (torch.randn(2, 16, 16), "4 dims"),
        (torch.full((1, 2, 16, 16), float("nan")), "NaN"),
        (torch.ones(1, 2, 16, 16, dtype=torch.int64), "floating"),
        (torch.randn(1, 2, 4, 4), "larger than"),
    ],
    ids=["non-square", "indivisible", "channels", "ndim", "nan", "int", "window>grid"],
)
def test_bad_inputs_raise_one_clear_error(x, match):
    net = ReViT2d(VEC, (0, 1), **SMALL)
    with pytest.raises(ValueError, match=match):
        net(x)


def test_bad_constructor_arguments():
    with pytest.raises(ValueError, match="even"):
        ReViT2d(VEC, (0, 1), window=3)
    with pytest.raises(ValueError, match="split"):
        ReViT2d(FieldSpec(2, vectors=((0, 1),)), (0,), window=2)
    swin = ReViT2d(VEC, (0, 1), equivariant=False, **SMALL)
    assert swin(torch.randn(1, 2, 16, 32)).shape == (1, 2, 16, 32)  # non-square is fine here


def test_drop_path_keeps_exact_equivariance_and_drops_branches():
    """Issue #39: drop-path is a per-sample scalar on a residual branch, so with the same
    random draws Phi(L_g u) = L_g Phi(u) still holds in training mode; it is off in eval."""
    from revit_equivariant.group import FieldSpec, rotate
    from revit_equivariant.transformer import ReViT2d

    spec = FieldSpec(2, vectors=((0, 1),))
    torch.manual_seed(0)
    net = ReViT2d(spec, (0, 1), window=2, embed_dim=8, depths=(1, 1, 1), drop_path=0.5).double()
    u = torch.randn(4, 2, 8, 8, dtype=torch.float64)
    net.train()
    torch.manual_seed(1)
    a = net(rotate(u, spec, 1))
    torch.manual_seed(1)
    b = rotate(net(u), net.out_spec, 1)
    assert float((a - b).abs().max()) < 1e-12
    torch.manual_seed(2)
    c = net(u)
    assert float((c - net(u)).abs().max()) > 1e-6  # training mode: random branches dropped
    net.eval()
    assert torch.equal(net(u), net(u))  # eval: deterministic, nothing dropped
    with pytest.raises(ValueError, match="drop_path"):
        ReViT2d(spec, (0, 1), window=2, embed_dim=8, depths=(1, 1, 1), drop_path=1.0)


@pytest.mark.parametrize("fields", ["two-vector", "tensor"])
def test_attention_pooling_keeps_exact_equivariance(fields):
    """Issue #39: the attention-pooled patch embedding (softmax weights from the invariant
    pixel features) is a permutation-invariant weighted mean, so C4 stays exact; the pooling
    changes the output (it is not the mean in disguise)."""
    spec, state = SPECS_2D[fields]
    torch.manual_seed(0)
    x = torch.randn(2, spec.n_channels, 16, 16, dtype=torch.float64)
    net = ReViT2d(spec, state, pooling="attention", **SMALL).double()
    assert equivariance_error(net, x, spec, "c4", net.out_spec) < 1e-12
    torch.manual_seed(0)
    mean = ReViT2d(spec, state, pooling="mean", **SMALL).double()
    missing, unexpected = mean.load_state_dict(net.state_dict(), strict=False)
    assert not missing and all(k.startswith("embed.score") for k in unexpected)
    assert float((mean(x) - net(x)).abs().max()) > 1e-6
    with pytest.raises(ValueError, match="pooling"):
        ReViT2d(spec, state, pooling="max", **SMALL)


def test_attention_pooling_3d_is_o_equivariant():
    spec = FieldSpec(3, vectors=((0, 1, 2),))
    torch.manual_seed(0)
    net = ReViT3d(spec, (0, 1, 2), window=2, embed_dim=6, depths=(1,), pooling="attention")
    x = torch.randn(1, 3, 4, 4, 4, dtype=torch.float64)
    assert equivariance_error(net.double(), x, spec, "o", net.out_spec) < 1e-12


def test_revit_with_identity_frames_is_the_swin_baseline_up_to_the_patch_embedding():
    """Issue #39 bug check: the Swin row is "the same backbone". With every frame replaced by
    the identity, ReViT equals the Swin built by ``equivariant=False`` carrying the same
    weights, once the Swin's linear patch embedding is swapped for ReViT's invariant one: the
    position bias, merges, expands, blocks and decoder are shared code and weights, and the
    frames (and the patch embedding) are the only differences between the two rows."""
    spec, state = SPECS_2D["two-vector"]
    torch.manual_seed(0)
    net = ReViT2d(spec, state, **SMALL).double()
    swin = ReViT2d(spec, state, equivariant=False, **SMALL).double()
    body = {k: v for k, v in net.state_dict().items() if not k.startswith("embed.")}
    missing, unexpected = swin.load_state_dict(body, strict=False)
    assert all(k.startswith("embed.") for k in missing) and not unexpected
    swin.embed = net.embed
    x = torch.randn(2, 4, 16, 16, dtype=torch.float64)
    net.equivariant = False  # frames -> identity (FramePyramid method None), embedding kept
    assert torch.allclose(net(x), swin(x), atol=1e-12)
    net.equivariant = True
    assert float((net(x) - swin(x)).abs().max()) > 1e-6  # the real frames do change it
