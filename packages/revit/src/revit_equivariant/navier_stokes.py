"""Offline PDE data: pseudo-spectral solvers on the periodic square ``[0, 2 pi)^2``.

Map of the simulators (the data of the paper's 2D experiments, at CPU scale):

* 2D incompressible Navier-Stokes in vorticity form
  ``d_t w + u . grad w = nu lap w - alpha w + curl f`` with ``u = grad^perp psi``,
  ``-lap psi = w``; decaying (``f = 0``) or Kolmogorov forced ``f = F sin(4 y) x_hat``
  (and its 45-degree on-torus variant ``F sin(4 (x + y)) (1, -1) / sqrt 2``):
  :class:`NavierStokes2D`. Time stepping is an integrating-factor Heun scheme (the linear
  part is integrated exactly), the nonlinear term is 2/3-dealiased.
* passive tracer ``d_t s + u . grad s = kappa lap s`` in a random steady divergence-free
  velocity: :class:`Advection2D`.
* the Taylor-Green vortex ``w = 2 sin x sin y e^{-2 nu t}``, an exact solution (the
  nonlinear term vanishes): :func:`taylor_green_vorticity`.
* Gaussian-random-field initial vorticity: :func:`random_vorticity`.

Arrays are ``(..., H, W)`` with ``y`` along H and ``x`` along W (the convention of
:mod:`revit_equivariant.group`), so velocities are returned as ``(u_x, u_y)`` channels.
"""

from __future__ import annotations

import math

import torch


