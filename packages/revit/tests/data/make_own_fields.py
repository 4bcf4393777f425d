"""Write the three small own-data examples of the README's "On your own data" section.

Run from the package folder: ``python tests/data/make_own_fields.py`` (deterministic).

* ``kolmogorov_vpf.npz``: 2D Kolmogorov flow, velocity + pressure + static forcing, one
  file (split by trajectory), 16x16, 4 trajectories x 4 frames;
* ``vorticity.h5``: 2D decaying turbulence, the vorticity alone (a scalar-only field), one
  HDF5 file, 16x16, 4 x 4;
* ``flow3d/{train,test}.npz``: 3D decaying flow, the velocity alone, 8^3, a folder with a
  train and a test file.
"""

from pathlib import Path

import torch
from revit_equivariant.field_files import write_fields
from revit_equivariant.navier_stokes import wavenumbers
from revit_equivariant.pde_data import simulate

HERE = Path(__file__).parent


def _d(f: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    """Spectral derivative of ``f`` (..., n, n) along the axis of wavenumber ``k``."""
    return torch.fft.irfft2(1j * k * torch.fft.rfft2(f.double()), s=f.shape[-2:])


def pressure(u: torch.Tensor) -> torch.Tensor:
    """Incompressible pressure: laplacian p = -sum_ij d_i u_j d_j u_i on the 2 pi torus."""
    ky, kx = wavenumbers(u.shape[-1])
    du = [[_d(u[..., j, :, :], k) for k in (kx, ky)] for j in range(2)]  # du[j][i] = d_i u_j
    rhs = -sum(du[j][i] * du[i][j] for i in range(2) for j in range(2))
    ky, kx = wavenumbers(u.shape[-1], derivative=False)
    k2 = (kx**2 + ky**2).clamp_min(1.0)
    ph = torch.fft.rfft2(rhs) / -k2
    ph[..., 0, 0] = 0
    return torch.fft.irfft2(ph, s=u.shape[-2:]).float()


def main() -> None:
    kf = simulate("kolmogorov", 4, 4, seed=10, grid=16, sim_grid=32)  # (N, T, 4, 16, 16)
    vel = kf[:, :, :2]
    write_fields(
        HERE / "kolmogorov_vpf.npz",
        {
            "velocity": vel.movedim(2, -1).numpy(),  # (N, T, H, W, 2)
            "pressure": pressure(vel).numpy(),  # (N, T, H, W)
            "forcing": kf[0, 0, 2:].movedim(0, -1).numpy(),  # static: (H, W, 2)
        },
    )
    dec = simulate("decaying", 4, 4, seed=11, grid=16, sim_grid=32)
    ky, kx = wavenumbers(16)
    w = (_d(dec[:, :, 1], kx) - _d(dec[:, :, 0], ky)).float()  # d_x u_y - d_y u_x
    write_fields(HERE / "vorticity.h5", {"vorticity": w.numpy()})
    for split, seed in (("train", 12), ("test", 13)):
        u3 = simulate("decaying3d", 2, 3, seed=seed, grid=8, sim_grid=8)
        write_fields(HERE / "flow3d" / f"{split}.npz", {"velocity": u3.movedim(2, -1).numpy()})


if __name__ == "__main__":
    main()
