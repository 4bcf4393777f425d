"""Closed-form residual: vs tensor quadrature (d = 2, 3), vs brute force (d = 5), gradients, MC, gauge."""

import math

import pytest
import torch
from lorfs.basis import FourierAxis
from lorfs.fourier_sum import LowRankFourierSum
from lorfs.operators import Const, D, Laplacian
from lorfs.residual import (
    Piece,
    brute_force_norm2,
    mc_norm2,
    piece_norm2,
    quadrature_residual_l2,
)


def _axes(d, kinds=None, modes=3):
    kinds = kinds or ["periodic"] * d
    out = []
    for j, k in enumerate(kinds):
        dom = (0.0, 2 * math.pi) if k == "periodic" else (0.0, 1.0)
        out.append(FourierAxis(f"x{j}", dom, modes, kind=k))
    return out


def _grid_norm(u, op, axes, n=60):
    """||Re(L u)||^2 (normalised measure) by brute-force Gauss-Legendre / trapezoid tensor grid."""
    import numpy as np

    coords, weights = [], []
    for ax in axes:
        if ax.kind == "periodic":
            s = ax.a + ax.length * torch.arange(n, dtype=torch.float64) / n
            w = torch.full((n,), 1.0 / n, dtype=torch.float64)
        else:
            x, w = np.polynomial.legendre.leggauss(n)
            s = torch.tensor(ax.a + 0.5 * ax.length * (x + 1))
            w = torch.tensor(w / 2)
        coords.append(s)
        weights.append(w)
    mesh = torch.stack(torch.meshgrid(*coords, indexing="ij"), -1).reshape(-1, len(axes))
    pts = mesh.clone().requires_grad_(True)
    vals = u(pts)
    res = op.constant * vals
    g = torch.autograd.grad(vals.sum(), pts, create_graph=True)[0]
    for j, orders in op.derivatives.items():
        for m, c in orders.items():
            if m == 1:
                res = res + c * g[:, j]
            else:
                g2 = torch.autograd.grad(g[:, j].sum(), pts, retain_graph=True)[0]
                res = res + c * g2[:, j]
    w = weights[0]
    for wj in weights[1:]:
        w = (w[:, None] * wj[None, :]).reshape(-1)
    return float((w * res.detach() ** 2).sum())


@pytest.mark.parametrize(
    "kinds, op",
    [
        (["extension", "periodic"], D(0) + D(1, 1, 7.0)),
        (["periodic", "periodic", "periodic"], Laplacian(range(3), -1.0) + Const(0.5)),
        (["extension", "periodic", "periodic"], D(0) - Laplacian([1, 2], 0.3)),
    ],
)
def test_closed_form_matches_tensor_quadrature(kinds, op):
    axes = _axes(len(kinds), kinds)
    u = LowRankFourierSum(axes, rank=3, init_scale=0.5, seed=2)
    s = u.as_sum()
    closed = float(piece_norm2(Piece([(s, op)], ["integral"] * len(axes)), real=True).detach())
    exact_rule = float(quadrature_residual_l2(s, op).detach())
    brute = _grid_norm(u, op, axes, n=60 if len(axes) == 2 else 36)
    assert closed == pytest.approx(exact_rule, rel=1e-10)
    assert closed == pytest.approx(brute, rel=1e-9)


def test_recursion_equals_brute_force_enumeration_d5():
    axes = _axes(5, ["extension"] + ["periodic"] * 4, modes=2)
    s = LowRankFourierSum(axes, rank=3, init_scale=0.7, seed=3).as_sum()
    t = LowRankFourierSum(axes, rank=2, init_scale=0.7, seed=4).as_sum()
    op = D(0) + Laplacian(range(1, 5), -0.4) + D(2, 1, 3.0) + Const(1.5)
    piece = Piece([(s, op), (t, Const(-2.0) + D(1, 2, 1.0))], ["integral"] * 5)
    assert float(piece_norm2(piece).detach()) == pytest.approx(
        float(brute_force_norm2(piece).detach()), rel=1e-11
    )


