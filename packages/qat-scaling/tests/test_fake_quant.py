"""Properties of the fake quantiser and its straight-through gradient."""

import pytest
import torch
from qat_scaling.fake_quant import FakeQuantizer, fake_quantize, int_range


def _x(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("bits", [2, 4, 8])
def test_idempotent(bits):
    x = _x(16, 64)
    q = fake_quantize(x, bits, 16)
    assert torch.allclose(fake_quantize(q, bits, 16), q, atol=1e-6)


def test_torchao_rule_is_not_idempotent_with_dynamic_scales():
    # absmax maps to 7.5 steps and is clamped to 7: the re-computed scale changes (a property of
    # the convention, documented in the module): Q(Q(x)) != Q(x) in general
    x = _x(16, 64)
    q = fake_quantize(x, 4, 16, "torchao")
    assert not torch.allclose(fake_quantize(q, 4, 16, "torchao"), q, atol=1e-6)


def test_group_of_one_is_identity():
    x = _x(8, 32)
    assert torch.allclose(fake_quantize(x, 4, 1), x, atol=1e-6)


@pytest.mark.parametrize("rule", ["absmax", "torchao"])
@pytest.mark.parametrize("bits", [2, 3, 4])
def test_at_most_2_to_the_b_levels_per_group(bits, rule):
    q = fake_quantize(_x(4, 256), bits, 128, rule).reshape(4, 2, 128)
    for row in q.reshape(-1, 128):
        assert len(torch.unique(row)) <= 2**bits
    qmin, qmax, _ = int_range(bits, rule)
    assert qmax - qmin + 1 == (2**bits - 1 if rule == "absmax" else 2**bits)


def test_scale_equivariant():
    x = _x(8, 64)
    for c in (0.01, 3.0, 250.0):
        assert torch.allclose(
            fake_quantize(c * x, 4, 16), c * fake_quantize(x, 4, 16), rtol=1e-5, atol=1e-6
        )


def test_groups_are_independent():
    x = _x(2, 64)
    y = x.clone()
    y[:, 16:32] *= 100  # an outlier group
    qx, qy = fake_quantize(x, 4, 16), fake_quantize(y, 4, 16)
    keep = torch.ones(64, dtype=torch.bool)
    keep[16:32] = False
    assert torch.equal(qx[:, keep], qy[:, keep])
    # with one group spanning everything the outlier destroys the others
    assert not torch.equal(fake_quantize(x, 4, 64)[:, keep], fake_quantize(y, 4, 64)[:, keep])


def test_more_bits_less_error_and_larger_groups_more_error():
    x = _x(64, 256)
    err = {b: (fake_quantize(x, b, 32) - x).pow(2).mean() for b in (2, 4, 8)}
    assert err[8] < err[4] < err[2]
    eg = {g: (fake_quantize(x, 4, g) - x).pow(2).mean() for g in (8, 32, 128)}
    assert eg[8] < eg[32] < eg[128]


def test_error_variance_is_step_squared_over_12_on_uniform_input():
    g = torch.Generator().manual_seed(1)
    x = torch.rand(2000, 64, generator=g) * 2 - 1
    x[:, 0] = 1.0  # fix absmax of every group: step = 1 / qmax
    for bits in (4, 6):
        step = 1.0 / (2 ** (bits - 1) - 1)
        err = (fake_quantize(x, bits, 64) - x)[:, 1:]
        assert err.var().item() == pytest.approx(step**2 / 12, rel=0.05)


def test_ste_gradient_is_identity():
    x = _x(4, 32).requires_grad_(True)
    w = _x(4, 32, seed=3)
    (fake_quantize(x, 4, 8) * w).sum().backward()
    assert torch.allclose(x.grad, w, rtol=1e-6, atol=0)  # (w * s) / s, exact up to rounding


def test_clipped_ste_masks_outside_range():
    # torchao rule: +absmax maps to 7.5 -> clamped to 7, still inside the +-0.5 band (kept);
    # an input rounded to the grid keeps its gradient; the clipped STE equals the identity here
    x = _x(4, 32).requires_grad_(True)
    fake_quantize(x, 4, 8, "torchao", ste="clipped").sum().backward()
    torch.testing.assert_close(x.grad, torch.ones_like(x))  # (1/s) * s: 1 up to rounding
    from qat_scaling.fake_quant import _RoundSTE

    z = torch.tensor([-9.0, -7.0, 0.2, 7.4, 8.0]).requires_grad_(True)
    _RoundSTE.apply(z, -7.0, 7.0, True).sum().backward()
    assert z.grad.tolist() == [0.0, 1.0, 1.0, 1.0, 0.0]


def test_sixteen_bits_is_identity_and_bad_settings_rejected():
    x = _x(3, 8)
    assert fake_quantize(x, 16, 3) is x
    for bits in (1, 9, 32, 0):
        with pytest.raises(ValueError, match="bits must be one of"):
            fake_quantize(x, bits, 4)
    with pytest.raises(ValueError, match="positive integer"):
        fake_quantize(x, 4, 0)
    with pytest.raises(ValueError, match="does not divide"):
        fake_quantize(x, 4, 3)
    with pytest.raises(ValueError, match="bits must be one of"):
        FakeQuantizer(bits=1)
