"""The comparison tables of ``lorfs reproduce``: problems x methods, the high-d panel, loss variance.

Paper: Kaminsky, Freedman, Radinsky, "Overcoming PINNs Failure Modes in High Dimension with
Low-Rank Fourier Sum", ICML 2026 (notes, Sec. B4). Every cell is computed in the same run on
the same machine by the public runners of :mod:`lorfs.benchmark` and
:mod:`lorfs.deepxde_anchor`:

1. :func:`headline_table`: each cell ``relative L2 error / seconds`` for LoRFS (exact ALS or
   time slabs + Picard), the PINN (4 x 50 tanh MLP, Latin-hypercube collocation, Adam then
   L-BFGS, float32 and float64), a Fourier-feature PINN, a separable PINN, DeepXDE's PINN and
   the full-tensor spectral ceiling (linear, ``D <= 3``);
2. :func:`high_d_table`: error and time vs ``d`` for LoRFS on the torus problems and for the
   PINN at a fixed budget on high-d convection;
3. :func:`variance_table`: relative standard deviation of the Monte-Carlo (collocation) loss
   estimate vs ``d`` against the closed form, which has none;
4. :func:`nonlinear_table`: the nonlinear rows solved by the time slabs
   (:mod:`lorfs.time_slabs`) against their exact or ETDRK4 references.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from icml26_shared.results import Table

from .benchmark import MethodRun, mc_variance, solve_problem, spectral_run, train_pinn
from .deepxde_anchor import deepxde_available, train_deepxde

METHODS = ["LoRFS", "PINN", "PINN fp64", "FF-PINN", "SPINN", "DeepXDE", "spectral"]
# PINN variants of the headline table: label -> (architecture, precision)
PINN_VARIANTS = {
    "PINN": ("mlp", "float32"),
    "PINN fp64": ("mlp", "float64"),
    "FF-PINN": ("fourier", "float32"),
    "SPINN": ("separable", "float32"),
}


@dataclass
class PINNBudget:
    """Training budget of every PINN (ours and DeepXDE's) in one comparison."""

    adam_steps: int
    lbfgs_steps: int  # L-BFGS steps of 50 inner iterations each, after Adam
    collocation: int  # Latin-hypercube collocation points


def cell(run: MethodRun | None) -> str:
    """``"error / seconds"`` as shown in the tables (empty: not run).

    >>> cell(MethodRun("p", "LoRFS", 1.234e-8, 0.56))
    '1.23e-08 / 0.6s'
    """
    return "" if run is None else f"{run.error:.2e} / {run.seconds:.1f}s"


def run_method(
    label: str, problem: str, params: Mapping, budget: PINNBudget, seed: int, n_test: int
) -> MethodRun | None:
    """One baseline cell: a PINN variant, ``"DeepXDE"`` (``None`` if absent) or ``"spectral"``."""
    if label == "spectral":
        return spectral_run(problem, dict(params), seed=seed, n_test=n_test)
    if label == "DeepXDE":
        if not deepxde_available():
            return None
        return train_deepxde(problem, dict(params), adam_steps=budget.adam_steps,
                             lbfgs_steps=budget.lbfgs_steps, n_collocation=budget.collocation,
                             seed=seed, n_test=n_test)  # fmt: skip
    if label not in PINN_VARIANTS:
        raise ValueError(f"unknown method {label!r}; choose from {', '.join(METHODS[1:])}")
    arch, precision = PINN_VARIANTS[label]
    return train_pinn(problem, dict(params), arch=arch, precision=precision,
                      adam_steps=budget.adam_steps, lbfgs_steps=budget.lbfgs_steps,
                      n_collocation=budget.collocation, seed=seed, n_test=n_test)  # fmt: skip


def headline_table(
    rows: Sequence[Mapping], budget: PINNBudget, n_test: int, seed: int = 0,
    lorfs: Mapping[str, Mapping] | None = None,
) -> tuple[Table, list[MethodRun]]:  # fmt: skip
    """The problems x methods table.

    Args:
        rows: ``{problem, params, baselines}`` per row (``baselines``: labels of :data:`METHODS`
            run besides LoRFS).
        budget: PINN budget.
        n_test: Test points of the relative L2 error.
        seed: Seed of every method.
        lorfs: LoRFS settings per problem name (``rank``, ``modes``, ``sweeps``) where the
            registry defaults are not the ones used.
    """
    table = Table(
        "Relative L2 error / wall time, same machine and run", ["problem", *METHODS],
        notes=(
            f"PINN budget: {budget.adam_steps} Adam steps (lr 1e-3) + {budget.lbfgs_steps} L-BFGS "
            f"steps of 50 iterations, {budget.collocation} Latin-hypercube collocation points, "
            "4 x 50 tanh MLP (FF-PINN: 64 random Fourier features; SPINN: per-axis 4 x 50 MLPs, "
            "16 features). LoRFS: exact greedy + joint ALS (linear) or causal time slabs with "
            "Picard linearisation and closed-form (convolution) nonlinear terms (nonlinear), "
            "float64; references: exact (convection, reaction, torus, Dirichlet) or ETDRK4 "
            "(reaction-diffusion, Allen-Cahn). spectral: full-tensor least squares in "
            "the same bases (linear, D <= 3). DeepXDE: DeepXDE's FNN PINN (PyTorch backend) with "
            "the PINN's architecture and budget, "
            + ("float32." if deepxde_available() else "skipped: deepxde is not installed.")
            + " Empty: not run."
        ),
    )  # fmt: skip
    runs: list[MethodRun] = []
    for row in rows:
        name, params = row["problem"], dict(row.get("params") or {})
        settings = dict((lorfs or {}).get(name, {}))
        _progress(f"{name} {params}: LoRFS")
        cells = {"LoRFS": solve_problem(name, params, seed=seed, n_test=n_test, **settings)}
        for label in row.get("baselines", []):
            _progress(f"{name} {params}: {label}")
            cells[label] = run_method(label, name, params, budget, seed, n_test)
        runs += [r for r in cells.values() if r is not None]
        table.add_row(problem=cells["LoRFS"].problem, **{m: cell(cells.get(m)) for m in METHODS})
    return table, runs


# LoRFS problems of the high-d panel (with their extra parameters)
HIGH_D_PROBLEMS = (("torus_poisson", {}), ("torus_heat", {}), ("convection_nd", {"beta": 30}))


def high_d_table(
    d: Sequence[int], pinn_d: Sequence[int], budget: PINNBudget, n_test: int, seed: int = 0
) -> tuple[Table, list[dict]]:
    """Error and time vs ``d``: LoRFS on the torus problems, the PINN on high-d convection.

    ``pinn_d`` must be a subset of ``d`` (the PINN row shares the table's columns).
    """
    if not set(pinn_d) <= set(d):
        raise ValueError(f"high_d: pinn_d {list(pinn_d)} must be a subset of d {list(d)}")
    table = Table(
        "High-dimensional panel: relative L2 error / seconds vs d",
        ["method", "problem", *[f"d={k}" for k in d]],
        notes=(
            "PINN at the fixed budget of the headline table; torus problems need the Laplacian, "
            "which by autograd costs d backward passes per step, so the PINN is shown on "
            "convection_nd (first derivatives only)."
        ),
    )
    points: list[dict] = []

    def record(method: str, problem: str, k: int, run: MethodRun) -> str:
        points.append({"method": method, "problem": problem, "d": k, "error": run.error,
                       "seconds": run.seconds})  # fmt: skip
        return cell(run)

    for name, extra in HIGH_D_PROBLEMS:
        row = {"method": "LoRFS", "problem": name}
        for k in d:
            run = solve_problem(name, {"d": k, **extra}, seed=seed, n_test=n_test)
            row[f"d={k}"] = record("LoRFS", name, k, run)
        table.add_row(**row)
    row = {"method": "PINN", "problem": "convection_nd"}
    for k in pinn_d:
        run = run_method("PINN", "convection_nd", {"d": k, "beta": 30}, budget, seed, n_test)
        row[f"d={k}"] = record("PINN", "convection_nd", k, run)
    table.add_row(**row)
    return table, points


def variance_table(
    d: Sequence[int], samples: int, repeats: int, seed: int = 0
) -> tuple[Table, list[dict]]:
    """Monte-Carlo loss-estimate spread vs ``d`` for ``prod_j (1 + 0.5 sin x_j)`` (:func:`mc_variance`).

    The closed form is checked against ``(1 + a^2/2)^d`` on every row.
    """
    table = Table(
        "Loss-estimate variance: ||u||^2 of prod_j (1 + 0.5 sin x_j), closed form vs Monte Carlo",
        ["d", "closed form", "closed form time (ms)", "MC rel. std (measured)",
         "MC rel. std (theory)"],
        notes=(
            f"Monte Carlo: {samples} uniform points, {repeats} repeats. Theory: "
            "sqrt((kappa^d - 1) / N), kappa = 1.401. The closed form has zero variance; its value "
            "is checked against (1 + a^2/2)^d. At large d the measured spread falls below the "
            "theory because the estimator is heavy-tailed: the rare samples that carry the mean "
            "are missed, so a sample standard deviation understates the true one (and the MC "
            "estimate itself is biased low in practice)."
        ),
    )  # fmt: skip
    rows = []
    for k in d:
        v = mc_variance(k, samples, repeats, seed)
        if abs(v["exact"] - v["exact_formula"]) > 1e-9 * v["exact_formula"]:
            raise AssertionError(
                f"closed form {v['exact']} != formula {v['exact_formula']} at d={k}"
            )
        table.add_row(d=k, **{"closed form": v["exact"],
                              "closed form time (ms)": 1e3 * v["closed_seconds"],
                              "MC rel. std (measured)": v["mc_rel_std"],
                              "MC rel. std (theory)": v["theory_rel_std"]})  # fmt: skip
        rows.append(v)
    return table, rows


def _progress(line: str) -> None:
    """One progress line per table row on stderr (a reproduce run takes minutes)."""
    import sys

    print(f"  {line}", file=sys.stderr, flush=True)


def nonlinear_table(
    rows: Sequence[Mapping], n_test: int, seed: int
) -> tuple[Table, list[tuple[str, float]]]:
    """LoRFS (causal time slabs + Picard) on each ``{problem, params, rank, modes, slabs}`` row
    against its independent reference; returns the table and ``(problem, error)`` points."""
    import importlib.util
    import time

    import torch

    from .problems import build_problem, relative_error_on
    from .time_slabs import solve_nonlinear

    table = Table(
        "Nonlinear rows: LoRFS (causal time slabs + Picard) against independent references",
        ["problem", "reference", "rank", "modes (t per slab, x)", "slabs", "rel. L2 error",
         "rel. L2 error vs py-pde", "CPU s"],
        notes=(
            "Reference: the exact logistic solution (reaction) or ETDRK4 (Kassam & Trefethen 2005; "
            "512 nodes for Allen-Cahn, 256 for reaction-diffusion, 2000 steps; for the d-dimensional "
            "plane wave the 1-D problem in s = x_1 + ... + x_d, 1000 steps). Second, independent "
            "reference: py-pde (Zwicker 2020; finite differences, adaptive Runge-Kutta, tolerance "
            "1e-10; 1024 nodes for reaction and reaction-diffusion, 2048 for Allen-Cahn, 512 in s), "
            "empty when py-pde (the bench extra) is not installed. LoRFS is "
            "deterministic here (the seed only perturbs terms beyond the initial condition's rank "
            "at 1e-6). CPU s: process CPU time of the solve."
        ),
    )  # fmt: skip
    points = []
    for row in rows:
        problem = build_problem(row["problem"], row.get("params"))
        _progress(f"{problem.name}: LoRFS time slabs, then the references")
        modes = list(row["modes"])
        if len(modes) == 2 and problem.dim > 2:  # [t, x]: the same modes on every space axis
            modes = [modes[0]] + [modes[1]] * (problem.dim - 1)
        cpu = time.process_time()
        sol = solve_nonlinear(problem, rank=row["rank"], modes=modes, slabs=row["slabs"], seed=seed)
        cpu = time.process_time() - cpu
        err = relative_error_on(problem, sol, n=n_test, seed=seed + 1)
        err_pp = None
        if problem.pypde is not None and importlib.util.find_spec("pde") is not None:
            pts, vals = problem.pypde()
            with torch.no_grad():
                err_pp = float((sol(pts) - vals).norm() / vals.norm())
        table.add_row(
            problem=problem.name,
            reference="exact" if problem.exact is not None else "ETDRK4",
            rank=row["rank"],
            **{"modes (t per slab, x)": str(row["modes"]), "slabs": row["slabs"]},
            **{"rel. L2 error": err, "rel. L2 error vs py-pde": err_pp, "CPU s": round(cpu, 1)},
        )
        points.append((problem.name, err))
    return table, points