def test_point_measure_is_the_initial_condition_norm():
    axes = _axes(2, ["extension", "periodic"])
    u = LowRankFourierSum(axes, rank=2, init_scale=0.5, seed=5)
    s = u.as_sum()
    piece = Piece([(s, Const(1.0))], [("point", 0.0), "integral"])
    x = 2 * math.pi * torch.arange(64, dtype=torch.float64) / 64
    pts = torch.stack([torch.zeros_like(x), x], 1)
    direct = float((s.evaluate_complex(pts).abs() ** 2).mean().detach())
    assert float(piece_norm2(piece).detach()) == pytest.approx(direct, rel=1e-12)


def test_autograd_gradient_matches_finite_differences():
    axes = _axes(3, ["extension", "periodic", "periodic"], modes=2)
    u = LowRankFourierSum(axes, rank=2, init_scale=0.5, seed=6)
    op = D(0) + Laplacian([1, 2], -0.5)
    target = LowRankFourierSum(axes, rank=1, init_scale=0.5, seed=7).as_sum()

    def value():
        return piece_norm2(Piece([(u.as_sum(), op), (target, Const(-1.0))], ["integral"] * 3), True)

    loss = value()
    loss.backward()
    gen = torch.Generator().manual_seed(8)
    for p in u.parameters():
        for _ in range(3):
            idx = tuple(torch.randint(n, (1,), generator=gen).item() for n in p.shape)
            h = 1e-6
            with torch.no_grad():
                p[idx] += h
                up = float(value())
                p[idx] -= 2 * h
                dn = float(value())
                p[idx] += h
            fd = (up - dn) / (2 * h)
            assert p.grad[idx].item() == pytest.approx(fd, rel=1e-6, abs=1e-8)


def test_monte_carlo_mean_within_three_sigma():
    axes = _axes(4, modes=2)
    s = LowRankFourierSum(axes, rank=2, init_scale=0.6, seed=9).as_sum()
    piece = Piece([(s, Laplacian(range(4), -1.0) + Const(1.0))], ["integral"] * 4)
    closed = float(piece_norm2(piece))
    est, se = mc_norm2(piece, 20000, torch.Generator().manual_seed(10))
    assert abs(float(est) - closed) < 3 * float(se)
    assert float(se) > 0


def test_gauge_rescaling_and_rank_permutation_leave_the_loss_unchanged():
    axes = _axes(3, ["extension", "periodic", "periodic"], modes=2)
    u = LowRankFourierSum(axes, rank=3, init_scale=0.5, seed=11)
    op = D(0) + Laplacian([1, 2], -1.0)

    def loss():
        return float(piece_norm2(Piece([(u.as_sum(), op)], ["integral"] * 3), real=True))

    before = loss()
    with torch.no_grad():
        f0, f1 = u.free_parameters(0).clone(), u.free_parameters(1).clone()
        scale = torch.tensor([2.0 + 1j, 0.3, -4.0], dtype=torch.complex128)
        u.set_free_parameters_(0, f0 * scale[:, None])
        u.set_free_parameters_(1, f1 / scale[:, None])
    assert loss() == pytest.approx(before, rel=1e-12)
    perm = torch.tensor([2, 0, 1])
    with torch.no_grad():
        for j in range(3):
            u.set_free_parameters_(j, u.free_parameters(j).clone()[perm])
    assert loss() == pytest.approx(before, rel=1e-12)
    u.balance_()
    assert loss() == pytest.approx(before, rel=1e-12)


def test_dimension_mismatch_is_rejected():
    axes = _axes(2)
    s = LowRankFourierSum(axes, rank=1, seed=0).as_sum()
    with pytest.raises(ValueError, match="dimension mismatch"):
        Piece([(s, Laplacian(range(3)))], ["integral"] * 2)


def test_ritz_energy_is_minimal_at_the_solution():
    from lorfs.fourier_sum import SeparableSum
    from lorfs.residual import ritz_energy

    axes = _axes(2, modes=2)
    e = torch.zeros(1, 5, dtype=torch.complex128)
    e[0, 3] = 1.0
    u_star = SeparableSum(axes, [-1j * e, e])  # -i e^{i(x+y)}: Re = sin(x + y)
    f = u_star.scaled(3.0)  # -Lap u + u = 3 u
    assert float(ritz_energy(u_star, 1.0, f)) == pytest.approx(-1.5, rel=1e-12)
    for seed in range(3):
        v = LowRankFourierSum(axes, rank=1, init_scale=0.1, seed=seed).as_sum()
        assert float(ritz_energy(u_star + v, 1.0, f).detach()) > -1.5
