"""Simulator checks: Taylor-Green decay, divergence-free velocity, energy decay, equivariance."""

import math

import pytest
import torch
from revit_equivariant.group import FieldSpec, rotate
from revit_equivariant.navier_stokes import (
    NavierStokes2D,
    kolmogorov_forcing,
    random_vorticity,
    spectral_gradient,
    taylor_green_vorticity,
    velocity_from_vorticity,
)
from revit_equivariant.pde_data import simulate


def test_taylor_green_decays_exactly():
    nu = 0.1
    sim = NavierStokes2D(16, nu=nu, dt=0.05)
    w = sim.run(taylor_green_vorticity(16, 0.0, nu)[None], 2.0)
    assert torch.allclose(w[0], taylor_green_vorticity(16, 2.0, nu), atol=1e-12)
    w0 = taylor_green_vorticity(16, 0.0, nu)
    ratio = float(w.abs().max() / w0.abs().max())
    assert math.isclose(ratio, math.exp(-2 * nu * 2.0), rel_tol=1e-9)


def test_velocity_is_divergence_free_and_has_the_right_curl():
    g = torch.Generator().manual_seed(0)
    w = random_vorticity(2, 32, g)
    u = velocity_from_vorticity(w)
    div = spectral_gradient(u[:, 0])[:, 0] + spectral_gradient(u[:, 1])[:, 1]
    assert float(div.abs().max()) < 1e-10
    curl = spectral_gradient(u[:, 1])[:, 0] - spectral_gradient(u[:, 0])[:, 1]
    assert torch.allclose(curl, w - w.mean((-2, -1), keepdim=True), atol=1e-10)


def test_unforced_energy_decreases():
    g = torch.Generator().manual_seed(1)
    sim = NavierStokes2D(32, nu=1e-2, dt=0.02)
    traj = sim.trajectory(random_vorticity(2, 32, g, rms=2.0), 6, 0.2)
    energy = velocity_from_vorticity(traj).pow(2).sum((2, 3, 4))
    assert bool((energy[:, 1:] < energy[:, :-1]).all())


def test_forcing_is_divergence_free_and_the_90_degree_forcing_is_its_c4_image():
    spec = FieldSpec(2, vectors=((0, 1),))
    for angle in (0, 45, 90):
        f = kolmogorov_forcing(32, 1.0, angle)
        div = spectral_gradient(f[0])[0] + spectral_gradient(f[1])[1]
        assert float(div.abs().max()) < 1e-10
    f0, f90 = kolmogorov_forcing(32, 1.0, 0), kolmogorov_forcing(32, 1.0, 90)
    # rotation about the grid centre = the 90-degree forcing up to a half-cell shift of the torus
    rot = rotate(f0[None], spec, 1)[0]
    assert torch.allclose(rot.abs().sum(), f90.abs().sum(), rtol=1e-9)
    assert float(rot[0].abs().max()) < 1e-12 and float(f90[0].abs().max()) < 1e-12


def test_simulator_commutes_with_rotation():
    """The solver itself is C4 equivariant: simulate(rotate(w0)) = rotate(simulate(w0))."""
    g = torch.Generator().manual_seed(3)
    scalar = FieldSpec(1, scalars=(0,))
    w0 = random_vorticity(1, 16, g)
    sim = NavierStokes2D(16, nu=2e-2, dt=0.02)
    a = sim.run(rotate(w0[None], scalar, 1)[0], 0.4)
    b = rotate(sim.run(w0, 0.4)[None], scalar, 1)[0]  # vorticity is a scalar under rotations
    assert torch.allclose(a, b, atol=1e-10)


@pytest.mark.parametrize("problem", ["kolmogorov", "decaying", "advection"])
def test_simulate_shapes_and_bad_arguments(problem):
    traj = simulate(problem, 2, 3, 0, grid=16, sim_grid=32)
    channels = {"kolmogorov": 4, "decaying": 2, "advection": 3}[problem]
    assert traj.shape == (2, 3, channels, 16, 16) and traj.dtype == torch.float32
    assert bool(torch.isfinite(traj).all())
    with pytest.raises(ValueError, match="multiple"):
        simulate(problem, 1, 2, 0, grid=12, sim_grid=32)
    with pytest.raises(ValueError, match="variant"):
        simulate(problem, 1, 2, 0, variant="rot45")
