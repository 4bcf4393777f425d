"""Adam on the sphere (per-sample constraint, tangent steps) and the early stoppers."""

import math

import pytest
import torch
from weakprior.early_stopping import HoldOutStopper, WindowedVarianceStopper, holdout_split
from weakprior.operators import RandomInpainting
from weakprior.sphere import AdamOnSphere, project_to_sphere, tangent


@pytest.mark.parametrize("retraction", ["normalize", "exp"])
def test_norm_is_sqrt_d_per_sample_after_every_step(retraction):
    gen = torch.Generator().manual_seed(0)
    z = (
        torch.randn(5, 2, 4, 4, generator=gen) * torch.arange(1, 6.0).view(5, 1, 1, 1)
    ).requires_grad_()
    target = torch.randn(5, 2, 4, 4, generator=gen)
    opt = AdamOnSphere([z], lr=0.2, retraction=retraction)
    d = z[0].numel()
    for _ in range(25):
        opt.zero_grad()
        ((z - 3 * target) ** 2).sum().backward()
        opt.step()
        norms = z.detach().flatten(1).norm(dim=1)
        assert torch.allclose(norms, torch.full((5,), math.sqrt(d)), atol=1e-5)


def test_sphere_adam_reaches_the_nearest_point_on_the_sphere():
    target = torch.tensor([[3.0, 4.0, 0.0, 0.0], [0.0, 0.0, -1.0, 0.0]])
    z = torch.randn(2, 4, generator=torch.Generator().manual_seed(1)).requires_grad_()
    opt = AdamOnSphere([z], lr=0.05)
    for _ in range(400):
        opt.zero_grad()
        ((z - target) ** 2).sum().backward()
        opt.step()
    expected = project_to_sphere(target)
    assert torch.allclose(z.detach(), expected, atol=0.05)


def test_tangent_projection_is_orthogonal_per_sample():
    z, g = torch.randn(4, 10), torch.randn(4, 10)
    gt = tangent(z, g)
    assert torch.allclose((gt * z).sum(1), torch.zeros(4), atol=1e-5)
    assert torch.allclose(tangent(z, gt), gt, atol=1e-6)  # idempotent


def test_radius_must_be_positive():
    z = torch.randn(2, 3, requires_grad=True)
    for r in (0.0, -1.0):
        with pytest.raises(ValueError, match="radius must be > 0"):
            AdamOnSphere([z], radius=r)
    with pytest.raises(ValueError, match="radius must be > 0"):
        project_to_sphere(z.detach(), 0.0)
    opt = AdamOnSphere([z], radius=2.0)
    assert torch.allclose(z.detach().norm(dim=1), torch.full((2,), 2.0))
    del opt


def test_holdout_masks_disjoint_and_cover_observed():
    observed = RandomInpainting((6, 1, 16, 16), 0.4, seed=1).observed((6, 1, 16, 16))
    fit, val = holdout_split(observed, 0.9, seed=1)  # same integer seed as the mask
    assert float((fit * val).sum()) == 0.0
    assert torch.equal(fit + val, observed)
    frac = val.flatten(1).sum(1) / observed.flatten(1).sum(1)
    assert ((frac > 0.05) & (frac < 0.15)).all()
    with pytest.raises(ValueError):
        holdout_split(observed, 0.0)


def _brute_force_choice(losses, k):
    """Latest iterate among the k lowest losses (ties: earlier enters first)."""
    order = sorted(range(len(losses)), key=lambda i: (losses[i], i))[:k]
    return max(order)


def test_holdout_stopper_picks_latest_of_best_k():
    gen = torch.Generator().manual_seed(3)
    for k in (1, 3, 10):
        losses = torch.rand(60, 2, generator=gen)
        s = HoldOutStopper(best_k=k)
        for i, row in enumerate(losses):
            s.update(row, torch.full((2, 1), float(i)))
        for b in range(2):
            want = _brute_force_choice(losses[:, b].tolist(), k)
            assert s.chosen_iteration[b] == want
            assert s.best()[b].item() == float(want)


def test_holdout_stopper_patience_stops():
    s = HoldOutStopper(best_k=2, patience=3)
    stops = [s.update(torch.tensor([v]), torch.zeros(1, 1)) for v in [1.0, 0.5, 0.6, 0.7, 0.8]]
    assert stops == [False, False, False, False, True]


def test_windowed_variance_stopper():
    s = WindowedVarianceStopper(window=3, patience=2)
    seq = [0.0, 5.0, 1.0, 1.0, 1.0, 4.0, 9.0, 16.0]
    stopped = None
    for i, v in enumerate(seq):
        if s.update(None, torch.full((1, 2), v)):
            stopped = i
            break
    assert s.best()[0, 0].item() == 1.0
    assert stopped == 6
