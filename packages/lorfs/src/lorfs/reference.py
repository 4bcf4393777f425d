"""Reference solutions of the 1-D reaction-diffusion and Allen-Cahn benchmarks (no exact formula).

Paper: Kaminsky, Freedman, Radinsky, "Overcoming PINNs Failure Modes in High Dimension with
Low-Rank Fourier Sum", ICML 2026 (benchmarks from the PINN failure-mode literature).

``u_t = nu u_xx + R(u)`` on a periodic interval, solved by second-order Strang splitting
(notes, Sec. B4, problem 3): a half step of the *exact* Fourier diffusion propagator
``e^{-nu k^2 dt/2}``, a full step of the *exact* reaction flow, another half diffusion step.
Exact reaction flows:

- logistic ``u' = rho u (1 - u)``: ``u e^{rho t} / (u e^{rho t} + 1 - u)``;
- Allen-Cahn ``u' = a (u - u^3)``: ``u e^{a t} / sqrt(1 + u^2 (e^{2 a t} - 1))``.

(The notes suggest ETDRK4 for Allen-Cahn; Strang splitting with exact sub-flows is used for
both here, with a small step. It is second order in ``dt``.)
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
