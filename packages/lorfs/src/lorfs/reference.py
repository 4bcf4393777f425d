"""Reference solutions of the 1-D reaction-diffusion and Allen-Cahn benchmarks (no exact formula).

Paper: Kaminsky, Freedman, Radinsky, "Overcoming PINNs Failure Modes in High Dimension with
Low-Rank Fourier Sum", ICML 2026 (benchmarks from the PINN failure-mode literature).

``u_t = nu u_xx + R(u)`` on a periodic interval, solved by second-order Strang splitting
(notes, Sec. B4, problem 3): a half step of the *exact* Fourier diffusion propagator
``e^{-nu k^2 dt/2}``, a full step of the *exact* reaction flow, another half diffusion step.
Exact reaction flows:

- logistic ``u' = rho u (1 - u)``: ``u e^{rho t} / (u e^{rho t} + 1 - u)``;
- Allen-Cahn ``u' = a (u - u^3)``: ``u e^{a t} / sqrt(1 + u^2 (e^{2 a t} - 1))``.

The independent reference of the nonlinear rows is :func:`etdrk4`, the fourth-order
exponential time-differencing Runge-Kutta scheme of Cox & Matthews (2002) with the
contour-integral evaluation of its coefficients of Kassam & Trefethen (2005), "Fourth-order
time-stepping for stiff PDEs", SIAM J. Sci. Comput. 26(4): a Fourier pseudo-spectral method of
lines on a periodic grid, sharing no code with LoRFS (no low-rank format, no least squares). It
is checked against the exact logistic flow and against :func:`strang_splitting` (second order,
kept as a cross-check) in the tests.

:func:`py_pde_solve` solves the same problems with **py-pde** (Zwicker 2020, "py-pde: A Python
package for solving partial differential equations", JOSS 5(48), 2158), an independent solver
from PyPI (the ``bench`` extra): second-order finite differences on a cell-centred periodic grid
and adaptive explicit Runge-Kutta time stepping. It is the second, independent reference of every
nonlinear row; the tests check that it agrees with :func:`etdrk4` far below the errors quoted.
"""

from __future__ import annotations

import numpy as np


def logistic_flow(u: np.ndarray, rho: float, t: float) -> np.ndarray:
    """Exact solution of ``u' = rho u (1 - u)`` after time ``t``."""
    e = np.exp(rho * t)
    return u * e / (u * e + 1.0 - u)


def allen_cahn_flow(u: np.ndarray, a: float, t: float) -> np.ndarray:
    """Exact solution of ``u' = a (u - u^3)`` after time ``t``."""
    e = np.exp(a * t)
    return u * e / np.sqrt(1.0 + u**2 * (e**2 - 1.0))


def strang_splitting(
    u0: np.ndarray,
    length: float,
    nu: float,
    flow,
    t_end: float,
    n_steps: int,
    n_out: int,
) -> tuple[np.ndarray, np.ndarray]:
    """Solve ``u_t = nu u_xx + R(u)`` on a periodic grid; returns ``(times (n_out,), u (n_out, N))``.

    ``flow(u, dt)`` is the exact reaction flow over ``dt``; ``n_steps`` must be a multiple of
    ``n_out - 1`` so that the output times fall on steps.
    """
    n = u0.shape[0]
    if (n_steps % (n_out - 1)) != 0:
        raise ValueError("n_steps must be a multiple of n_out - 1")
    k = 2 * np.pi * np.fft.fftfreq(n, d=length / n)
    dt = t_end / n_steps
    half = np.exp(-nu * k**2 * dt / 2)
    out = [u0.copy()]
    u = u0.copy()
    every = n_steps // (n_out - 1)
    for step in range(1, n_steps + 1):
        u = np.real(np.fft.ifft(half * np.fft.fft(u)))
        u = flow(u, dt)
        u = np.real(np.fft.ifft(half * np.fft.fft(u)))
        if step % every == 0:
            out.append(u.copy())
    return np.linspace(0.0, t_end, n_out), np.stack(out)


