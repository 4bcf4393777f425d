"""A small 3D flow for the O-group benchmark: pseudo-spectral incompressible Navier-Stokes.

On the periodic cube ``[0, 2 pi)^3`` in rotational form

    d_t u = P[u x omega] + nu lap u,   omega = curl u,   div u = 0,

with ``P = I - k k^T / |k|^2`` the Leray projection (it removes the pressure gradient).
Decaying (unforced), so the distribution of trajectories from isotropic random initial
fields is invariant under all 24 rotations of O. :class:`NavierStokes3D` steps it with an
integrating-factor Heun scheme (viscosity integrated exactly) and 2/3 dealiasing;
:func:`random_velocity3d` draws a smooth divergence-free initial field.

Arrays are ``(..., 3, D, H, W)``; component ``a`` (x, y, z) is the derivative along array
axis ``-1 - a`` (x along W, y along H, z along D), the convention of
:mod:`revit_equivariant.group`. The Nyquist derivative is zeroed (as in 2D) so that spectral
derivatives commute exactly with the 90-degree rotations.
"""

from __future__ import annotations

import torch


def wavevector3d(n: int, dtype=torch.float64) -> torch.Tensor:
    """``(3, n, n, n)`` integer wavenumbers ``(k_x, k_y, k_z)`` of an ``fftn`` (Nyquist zeroed)."""
    k = torch.fft.fftfreq(n, 1.0 / n, dtype=dtype)
    k = torch.where(k.abs() == n // 2, 0.0, k)
    kz, ky, kx = torch.meshgrid(k, k, k, indexing="ij")
    return torch.stack([kx, ky, kz])


def spectral_divergence(u: torch.Tensor) -> torch.Tensor:
    """``div u`` of a periodic velocity ``(..., 3, n, n, n)``."""
    k = wavevector3d(u.shape[-1], u.dtype)
    uh = torch.fft.fftn(u, dim=(-3, -2, -1))
    return torch.fft.ifftn((1j * k * uh).sum(-4), dim=(-3, -2, -1)).real


def random_velocity3d(batch: int, n: int, seed: int, peak: float = 2.0) -> torch.Tensor:
    """Smooth divergence-free random velocity ``(batch, 3, n, n, n)`` with unit RMS.

    Examples
    --------
    >>> u = random_velocity3d(1, 8, 0)
    >>> float(spectral_divergence(u).abs().max()) < 1e-10
    True
    """
    g = torch.Generator().manual_seed(seed)
    noise = torch.randn(batch, 3, n, n, n, generator=g, dtype=torch.float64)
    k = wavevector3d(n)
    kk = (k**2).sum(0)
    full = torch.fft.fftfreq(n, 1.0 / n, dtype=torch.float64).abs()
    fz, fy, fx = torch.meshgrid(full, full, full, indexing="ij")
    band = (fx < n / 3) & (fy < n / 3) & (fz < n / 3)  # inside the 2/3-dealiased band
    amp = torch.exp(-kk / (2 * peak**2)) * (kk > 0) * band
    uh = _project(torch.fft.fftn(noise, dim=(-3, -2, -1)) * amp, k, kk)
    u = torch.fft.ifftn(uh, dim=(-3, -2, -1)).real
    return u / u.pow(2).mean(dim=(1, 2, 3, 4), keepdim=True).sqrt()


def _project(uh: torch.Tensor, k: torch.Tensor, kk: torch.Tensor) -> torch.Tensor:
    kdotu = (k * uh).sum(-4, keepdim=True)
    return uh - k * kdotu / torch.where(kk > 0, kk, 1.0)


def _curl_hat(uh: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    ux, uy, uz = uh.unbind(-4)
    kx, ky, kz = k
    return 1j * torch.stack([ky * uz - kz * uy, kz * ux - kx * uz, kx * uy - ky * ux], -4)


class NavierStokes3D:
    """Decaying 3D incompressible Navier-Stokes on an ``n^3`` periodic grid.

    Examples
    --------
    >>> ns = NavierStokes3D(8, nu=0.05, dt=0.05)
    >>> u0 = random_velocity3d(1, 8, 0)
    >>> traj = ns.trajectory(u0, n_frames=3, interval=0.1)
    >>> traj.shape, bool(traj[:, -1].pow(2).mean() < traj[:, 0].pow(2).mean())
    (torch.Size([1, 3, 3, 8, 8, 8]), True)
    """

    def __init__(self, n: int, nu: float = 0.02, dt: float = 0.02) -> None:
        self.n, self.nu, self.dt = n, nu, dt
        self.k = wavevector3d(n)
        self.kk = (self.k**2).sum(0)
        full = torch.fft.fftfreq(n, 1.0 / n, dtype=torch.float64).abs()
        fz, fy, fx = torch.meshgrid(full, full, full, indexing="ij")
        self.dealias = ((fx < n / 3) & (fy < n / 3) & (fz < n / 3)).to(torch.float64)
        self.decay = torch.exp(-nu * self.kk * dt)

    def _rhs(self, uh: torch.Tensor) -> torch.Tensor:
        u = torch.fft.ifftn(uh, dim=(-3, -2, -1)).real
        w = torch.fft.ifftn(_curl_hat(uh, self.k), dim=(-3, -2, -1)).real
        nl = torch.cross(u, w, dim=-4)
        return _project(torch.fft.fftn(nl, dim=(-3, -2, -1)) * self.dealias, self.k, self.kk)

    def step(self, uh: torch.Tensor) -> torch.Tensor:
        """One integrating-factor Heun step in Fourier space."""
        n1 = self._rhs(uh)
        pred = (uh + self.dt * n1) * self.decay
        n2 = self._rhs(pred)
        return uh * self.decay + 0.5 * self.dt * (n1 * self.decay + n2)

    def trajectory(self, u0: torch.Tensor, n_frames: int, interval: float) -> torch.Tensor:
        """Frames ``(B, n_frames, 3, n, n, n)`` every ``interval`` time units from ``u0``."""
        if u0.shape[-4:] != (3, self.n, self.n, self.n):
            raise ValueError(
                f"expected (B, 3, {self.n}, {self.n}, {self.n}), got {tuple(u0.shape)}"
            )
        sub = max(1, round(interval / self.dt))
        uh = torch.fft.fftn(u0.to(torch.float64), dim=(-3, -2, -1))
        frames = [u0.to(torch.float64)]
        for _ in range(n_frames - 1):
            for _ in range(sub):
                uh = self.step(uh)
            frames.append(torch.fft.ifftn(uh, dim=(-3, -2, -1)).real)
        return torch.stack(frames, 1)
