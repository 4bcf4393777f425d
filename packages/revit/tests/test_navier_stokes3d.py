"""3D flow simulator: divergence-free, energy decays, and it commutes with all of O."""

import pytest
import torch
from revit_equivariant.group import FieldSpec, octahedral, rotate
from revit_equivariant.navier_stokes3d import NavierStokes3D, random_velocity3d, spectral_divergence


def test_divergence_free_and_energy_decreases():
    ns = NavierStokes3D(8, nu=0.05, dt=0.05)
    traj = ns.trajectory(random_velocity3d(2, 8, 1), n_frames=5, interval=0.1)
    assert spectral_divergence(traj).abs().max() < 1e-10
    energy = traj.pow(2).mean(dim=(2, 3, 4, 5))
    assert (energy[:, 1:] < energy[:, :-1]).all()


def test_simulator_commutes_with_all_24_rotations():
    spec = FieldSpec(3, vectors=((0, 1, 2),))
    ns = NavierStokes3D(8, nu=0.05, dt=0.05)
    u0 = random_velocity3d(1, 8, 2)
    ref = ns.trajectory(u0, 2, 0.1)[:, -1]
    for r in octahedral():
        out = ns.trajectory(rotate(u0, spec, r), 2, 0.1)[:, -1]
        torch.testing.assert_close(out, rotate(ref, spec, r), atol=1e-12, rtol=0)


def test_bad_shape():
    with pytest.raises(ValueError, match="expected"):
        NavierStokes3D(8).trajectory(torch.zeros(1, 2, 8, 8, 8), 2, 0.1)
