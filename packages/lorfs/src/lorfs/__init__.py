"""LoRFS: Overcoming PINNs Failure Modes in High Dimension with Low-Rank Fourier Sum (ICML 2026).

A PDE solution on a box is represented as a low-rank sum of separable Fourier series,
``u(z) = Re sum_r prod_j phi_{r,j}(z_j)``, so physics losses (the L2 residual, Ritz energies,
initial/boundary terms) and their gradients are evaluated in closed form, with no collocation
sampling, at a cost linear in the dimension.

Modules (one per concept of the method):

- :mod:`lorfs.basis` 1-D Fourier bases, multipliers, Grams, exact quadrature
- :mod:`lorfs.coefficients` per-axis coefficient vectors: padding and products
- :mod:`lorfs.fourier_sum` separable sums and the trainable :class:`LowRankFourierSum`
- :mod:`lorfs.operators` separable linear operators
- :mod:`lorfs.residual` closed-form losses (4-state recursion), Monte-Carlo estimator
- :mod:`lorfs.als` exact alternating least squares (linear PDEs), L2 fits, rank rounding
- :mod:`lorfs.time_slabs` nonlinear PDEs in any dimension: causal time slabs, Picard
  linearisation, closed-form nonlinear terms (coefficient convolutions, rank truncation)
- :mod:`lorfs.pde_spec` your own PDE from a YAML spec (``lorfs solve --spec``)
- :mod:`lorfs.gauss_newton` the 0.1 block Gauss-Newton (nonlinear PDEs, D <= 3; LoRFSModule)
- :mod:`lorfs.problems`, :mod:`lorfs.reference` benchmark problems and reference solutions (ETDRK4)
- :mod:`lorfs.lightning` LightningModules (LoRFS, PINN) and the problem datamodule
- :mod:`lorfs.pinn`, :mod:`lorfs.spectral` baselines (PINN networks, full-tensor spectral ceiling)
- :mod:`lorfs.deepxde_anchor` DeepXDE's PINN on the same problems (``bench`` extra)
- :mod:`lorfs.benchmark`, :mod:`lorfs.comparison`, :mod:`lorfs.plots` the runners, tables and
  figures of ``lorfs reproduce`` (:mod:`lorfs.reproduce`)

The names below are imported on first use (PEP 562), so ``lorfs --help`` starts without torch.
"""

import importlib
from importlib.metadata import PackageNotFoundError, version

_LAZY = {
    "FourierAxis": ".basis",
    "LowRankFourierSum": ".fourier_sum",
    "SeparableSum": ".fourier_sum",
    "solve_linear": ".als",
    "get_problem": ".problems",
    "relative_error_on": ".problems",
    "LoRFSModule": ".lightning",
    "PINNModule": ".lightning",
    "ProblemDataModule": ".lightning",
}


def __getattr__(name: str):
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


try:
    __version__ = version("lorfs")
except PackageNotFoundError:  # running from a source tree without installing
    __version__ = "0.0.0"

__all__ = sorted(_LAZY)