def etdrk4(
    u0: np.ndarray,
    length: float,
    nu: float,
    reaction,
    t_end: float,
    n_steps: int,
    n_out: int,
    contour_points: int = 32,
) -> tuple[np.ndarray, np.ndarray]:
    """ETDRK4 (Kassam & Trefethen 2005) for ``u_t = nu u_xx + reaction(u)`` on a periodic grid.

    ``u0``: values on ``N`` equispaced nodes of a period ``length``; ``reaction(u)`` the
    pointwise nonlinear term. Returns ``(times (n_out,), u (n_out, N))``; ``n_steps`` must be a
    multiple of ``n_out - 1``.

    Examples
    --------
    >>> x = 2 * np.pi * np.arange(64) / 64
    >>> h = 0.5 + 0.1 * np.sin(x)
    >>> t, u = etdrk4(h, 2 * np.pi, 0.0, lambda v: 3 * v * (1 - v), 1.0, 50, 2)
    >>> bool(np.abs(u[-1] - logistic_flow(h, 3.0, 1.0)).max() < 1e-8)
    True
    """
    n = u0.shape[0]
    if (n_steps % (n_out - 1)) != 0:
        raise ValueError("n_steps must be a multiple of n_out - 1")
    k = 2 * np.pi * np.fft.fftfreq(n, d=length / n)
    lin = -nu * k**2
    h = t_end / n_steps
    e, e2 = np.exp(h * lin), np.exp(h * lin / 2)
    r = np.exp(1j * np.pi * (np.arange(1, contour_points + 1) - 0.5) / contour_points)
    lr = h * lin[:, None] + r[None, :]
    q = h * np.real(np.mean((np.exp(lr / 2) - 1) / lr, axis=1))
    f1 = h * np.real(np.mean((-4 - lr + np.exp(lr) * (4 - 3 * lr + lr**2)) / lr**3, axis=1))
    f2 = h * np.real(np.mean((2 + lr + np.exp(lr) * (-2 + lr)) / lr**3, axis=1))
    f3 = h * np.real(np.mean((-4 - 3 * lr - lr**2 + np.exp(lr) * (4 - lr)) / lr**3, axis=1))

    def nl(v):
        return np.fft.fft(reaction(np.real(np.fft.ifft(v))))

    v = np.fft.fft(u0)
    out = [np.asarray(u0, dtype=float).copy()]
    every = n_steps // (n_out - 1)
    for step in range(1, n_steps + 1):
        nv = nl(v)
        a = e2 * v + q * nv
        na = nl(a)
        b = e2 * v + q * na
        nb = nl(b)
        c = e2 * a + q * (2 * nb - nv)
        nc = nl(c)
        v = e * v + nv * f1 + 2 * (na + nb) * f2 + nc * f3
        if step % every == 0:
            out.append(np.real(np.fft.ifft(v)))
    return np.linspace(0.0, t_end, n_out), np.stack(out)


def py_pde_solve(
    u0,
    a: float,
    length: float,
    n: int,
    nu: float,
    reaction: str,
    t_end: float,
    n_out: int = 101,
    tolerance: float = 1e-10,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``u_t = nu u_xx + reaction(u)`` on ``[a, a + length)`` periodic, solved by py-pde.

    ``u0``: a function of the node coordinates (numpy); ``reaction``: py-pde's expression in
    ``u`` (e.g. ``"5 * u * (1 - u)"``). Returns ``(times (n_out,), x (n,), u (n_out, n))`` on
    py-pde's cell-centred nodes ``x_i = a + (i + 1/2) length / n``.

    Examples
    --------
    >>> t, x, u = py_pde_solve(lambda x: 0.5 + 0.1 * np.sin(x), 0.0, 2 * np.pi, 32, 0.0,
    ...                        "3 * u * (1 - u)", 1.0, n_out=2)
    >>> bool(np.abs(u[-1] - logistic_flow(0.5 + 0.1 * np.sin(x), 3.0, 1.0)).max() < 1e-7)
    True
    """
    try:
        import pde
    except ImportError as exc:  # the bench extra
        raise ImportError(
            "the py-pde reference needs the 'bench' extra: pip install 'lorfs[bench]'"
        ) from exc
    grid = pde.CartesianGrid([[a, a + length]], [int(n)], periodic=True)
    x = np.asarray(grid.axes_coords[0], dtype=float)
    eq = pde.PDE({"u": f"{float(nu)!r} * laplace(u) + {reaction}"})
    storage = pde.MemoryStorage()
    eq.solve(
        pde.ScalarField(grid, u0(x)),
        t_range=float(t_end),
        dt=1e-3 * float(t_end),
        solver="runge-kutta",
        adaptive=True,
        tolerance=tolerance,
        tracker=[storage.tracker(float(t_end) / (n_out - 1))],
        backend="numpy",
    )
    return np.asarray(storage.times, dtype=float), x, np.asarray(storage.data, dtype=float)
