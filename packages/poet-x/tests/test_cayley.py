"""Cayley and Cayley-Neumann rotations: orthogonality, error scaling, divergence warning."""

import numpy as np
import pytest
import torch
from poet_x.cayley import (
    CayleyMap,
    apply_blocks,
    block_diag_dense,
    cayley_exact,
    cayley_neumann,
    orthogonality_error,
    rotation_blocks,
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


MAPS = [("neumann", 1), ("neumann", 2), ("neumann", 4), ("neumann", 6), ("exact", 4)]


def _params(k=3, b=6, scale=0.1, seed=1):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(k, b * (b - 1) // 2, generator=g, dtype=torch.float64) * scale
    return q.requires_grad_()


@pytest.mark.parametrize(("cayley", "terms"), MAPS)
def test_memory_efficient_map_gradcheck_and_equals_autograd_map(cayley, terms):
    q = _params()
    assert torch.autograd.gradcheck(lambda q: CayleyMap.apply(q, 6, cayley, terms), (q,))
    g_fn = CayleyMap.apply(q, 6, cayley, terms)
    g_ag = rotation_blocks(q, 6, cayley, terms, autograd=True)
    assert torch.equal(g_fn, g_ag)  # same forward ops, bit for bit
    d = torch.randn(g_ag.shape, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    (a,) = torch.autograd.grad(g_fn, q, d)
    (c,) = torch.autograd.grad(g_ag, q, d)
    assert torch.allclose(a, c, atol=1e-13, rtol=0)
    # the Q^{terms} contribution is not negligible at this scale: a wrong term count would show
    if cayley == "neumann":
        g_short = rotation_blocks(q, 6, cayley, terms + 1, autograd=True)
        (e,) = torch.autograd.grad(g_short, q, d)
        assert (e - c).abs().max() > 1e-4


def test_memory_efficient_map_saves_only_its_parameters():
    q = _params(k=4, b=16, scale=0.05).float().detach().requires_grad_()
    saved = []
    hooks = torch.autograd.graph.saved_tensors_hooks(lambda t: saved.append(t) or t, lambda t: t)
    with hooks:
        CayleyMap.apply(q, 16, "neumann", 4)
    assert len(saved) == 1 and saved[0] is q
    saved.clear()
    with hooks:  # plain autograd keeps Q, Q^2, Q^3 (4 x 16 x 16 each) for the matmuls
        rotation_blocks(q, 16, "neumann", 4, autograd=True)
    nbytes = sum(t.numel() * t.element_size() for t in saved if t.is_floating_point())
    assert nbytes >= 3 * 4 * 16 * 16 * 4 > q.numel() * 4


def test_memory_efficient_map_is_used_only_when_a_gradient_is_needed():
    q = _params().detach()
    assert rotation_blocks(q, 6).grad_fn is None
    assert type(rotation_blocks(q.requires_grad_(), 6).grad_fn).__name__ == "CayleyMapBackward"