def wavenumbers(
    n: int, dtype=torch.float64, derivative: bool = True
) -> tuple[torch.Tensor, torch.Tensor]:
    """Integer wavenumbers ``(ky, kx)`` of an ``rfft2`` of an ``n x n`` grid (domain 2 pi).

    With ``derivative=True`` the Nyquist wavenumber ``n/2`` is set to 0: its derivative is not
    defined on an even grid (its sign would break the reflection symmetry every 90-degree
    rotation contains).
    """
    ky = torch.fft.fftfreq(n, 1.0 / n, dtype=dtype)[:, None]
    kx = torch.fft.rfftfreq(n, 1.0 / n, dtype=dtype)[None, :]
    if derivative:
        ky = torch.where(ky.abs() == n // 2, 0.0, ky)
        kx = torch.where(kx.abs() == n // 2, 0.0, kx)
    return ky.expand(n, n // 2 + 1), kx.expand(n, n // 2 + 1)


def grid_coordinates(n: int, dtype=torch.float64) -> tuple[torch.Tensor, torch.Tensor]:
    """``(x, y)`` arrays of the cell-centred periodic grid, shape ``(n, n)``."""
    c = (torch.arange(n, dtype=dtype) + 0.5) * 2 * math.pi / n
    y, x = torch.meshgrid(c, c, indexing="ij")
    return x, y


def spectral_gradient(s: torch.Tensor) -> torch.Tensor:
    """``(d_x s, d_y s)`` of a periodic field ``(..., n, n)`` as ``(..., 2, n, n)``."""
    n = s.shape[-1]
    ky, kx = wavenumbers(n, s.dtype)
    sh = torch.fft.rfft2(s)
    dx = torch.fft.irfft2(1j * kx * sh, s=(n, n))
    dy = torch.fft.irfft2(1j * ky * sh, s=(n, n))
    return torch.stack([dx, dy], -3)


def velocity_from_vorticity(w: torch.Tensor) -> torch.Tensor:
    """``u = (d_y psi, -d_x psi)`` with ``-lap psi = w``: ``(..., 2, n, n)``, divergence free."""
    n = w.shape[-1]
    ky, kx = wavenumbers(n, w.dtype)
    k2 = kx**2 + ky**2
    psi = torch.fft.rfft2(w) / torch.where(k2 == 0, 1.0, k2)
    psi = torch.where(k2 == 0, 0.0, psi)
    u = torch.fft.irfft2(1j * ky * psi, s=(n, n))
    v = torch.fft.irfft2(-1j * kx * psi, s=(n, n))
    return torch.stack([u, v], -3)


def curl(f: torch.Tensor) -> torch.Tensor:
    """``d_x f_y - d_y f_x`` of a vector field ``(..., 2, n, n)``."""
    gx = spectral_gradient(f[..., 1, :, :])[..., 0, :, :]
    gy = spectral_gradient(f[..., 0, :, :])[..., 1, :, :]
    return gx - gy


def kolmogorov_forcing(n: int, amplitude: float = 1.0, angle: int = 0, wavenumber: int = 4):
    """Kolmogorov forcing as a vector field ``(2, n, n)``.

    ``angle=0``: ``F sin(k y) x_hat``; ``angle=90``: ``F sin(k x) (-y_hat)`` (the C4 image);
    ``angle=45``: ``F sin(k (x + y)) (1, -1) / sqrt 2`` (on-torus, divergence free).
    """
    x, y = grid_coordinates(n)
    f = torch.zeros(2, n, n, dtype=torch.float64)
    if angle == 0:
        f[0] = amplitude * torch.sin(wavenumber * y)
    elif angle == 90:
        f[1] = -amplitude * torch.sin(wavenumber * x)
    elif angle == 45:
        s = amplitude * torch.sin(wavenumber * (x + y)) / math.sqrt(2)
        f[0], f[1] = s, -s
    else:
        raise ValueError(f"forcing angle must be 0, 45 or 90, got {angle}")
    return f


def random_vorticity(
    batch: int, n: int, generator: torch.Generator, k_peak: float = 4.0, rms: float = 1.0
) -> torch.Tensor:
    """Gaussian random field with an isotropic spectrum peaked at ``k_peak``, rms ``rms``."""
    ky, kx = wavenumbers(n)
    k = (kx**2 + ky**2).sqrt()
    amp = k * torch.exp(-((k / k_peak) ** 2))
    noise = torch.randn(batch, n, n, generator=generator, dtype=torch.float64)
    w = torch.fft.irfft2(torch.fft.rfft2(noise) * amp, s=(n, n))
    return w / w.std(dim=(-2, -1), keepdim=True) * rms


def taylor_green_vorticity(n: int, t: float, nu: float) -> torch.Tensor:
    """Exact Taylor-Green vorticity ``2 sin x sin y exp(-2 nu t)`` on the ``n x n`` grid."""
    x, y = grid_coordinates(n)
    return 2 * torch.sin(x) * torch.sin(y) * math.exp(-2 * nu * t)


class NavierStokes2D:
    """Pseudo-spectral 2D incompressible Navier-Stokes (vorticity form), periodic.

    Parameters
    ----------
    n:
        Grid points per side.
    nu:
        Kinematic viscosity.
    drag:
        Linear (Rayleigh) drag ``alpha``.
    dt:
        Internal time step.
    forcing:
        Body force ``f`` as a vector field ``(2, n, n)`` or None (decaying turbulence).

    Examples
    --------
    >>> sim = NavierStokes2D(32, nu=0.05, dt=0.01)
    >>> w0 = taylor_green_vorticity(32, 0.0, 0.05)[None]
    >>> w1 = sim.run(w0, 1.0)
    >>> float((w1 - taylor_green_vorticity(32, 1.0, 0.05)).abs().max()) < 1e-10
    True
    """

    def __init__(
        self,
        n: int,
        nu: float = 1e-2,
        drag: float = 0.0,
        dt: float = 1e-2,
        forcing: torch.Tensor | None = None,
    ) -> None:
        if n < 4 or n % 2:
            raise ValueError(f"grid size must be even and >= 4, got {n}")
        self.n, self.nu, self.drag, self.dt = n, nu, drag, dt
        ky, kx = wavenumbers(n)
        self.kx, self.ky = kx, ky
        self.k2 = kx**2 + ky**2
        ry, rx = wavenumbers(n, derivative=False)
        self.decay = torch.exp(-(nu * (rx**2 + ry**2) + drag) * dt)
        kmax = n // 2
        self.dealias = (rx.abs() < 2 * kmax / 3) & (ry.abs() < 2 * kmax / 3)
        self.forcing_hat = None if forcing is None else torch.fft.rfft2(curl(forcing.double()))

    def _velocity_hat(self, wh: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        psi = wh / torch.where(self.k2 == 0, 1.0, self.k2)
        psi = torch.where(self.k2 == 0, 0.0, psi)
        return 1j * self.ky * psi, -1j * self.kx * psi

    def _rhs(self, wh: torch.Tensor) -> torch.Tensor:
        n = self.n
        uh, vh = self._velocity_hat(wh)
        u = torch.fft.irfft2(uh, s=(n, n))
        v = torch.fft.irfft2(vh, s=(n, n))
        wx = torch.fft.irfft2(1j * self.kx * wh, s=(n, n))
        wy = torch.fft.irfft2(1j * self.ky * wh, s=(n, n))
        nl = -torch.fft.rfft2(u * wx + v * wy) * self.dealias
        return nl if self.forcing_hat is None else nl + self.forcing_hat

    def step_hat(self, wh: torch.Tensor) -> torch.Tensor:
        """One integrating-factor Heun step in Fourier space."""
        n0 = self._rhs(wh)
        pred = self.decay * (wh + self.dt * n0)
        return self.decay * wh + 0.5 * self.dt * (self.decay * n0 + self._rhs(pred))

    def run(self, w: torch.Tensor, t: float) -> torch.Tensor:
        """Advance vorticity ``(B, n, n)`` by time ``t`` (a multiple of ``dt``)."""
        steps = round(t / self.dt)
        wh = torch.fft.rfft2(w.double())
        for _ in range(steps):
            wh = self.step_hat(wh)
        return torch.fft.irfft2(wh, s=(self.n, self.n))

    def trajectory(self, w: torch.Tensor, n_frames: int, interval: float) -> torch.Tensor:
        """Vorticity frames ``(B, n_frames, n, n)`` spaced by ``interval``."""
        frames = [w.double()]
        for _ in range(n_frames - 1):
            frames.append(self.run(frames[-1], interval))
        return torch.stack(frames, 1)


class Advection2D:
    """A passive tracer in a steady random divergence-free velocity, ``kappa`` diffusion.

    Examples
    --------
    >>> g = torch.Generator().manual_seed(0)
    >>> sim = Advection2D(16, g, batch=2)
    >>> s = sim.trajectory(torch.randn(2, 16, 16, generator=g, dtype=torch.float64), 3, 0.1)
    >>> s.shape, bool(sim.velocity.isfinite().all())
    (torch.Size([2, 3, 16, 16]), True)
    """

    def __init__(
        self, n: int, generator: torch.Generator, batch: int, kappa: float = 5e-3, dt: float = 1e-2
    ) -> None:
        self.n, self.dt = n, dt
        ky, kx = wavenumbers(n)
        self.kx, self.ky = kx, ky
        ry, rx = wavenumbers(n, derivative=False)
        k2 = rx**2 + ry**2
        self.decay = torch.exp(-kappa * k2 * dt)
        self.velocity = velocity_from_vorticity(random_vorticity(batch, n, generator, 2.0, 2.0))

    def _rhs(self, sh: torch.Tensor) -> torch.Tensor:
        n = self.n
        sx = torch.fft.irfft2(1j * self.kx * sh, s=(n, n))
        sy = torch.fft.irfft2(1j * self.ky * sh, s=(n, n))
        return -torch.fft.rfft2(self.velocity[:, 0] * sx + self.velocity[:, 1] * sy)

    def trajectory(self, s: torch.Tensor, n_frames: int, interval: float) -> torch.Tensor:
        """Tracer frames ``(B, n_frames, n, n)``."""
        sh = torch.fft.rfft2(s.double())
        out = [s.double()]
        for _ in range(n_frames - 1):
            for _ in range(round(interval / self.dt)):
                n0 = self._rhs(sh)
                pred = self.decay * (sh + self.dt * n0)
                sh = self.decay * sh + 0.5 * self.dt * (self.decay * n0 + self._rhs(pred))
            out.append(torch.fft.irfft2(sh, s=(self.n, self.n)))
        return torch.stack(out, 1)
