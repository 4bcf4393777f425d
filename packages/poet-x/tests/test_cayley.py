"""Cayley and Cayley-Neumann rotations: orthogonality, error scaling, divergence warning."""

import numpy as np
import pytest
import torch
from poet_x.cayley import (
    apply_blocks,
    block_diag_dense,
    cayley_exact,
    cayley_neumann,
    orthogonality_error,
    skew_from_params,
)


def _skew(k=3, b=8, scale=0.1, seed=0):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(k, b * (b - 1) // 2, generator=g, dtype=torch.float64)
    return skew_from_params(q * scale, b)


def test_skew_is_skew_symmetric():
    s = _skew()
    assert torch.equal(s, -s.transpose(1, 2))


def test_exact_cayley_orthogonal_to_1e12_in_float64():
    for scale in (0.01, 0.5, 3.0):
        g = cayley_exact(_skew(scale=scale))
        assert orthogonality_error(g) < 1e-12
        eye = torch.eye(8, dtype=torch.float64)
        s = _skew(scale=scale)
        ref = (eye + s) @ torch.linalg.inv(eye - s)
        assert torch.allclose(g, ref, atol=1e-12)


def test_identity_at_zero():
    z = torch.zeros(2, 4, 4, dtype=torch.float64)
    assert torch.equal(cayley_neumann(z), torch.eye(4, dtype=torch.float64).expand(2, 4, 4))
    assert torch.allclose(cayley_exact(z), torch.eye(4, dtype=torch.float64).expand(2, 4, 4))


def test_neumann_error_scales_like_norm_to_the_fifth():
    base = _skew(k=1, b=16, scale=1.0, seed=3)
    base = base / torch.linalg.matrix_norm(base, ord=2).max()
    norms, errs = [], []
    for t in (0.02, 0.04, 0.08, 0.16):
        s = base * t
        errs.append((cayley_neumann(s, 4) - cayley_exact(s)).abs().max().item())
        norms.append(t)
    slope = np.polyfit(np.log(norms), np.log(errs), 1)[0]
    assert 4.7 < slope < 5.3


def test_neumann_warns_when_series_diverges():
    with pytest.warns(RuntimeWarning, match="diverges"):
        cayley_neumann(_skew(scale=5.0))


def test_neumann_terms_below_one_rejected():
    with pytest.raises(ValueError, match="neumann_terms"):
        cayley_neumann(_skew(), 0)


def test_apply_blocks_equals_dense_block_diagonal():
    g = cayley_exact(_skew(k=3, b=4))
    x = torch.randn(5, 12, dtype=torch.float64)
    assert torch.allclose(apply_blocks(x, g), x @ block_diag_dense(g).t(), atol=1e-14)
