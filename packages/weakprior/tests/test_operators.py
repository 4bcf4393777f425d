"""Forward operators: adjoint identities, masks, noise, and the bad-input paths."""

import pytest
import torch
from weakprior.operators import (
    BoxInpainting,
    Downsample,
    GaussianBlur,
    MatrixOperator,
    RandomInpainting,
    check_image_range,
    check_measurement,
    measure,
)

SHAPE = (3, 2, 12, 12)


def _ops():
    return [
        RandomInpainting(SHAPE, 0.3, seed=1),
        BoxInpainting(SHAPE, 0.5),
        GaussianBlur(5, 1.0),
        GaussianBlur(7, 2.0),
        Downsample(2),
        Downsample(3),
    ]


@pytest.mark.parametrize("op", _ops(), ids=lambda o: type(o).__name__)
def test_adjoint_identity(op):
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(SHAPE, generator=gen, dtype=torch.float64)
    ax = op(x)
    y = torch.randn(ax.shape, generator=gen, dtype=torch.float64)
    lhs = (ax * y).sum()
    rhs = (x * op.adjoint(y)).sum()
    assert torch.allclose(lhs, rhs, rtol=1e-10, atol=1e-10)


def test_adjoint_identity_matrix():
    gen = torch.Generator().manual_seed(1)
    m = torch.randn(4, 7, generator=gen, dtype=torch.float64)
    op = MatrixOperator(m)
    x, y = torch.randn(5, 7, dtype=torch.float64), torch.randn(5, 4, dtype=torch.float64)
    assert torch.allclose((op(x) * y).sum(), (x * op.adjoint(y)).sum())


def test_random_mask_keep_ratio_and_channels():
    op = RandomInpainting((64, 3, 16, 16), 0.3, seed=0)
    assert abs(float(op.mask.mean()) - 0.3) < 0.02
    assert torch.equal(op.mask[:, 0], op.mask[:, 2])  # shared across channels
    assert torch.equal(
        op.observed((64, 3, 16, 16)) + op.missing_pixels((64, 3, 16, 16)), torch.ones(64, 3, 16, 16)
    )
    assert not torch.equal(op.mask[0], op.mask[1])  # one mask per image


def test_box_hides_the_centre():
    op = BoxInpainting((1, 1, 16, 16), 0.25)
    miss = op.missing_pixels((1, 1, 16, 16))[0, 0]
    assert miss[8, 8] == 1 and miss[0, 0] == 0 and int(miss.sum()) == 64


def test_blur_and_downsample_preserve_constants():
    c = torch.full(SHAPE, 0.3)
    assert torch.allclose(GaussianBlur(5, 1.0)(c), c)
    assert torch.allclose(Downsample(3)(c), torch.full((3, 2, 4, 4), 0.3))


def test_measure_noise_level_and_unobserved_zero():
    x = torch.zeros(8, 1, 32, 32)
    op = RandomInpainting(x.shape, 0.5, seed=0)
    y = measure(op, x, sigma=0.1, seed=0)
    obs = op.observed(tuple(x.shape)) > 0
    assert abs(float(y[obs].std()) - 0.1) < 0.01
    assert float(y[~obs].abs().max()) == 0.0
    assert torch.equal(measure(GaussianBlur(), x, 0.0), GaussianBlur()(x))


@pytest.mark.parametrize("keep", [0.0, -0.1, 1.5, float("nan")])
def test_keep_ratio_outside_unit_interval_rejected(keep):
    with pytest.raises(ValueError, match="keep_ratio must lie in"):
        RandomInpainting(SHAPE, keep)


def test_bad_inputs_rejected():
    op = RandomInpainting(SHAPE, 0.5)
    with pytest.raises(ValueError, match="does not match the mask shape"):
        op(torch.zeros(3, 2, 10, 10))
    with pytest.raises(ValueError, match="does not match the mask shape"):
        op.adjoint(torch.zeros(1, 2, 12, 12))
    with pytest.raises(ValueError, match="does not match the operator output"):
        check_measurement(Downsample(2), SHAPE, torch.zeros(3, 2, 12, 12))
    with pytest.raises(ValueError, match="sigma must be >= 0"):
        measure(op, torch.zeros(SHAPE), sigma=-0.01)
    with pytest.raises(ValueError, match=r"must lie in \[-1, 1\]"):
        check_image_range(torch.full((1, 1, 2, 2), 2.0))
    with pytest.raises(ValueError, match="not divisible"):
        Downsample(5)(torch.zeros(SHAPE))
    with pytest.raises(ValueError, match="box_frac"):
        BoxInpainting(SHAPE, 1.0)
    with pytest.raises(ValueError, match="odd"):
        GaussianBlur(4, 1.0)


def test_stacked_inpainting_is_the_concatenation_and_self_adjoint():
    from weakprior.operators import MaskInpainting, stack_inpainting

    ops = [RandomInpainting(SHAPE, k, seed=1) for k in (0.2, 0.8)] + [BoxInpainting(SHAPE, 0.5)]
    stacked = stack_inpainting(ops)
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(3 * SHAPE[0], *SHAPE[1:], generator=gen, dtype=torch.float64)
    assert stacked(x).shape == x.shape  # (3 B, C, H, W)
    for i, op in enumerate(ops):
        part = slice(i * SHAPE[0], (i + 1) * SHAPE[0])
        assert torch.equal(stacked(x)[part], op(x[part]))
        assert torch.equal(stacked.missing_pixels(x.shape)[part], op.missing_pixels(SHAPE))
    y = torch.randn(x.shape, generator=gen, dtype=torch.float64)
    assert torch.allclose((stacked(x) * y).sum(), (x * stacked.adjoint(y)).sum())
    with pytest.raises(ValueError, match="inpainting"):
        stack_inpainting([GaussianBlur(5, 1.0)])
    with pytest.raises(ValueError, match="only 0 and 1"):
        MaskInpainting(torch.full((1, 1, 2, 2), 0.5))
    with pytest.raises(ValueError, match="shape"):
        MaskInpainting(torch.ones(2, 2))
