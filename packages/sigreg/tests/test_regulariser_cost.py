"""The fused SIGReg equals the direct form (value and gradient); the cost harness runs."""

import pytest
import torch
from sigreg.regulariser_cost import measure_overhead, reference_sigreg, summarise
from sigreg.sigreg_loss import (
    draw_slices,
    folded_grid,
    frequency_grid,
    frequency_weights,
    sigreg,
)


def _direct(x, a, num_t, t_max, grid, weight, scale_by_n):
    """The statistic over the full grid with autograd's cos/sin (no folding, no fusion)."""
    t = frequency_grid(num_t, t_max, grid, dtype=x.dtype)
    w = frequency_weights(t, weight, grid)
    zt = (x @ a).unsqueeze(-1) * t
    c, s = torch.cos(zt).mean(0), torch.sin(zt).mean(0)
    err = ((c - torch.exp(-0.5 * t**2)) ** 2 + s**2) @ w
    return err.mean() * (x.shape[0] if scale_by_n else 1.0)


@pytest.mark.parametrize(
    "preset,num_t,t_max,grid,weight,scale",
    [
        ("isogaussian-drl", 8, 5.0, "symmetric", "none", False),  # released preset
        ("isogaussian-drl", 7, 3.0, "symmetric", "none", False),  # odd grid: contains t = 0
        ("isogaussian-drl", 1, 2.0, "symmetric", "none", False),
        ("lejepa", 17, 3.0, "half", "gaussian", True),
    ],
)
def test_fused_value_and_gradient_equal_the_direct_form(preset, num_t, t_max, grid, weight, scale):
    g = torch.Generator().manual_seed(0)
    x = (torch.randn(96, 6, generator=g, dtype=torch.float64) * 1.3 + 0.2).requires_grad_()
    a = draw_slices(6, 12, generator=g).double()
    ours = sigreg(x, preset=preset, num_t=num_t, t_max=t_max, slices=a)
    (g_ours,) = torch.autograd.grad(ours, x)
    ref = _direct(x, a, num_t, t_max, grid, weight, scale)
    (g_ref,) = torch.autograd.grad(ref, x)
    assert float(ours) == pytest.approx(float(ref), rel=1e-12)
    assert torch.allclose(g_ours, g_ref, rtol=1e-10, atol=1e-14)


def test_fused_backward_passes_gradcheck():
    g = torch.Generator().manual_seed(1)
    x = torch.randn(10, 3, generator=g, dtype=torch.float64, requires_grad=True)
    a = draw_slices(3, 4, generator=g).double()
    assert torch.autograd.gradcheck(lambda v: sigreg(v, slices=a), (x,))


def test_folded_grid_keeps_only_positive_frequencies_with_the_mass_of_both_signs():
    t, w = folded_grid(8, 5.0, "symmetric", "none", dtype=torch.float64)
    full = frequency_grid(8, 5.0, "symmetric", dtype=torch.float64)
    assert torch.allclose(t, full[full > 0]) and torch.allclose(
        w, torch.full((4,), 0.25, dtype=torch.float64)
    )
    t, w = folded_grid(17, 3.0, "half", "gaussian", dtype=torch.float64)
    assert t.numel() == 16 and float(t.min()) > 0  # t = 0 has zero error: dropped


def test_reference_form_equals_the_package_statistic_on_the_same_draw():
    x = torch.randn(64, 16, generator=torch.Generator().manual_seed(2))
    torch.manual_seed(5)
    ref = float(reference_sigreg(x))
    torch.manual_seed(5)
    assert float(sigreg(x)) == pytest.approx(ref, rel=1e-5)


def test_measure_overhead_reports_per_repeat_ratios():
    r = measure_overhead(hidden=16, batch=16, repeats=3, steps=3, warmup=1)
    assert len(r["ratio_fused"]) == len(r["ratio_reference"]) == 3
    assert r["base_s"] > 0 and r["fused_s"] > 0
    med, q25, q75 = summarise(r["ratio_fused"])
    assert q25 <= med <= q75


def test_second_derivative_is_refused_not_silently_wrong():
    x = torch.randn(8, 3, dtype=torch.float64, requires_grad=True)
    (g,) = torch.autograd.grad(sigreg(x), x, create_graph=True)
    with pytest.raises(RuntimeError):
        g.sum().backward()


def test_single_node_and_two_stage_paths_agree_in_value_and_gradient():
    """The one-node local path equals the two-stage path (used for DDP and parts)."""
    g = torch.Generator().manual_seed(3)
    x = torch.randn(40, 5, generator=g, dtype=torch.float64, requires_grad=True)
    a = draw_slices(5, 7, generator=g).double()
    for preset in ("isogaussian-drl", "lejepa"):
        one = sigreg(x, preset=preset, slices=a)
        two, re, im = sigreg(x, preset=preset, slices=a, return_parts=True)
        (g1,) = torch.autograd.grad(one, x)
        (g2,) = torch.autograd.grad(two, x)
        assert float(one) == pytest.approx(float(two), rel=1e-12)
        assert float(re + im) == pytest.approx(float(two), rel=1e-12)
        assert torch.allclose(g1, g2, rtol=1e-10, atol=1e-14)
    # slices that require grad take the two-stage path, so they get their gradient too
    a_req = a.clone().requires_grad_()
    (ga,) = torch.autograd.grad(sigreg(x.detach(), slices=a_req), a_req)
    assert float(ga.abs().sum()) > 0
