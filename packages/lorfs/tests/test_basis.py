"""1-D bases: multipliers, closed-form Grams vs quadrature, exact quadrature rules, bad input."""

import math

import numpy as np
import pytest
import torch
from lorfs.basis import FourierAxis


@pytest.mark.parametrize("kind", ["periodic", "extension", "sine", "cosine"])
def test_gram_matches_quadrature(kind):
    ax = FourierAxis("s", (0.3, 1.7), modes=5, kind=kind, extension=2.5)
    # Gauss-Legendre with many nodes integrates these entire functions to round-off
    x, w = np.polynomial.legendre.leggauss(200)
    s = torch.tensor(0.3 + 0.7 * (x + 1), dtype=torch.float64)
    w = torch.tensor(0.7 * w, dtype=torch.float64).to(torch.complex128)
    e = ax.basis_matrix(s)
    herm = e.T @ (w[:, None] * e.conj())
    bil = e.T @ (w[:, None] * e)
    assert torch.allclose(ax.gram(conj=True), herm, atol=1e-13, rtol=0)
    assert torch.allclose(ax.gram(conj=False), bil, atol=1e-13, rtol=0)


def test_periodic_gram_is_orthogonal_and_trapezoid_exact():
    ax = FourierAxis("x", (0.0, 2 * math.pi), modes=4)
    assert torch.allclose(ax.gram(), 2 * math.pi * torch.eye(9, dtype=torch.complex128))
    nodes, w = ax.exact_quadrature(8)
    e = ax.basis_matrix(nodes)
    gram = e.T @ (w.to(torch.complex128)[:, None] * e.conj())
    assert torch.allclose(gram, ax.gram(), atol=1e-12)


@pytest.mark.parametrize("kind", ["extension", "sine"])
def test_exact_quadrature_integrates_trig_polynomials(kind):
    ax = FourierAxis("t", (0.0, 1.0), modes=3, kind=kind)
    nodes, w = ax.exact_quadrature(6)
    q = torch.arange(-6, 7, dtype=torch.float64)
    vals = torch.exp(1j * ax.omega * (nodes[:, None] - ax.a) * q[None, :])
    approx = (w.to(torch.complex128)[:, None] * vals).sum(0)
    assert torch.allclose(approx, ax._integral_of_exponentials(q), atol=1e-12)


def test_multiplier_is_the_derivative():
    ax = FourierAxis("t", (0.0, 1.0), modes=3, kind="extension")
    c = torch.randn(7, dtype=torch.complex128, generator=torch.Generator().manual_seed(0))
    s = torch.linspace(0.1, 0.9, 5, dtype=torch.float64, requires_grad=True)
    re = ax.evaluate(c[None], s)[0].real
    (grad,) = torch.autograd.grad(re.sum(), s)
    exact = ax.evaluate((c * ax.multiplier(1))[None], s.detach())[0].real
    assert torch.allclose(grad, exact, atol=1e-12)


def test_sine_basis_vanishes_on_the_boundary():
    ax = FourierAxis("x", (0.0, 1.0), modes=4, kind="sine")
    p = torch.randn(1, 4, dtype=torch.complex128, generator=torch.Generator().manual_seed(1))
    vals = ax.evaluate(p @ ax.synthesis().T, torch.tensor([0.0, 1.0], dtype=torch.float64))
    assert vals.abs().max() < 1e-13


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"modes": 0}, "modes must be a positive integer"),
        ({"modes": -2}, "modes must be a positive integer"),
        ({"modes": 2.5}, "modes must be a positive integer"),
        ({"modes": 2, "domain": (1.0, 1.0)}, "b > a"),
        ({"modes": 2, "kind": "chebyshev"}, "kind must be one of"),
        ({"modes": 2, "period": 0.0}, "period must be positive"),
        ({"modes": 2, "period": 3.0}, "differs from its period"),
        ({"modes": 2, "kind": "extension", "extension": 1.0}, "extension factor"),
    ],
)
def test_bad_axes_are_rejected(kwargs, match):
    args = {"name": "x", "domain": (0.0, 2 * math.pi), **kwargs}
    with pytest.raises(ValueError, match=match):
        FourierAxis(**args)
