"""Projector algebra (float64), reparameterisation invariance and gradients through the QR."""

import pytest
import torch
from opl_vad.projection import GuidedOrthogonalProjection, OrthogonalProjection

F64 = torch.float64


@pytest.fixture(params=["opl", "gopl"])
def layer(request):
    torch.manual_seed(0)
    if request.param == "opl":
        return OrthogonalProjection(12, 3, seed=1).double()
    return GuidedOrthogonalProjection(12, 3, 2, seed=1).double()


def test_projector_algebra(layer):
    P, Q = layer.projector(), layer.basis()
    torch.testing.assert_close(P @ P, P)
    torch.testing.assert_close(P.T, P)
    torch.testing.assert_close(P @ Q, torch.zeros_like(Q), atol=1e-12, rtol=0)
    torch.testing.assert_close(Q.T @ Q, torch.eye(Q.shape[1], dtype=F64))
    assert float(torch.trace(P)) == pytest.approx(12 - layer.rank)
    x = torch.randn(7, 5, 12, dtype=F64)  # (B, T, D)
    out = layer(x)
    assert out.z.shape == (7, 5, 12) and out.coeffs.shape == (7, 5, layer.rank)
    torch.testing.assert_close(out.z, x @ P)
    torch.testing.assert_close((out.z * out.removed).sum(-1), torch.zeros(7, 5, dtype=F64),
                               atol=1e-12, rtol=0)  # fmt: skip
    torch.testing.assert_close((out.z**2).sum(-1) + (out.removed**2).sum(-1), (x**2).sum(-1))
    torch.testing.assert_close(out.z + out.removed, x)


def test_invariant_to_reparameterising_the_free_matrix(layer):
    x = torch.randn(4, 12, dtype=F64)
    before = layer(x).z
    with torch.no_grad():
        R = torch.randn(layer.rank, layer.rank, dtype=F64) + 3 * torch.eye(layer.rank, dtype=F64)
        if isinstance(layer, GuidedOrthogonalProjection):
            R = torch.triu(R)  # keeps span of the task block, so both blocks are unchanged
        layer.W.copy_(layer.W @ R)
    torch.testing.assert_close(layer(x).z, before)


def test_gradcheck_through_qr():
    layer = OrthogonalProjection(6, 2, seed=0).double()
    x = torch.randn(3, 6, dtype=F64)

    def f(W):
        Q, _ = torch.linalg.qr(W)
        return x - (x @ Q) @ Q.T

    assert torch.autograd.gradcheck(f, (layer.W.detach().clone().requires_grad_(True),))


def test_guided_blocks_are_orthogonal_and_face_part_adds_up():
    layer = GuidedOrthogonalProjection(10, 3, 2, seed=4).double()
    Qt, Qf = layer.bases()
    torch.testing.assert_close(Qt.T @ Qf, torch.zeros(3, 2, dtype=F64), atol=1e-12, rtol=0)
    x = torch.randn(5, 10, dtype=F64)
    out = layer(x)
    torch.testing.assert_close(out.face_removed, x @ Qf @ Qf.T)
    torch.testing.assert_close(out.face_coeffs, x @ Qf)


@pytest.mark.parametrize("args", [(8, 8), (8, 0), (8, 9)])
def test_bad_rank(args):
    with pytest.raises(ValueError, match="rank"):
        OrthogonalProjection(*args)


def test_bad_guided_ranks_and_dimension():
    with pytest.raises(ValueError, match="rank_task"):
        GuidedOrthogonalProjection(8, 5, 3)
    with pytest.raises(ValueError, match="does not match"):
        OrthogonalProjection(8, 2)(torch.randn(3, 7))


def test_drop_in_in_front_of_any_head():
    """The projection is a drop-in module: an arbitrary head behind it sees (..., D) features
    with the removed subspace gone, and the head's loss trains the subspace."""
    from opl_vad.projection import ProjectedHead

    torch.manual_seed(0)
    layer = GuidedOrthogonalProjection(10, 2, 2, seed=0).double()
    seen = {}

    class AnyHead(torch.nn.Module):
        def forward(self, z):
            seen["z"] = z
            return z.sum(-1)

    model = ProjectedHead(layer, AnyHead())
    x = torch.randn(3, 4, 10, dtype=F64)
    scores, out = model.forward_all(x)
    assert scores.shape == (3, 4) and seen["z"].shape == x.shape
    torch.testing.assert_close(seen["z"] @ layer.basis(), torch.zeros(3, 4, 4, dtype=F64),
                               atol=1e-12, rtol=0)  # fmt: skip
    scores.pow(2).sum().backward()
    assert layer.W.grad is not None and float(layer.W.grad.abs().sum()) > 0
