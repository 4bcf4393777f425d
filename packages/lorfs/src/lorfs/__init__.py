"""LoRFS: Overcoming PINNs Failure Modes in High Dimension with Low-Rank Fourier Sum (ICML 2026).

A PDE solution on a box is represented as a low-rank sum of separable Fourier series,
``u(z) = Re sum_r prod_j phi_{r,j}(z_j)``, so physics losses (the L2 residual, Ritz energies,
initial/boundary terms) and their gradients are evaluated in closed form, with no collocation
sampling, at a cost linear in the dimension.

Modules (one per concept of the method):

- :mod:`lorfs.basis` 1-D Fourier bases, multipliers, Grams, exact quadrature
- :mod:`lorfs.fourier_sum` separable sums and the trainable :class:`LowRankFourierSum`
- :mod:`lorfs.operators` separable linear operators
- :mod:`lorfs.residual` closed-form losses (4-state recursion), Monte-Carlo estimator
- :mod:`lorfs.als` exact alternating least squares (linear PDEs)
- :mod:`lorfs.gauss_newton` block Gauss-Newton (nonlinear PDEs, D <= 3)
- :mod:`lorfs.problems`, :mod:`lorfs.reference` benchmark problems and reference solutions
- :mod:`lorfs.lightning_solver`, :mod:`lorfs.problem_data` Lightning module and datamodule
- :mod:`lorfs.pinn`, :mod:`lorfs.spectral` baselines (PINNs, full-tensor spectral ceiling)
- :mod:`lorfs.benchmark`, :mod:`lorfs.reproduce` the comparison harness and ``lorfs reproduce``
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("lorfs")
except PackageNotFoundError:  # running from a source tree without installing
    __version__ = "0.0.0"
