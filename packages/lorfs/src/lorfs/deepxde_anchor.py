"""The DeepXDE PINN anchor: the field's standard PINN library on the same problems.

Paper: Kaminsky, Freedman, Radinsky, "Overcoming PINNs Failure Modes in High Dimension with
Low-Rank Fourier Sum", ICML 2026 (notes, Sec. B4: PINN baselines). DeepXDE (Lu et al., SIAM
Review 2021) is installed by the ``bench`` extra and run with its PyTorch backend.

- :func:`deepxde_available`: whether ``deepxde`` can be imported
- :func:`deepxde_residual`: the problem's residual in DeepXDE's ``pde(z, u)`` form
- :func:`train_deepxde`: build the problem in DeepXDE's own terms (``GeometryXTime``,
  ``TimePDE``, ``PeriodicBC``, ``IC``), train Adam then L-BFGS, and score the network with
  :func:`~lorfs.problems.relative_error_on` on the same test points as every other method

Scope: the 1-D time-dependent problems on a periodic interval without a source term
(convection, reaction, reaction-diffusion, Allen-Cahn). The residual is the problem's own
operator ``sum_j c_jm d^m u / dz_j^m + c0 u + sum_p a_p u^p`` written with DeepXDE's
``grad.jacobian`` / ``grad.hessian``, so DeepXDE solves exactly the equation the other
methods solve.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import math
import os
import time

import numpy as np
import torch

from .benchmark import MethodRun
from .problems import build_problem, relative_error_on

__all__ = ["deepxde_available", "deepxde_residual", "import_deepxde", "train_deepxde"]


def deepxde_available() -> bool:
    """Whether the DeepXDE anchor can run (``pip install 'lorfs[bench]'``)."""
    return importlib.util.find_spec("deepxde") is not None


def import_deepxde():
    """Import DeepXDE quietly with its PyTorch backend (clear error when it is missing)."""
    if not deepxde_available():
        raise RuntimeError("the DeepXDE anchor needs deepxde: pip install 'lorfs[bench]'")
    os.environ.setdefault("DDE_BACKEND", "pytorch")
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        import deepxde as dde
    if dde.backend.backend_name != "pytorch":
        raise RuntimeError(
            f"the DeepXDE anchor needs DeepXDE's pytorch backend, got {dde.backend.backend_name!r}"
            " (set DDE_BACKEND=pytorch)"
        )
    return dde


def check_scope(problem) -> None:
    """Raise ``ValueError`` unless ``problem`` is in the anchor's scope (see the module doc)."""
    kinds = [s.boundary for s in problem.specs]
    if kinds != ["time", "periodic"] or problem.source is not None or problem.initial is None:
        raise ValueError(
            f"the DeepXDE anchor covers 1-D periodic time-dependent problems without a source; "
            f"{problem.name} has axes {kinds}"
        )
    for orders in problem.operator.derivatives.values():
        if any(m not in (1, 2) for m in orders):
            raise ValueError(f"{problem.name}: DeepXDE anchor supports derivative orders 1 and 2")


# problem axes are (t, x); DeepXDE's GeometryXTime orders its inputs (x, t)
_COLUMN = {0: 1, 1: 0}


def deepxde_residual(problem, dde):
    """The problem's residual as a DeepXDE ``pde(z, u)`` with ``z = (x, t)``; shape ``(N, 1)``."""
    op = problem.operator

    def pde(z, u):
        res = op.constant * u
        for p, a in problem.reaction.items():
            res = res + a * u**p
        for j, orders in op.derivatives.items():
            for m, c in orders.items():
                c = float(c.real if isinstance(c, complex) else c)
                k = _COLUMN[j]
                d = (
                    dde.grad.jacobian(u, z, i=0, j=k)
                    if m == 1
                    else dde.grad.hessian(u, z, i=k, j=k)
                )
                res = res + c * d
        return res

    return pde


def train_deepxde(
    name: str,
    params: dict | None = None,
    adam_steps: int = 1000,
    lbfgs_steps: int = 5,
    lbfgs_iter: int = 50,
    n_collocation: int = 2000,
    width: int = 50,
    depth: int = 4,
    seed: int = 0,
    n_test: int = 10_000,
) -> MethodRun:
    """Train DeepXDE's FNN PINN on problem ``name`` with the same budget as the PINN baseline.

    The budget matches :func:`~lorfs.benchmark.train_pinn`: ``adam_steps`` Adam steps at
    lr 1e-3, then L-BFGS for ``lbfgs_steps * lbfgs_iter`` iterations, a ``depth`` x ``width``
    tanh MLP (Glorot normal), ``n_collocation`` Latin-hypercube interior points, float32.
    """
    dde = import_deepxde()
    problem = build_problem(name, params)
    check_scope(problem)
    (t0, t1), (x0, x1) = (s.domain for s in problem.specs)
    pde = deepxde_residual(problem, dde)

    def initial(z):  # z: (N, 2) numpy (x, t); the time coordinate is ignored
        pts = torch.as_tensor(z[:, [1, 0]], dtype=torch.float64)
        return problem.initial_values(pts).numpy().reshape(-1, 1)

    saved = torch.get_default_dtype()
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            dde.config.set_default_float("float32")
            dde.config.set_random_seed(seed)
        geomtime = dde.geometry.GeometryXTime(
            dde.geometry.Interval(x0, x1), dde.geometry.TimeDomain(t0, t1)
        )
        bc = dde.icbc.PeriodicBC(geomtime, 0, lambda _, on_boundary: on_boundary)
        ic = dde.icbc.IC(geomtime, initial, lambda _, on_initial: on_initial)
        data = dde.data.TimePDE(
            geomtime,
            pde,
            [bc, ic],
            num_domain=n_collocation,
            num_boundary=256,
            num_initial=256,
            train_distribution="LHS",
        )
        net = dde.nn.FNN([2] + [width] * depth + [1], "tanh", "Glorot normal")
        model = dde.Model(data, net)
        start = time.perf_counter()
        with contextlib.redirect_stdout(io.StringIO()):
            model.compile("adam", lr=1e-3, verbose=0)
            model.train(iterations=adam_steps, display_every=max(adam_steps, 1), verbose=0)
            if lbfgs_steps > 0:
                dde.optimizers.set_LBFGS_options(maxiter=lbfgs_steps * lbfgs_iter)
                model.compile("L-BFGS", verbose=0)
                model.train(display_every=10**9, verbose=0)
        seconds = time.perf_counter() - start

        def predict(pts: torch.Tensor) -> torch.Tensor:
            z = pts[:, [1, 0]].to(torch.float32).numpy()
            return torch.as_tensor(np.asarray(model.predict(z)), dtype=torch.float64)

        err = relative_error_on(problem, predict, n=n_test, seed=seed + 1)
        n_params = sum(p.numel() for p in net.parameters())
    finally:
        torch.set_default_dtype(saved)
    if not math.isfinite(err):
        err = float("nan")
    return MethodRun(problem.name, "DeepXDE", err, seconds, n_params, 0, "DeepXDE Adam+L-BFGS")
