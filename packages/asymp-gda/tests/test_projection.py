"""Simplex projection: on the simplex, idempotent, equal to the QP argmin."""

import numpy as np
import pytest
import torch
from asymp_gda.projection import on_simplex, project_simplex
from scipy.optimize import minimize


def test_output_on_simplex_and_idempotent():
    gen = torch.Generator().manual_seed(0)
    v = torch.randn(50, 7, generator=gen, dtype=torch.float64) * 3
    p = project_simplex(v)
    assert on_simplex(p, 1e-12)
    assert torch.allclose(project_simplex(p), p, atol=1e-14)


def test_matches_qp_solution():
    rng = np.random.default_rng(1)
    for _ in range(5):
        v = rng.normal(size=6) * 2
        res = minimize(
            lambda p, v=v: 0.5 * ((p - v) ** 2).sum(),
            np.full(6, 1 / 6),
            jac=lambda p, v=v: p - v,
            bounds=[(0, None)] * 6,
            constraints=[{"type": "eq", "fun": lambda p: p.sum() - 1}],
            method="SLSQP",
            options={"ftol": 1e-14},
        )
        ours = project_simplex(torch.tensor(v)).numpy()
        assert np.abs(ours - res.x).max() < 1e-6


def test_points_already_on_simplex_and_shift_invariance():
    p = torch.tensor([0.1, 0.2, 0.7], dtype=torch.float64)
    assert torch.allclose(project_simplex(p), p)
    v = torch.tensor([0.3, -1.0, 2.0], dtype=torch.float64)
    assert torch.allclose(project_simplex(v), project_simplex(v + 5.0))


def test_empty_axis_rejected():
    with pytest.raises(ValueError, match="non-empty"):
        project_simplex(torch.zeros(3, 0))
