"""Registry problems: their reference solutions satisfy the PDEs; bad problems are rejected."""

import math

import numpy as np
import pytest
import torch
from lorfs.pinn import pde_residual
from lorfs.problems import get_problem
from lorfs.reference import allen_cahn_flow, logistic_flow, strang_splitting


class _Exact(torch.nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, z):
        return self.fn(z)[:, None]


@pytest.mark.parametrize(
    "name, kwargs",
    [
        ("convection", {"beta": 30}),
        ("reaction", {"rho": 5}),
        ("torus_poisson", {"d": 6}),
        ("torus_heat", {"d": 5}),
        ("convection_nd", {"d": 5}),
        ("dirichlet_poisson", {"d": 3}),
    ],
)
def test_exact_solutions_satisfy_the_pde(name, kwargs):
    problem = get_problem(name, **kwargs)
    pts, _ = problem.test_set(200, seed=0)
    res = pde_residual(problem, _Exact(problem.exact), pts, problem.source_values(pts))
    scale = 1.0 + problem.source_values(pts).abs().max()
    assert res.abs().max() < 1e-9 * scale
    if problem.initial is not None:
        z = pts.clone()
        z[:, problem.time_axis] = 0.0
        assert torch.allclose(problem.initial_values(z), problem.exact(z), atol=1e-3)


def test_reaction_flows_are_exact():
    u = np.array([0.1, 0.5, -0.3])
    h = 1e-6
    for flow, rhs in (
        (lambda v, t: logistic_flow(v, 3.0, t), lambda v: 3.0 * v * (1 - v)),
        (lambda v, t: allen_cahn_flow(v, 5.0, t), lambda v: 5.0 * (v - v**3)),
    ):
        deriv = (flow(u, 0.2 + h) - flow(u, 0.2 - h)) / (2 * h)
        assert np.allclose(deriv, rhs(flow(u, 0.2)), atol=1e-6)
        assert np.allclose(flow(flow(u, 0.1), 0.1), flow(u, 0.2), atol=1e-12)


def test_strang_reference_converges_and_matches_pure_diffusion():
    n = 64
    x = 2 * math.pi * np.arange(n) / n
    u0 = np.sin(x)
    _, u = strang_splitting(u0, 2 * math.pi, 0.5, lambda v, dt: v, 1.0, 100, 11)
    assert np.allclose(u[-1], np.exp(-0.5) * np.sin(x), atol=1e-12)
    g = np.exp(-((x - math.pi) ** 2))
    coarse = strang_splitting(
        g, 2 * math.pi, 1.0, lambda v, dt: logistic_flow(v, 5, dt), 1.0, 100, 2
    )[1][-1]
    fine = strang_splitting(
        g, 2 * math.pi, 1.0, lambda v, dt: logistic_flow(v, 5, dt), 1.0, 400, 2
    )[1][-1]
    finer = strang_splitting(
        g, 2 * math.pi, 1.0, lambda v, dt: logistic_flow(v, 5, dt), 1.0, 1600, 2
    )[1][-1]
    e1, e2 = np.abs(coarse - finer).max(), np.abs(fine - finer).max()
    assert e2 < e1 / 8  # second order: 4x smaller step -> ~16x smaller error


def test_null_space_source_is_rejected():
    with pytest.raises(ValueError, match="non-zero mean"):
        get_problem("torus_poisson", d=3, source_mean=0.5)


def test_dirichlet_with_exponential_basis_is_rejected():
    p = get_problem("dirichlet_poisson", d=2)
    with pytest.raises(ValueError, match="Dirichlet conditions need the sine basis"):
        p.make_axes(kinds=["periodic", "periodic"])


def test_dimension_mismatch_between_problem_and_model():
    p = get_problem("torus_poisson", d=3)
    with pytest.raises(ValueError, match="dimension mismatch"):
        p.make_axes([2, 2])
    with pytest.raises(ValueError, match="dimension mismatch"):
        p.check_axes(get_problem("torus_poisson", d=4).make_axes())


@pytest.mark.parametrize(
    "name, kwargs, match",
    [
        ("nope", {}, "unknown problem"),
        ("convection", {"gamma": 1}, "bad parameters"),
        ("torus_poisson", {"d": 2.5}, "positive integer"),
        ("convection", {"beta": -1}, "beta must be"),
    ],
)
def test_bad_registry_calls(name, kwargs, match):
    with pytest.raises(ValueError, match=match):
        get_problem(name, **kwargs)
