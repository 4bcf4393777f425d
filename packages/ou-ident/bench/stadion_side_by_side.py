"""stadion itself next to our port of its linear SDE estimator, on the same samples.

Reference: Lorch, Krause & Schoelkopf, "Causal Modeling with Stationary Diffusions",
AISTATS 2024; PyPI package ``stadion`` 1.0.2. stadion needs TensorFlow and a JAX that still
has ``jax.tree_map`` (JAX <= 0.4.x), so it cannot be installed next to this workspace; this
script runs it in an isolated virtual environment, through a subprocess
(``stadion_worker.py``), and compares it with :mod:`ou_ident.stationary_diffusion`:

1. the KDS loss itself (the estimator's objective): stadion's ``kds_loss`` (JAX autodiff of
   the generator, float64) against our closed form, at random parameters, for the linear and
   the U-statistic estimators;
2. the fitted drift: stadion's ``LinearSDE().fit`` at its defaults (bandwidth 5, lr 3e-3,
   batch 128, sparsity 1e-3, diagonal fixed to -1) against ``fit_stationary_diffusion`` with
   the same defaults and number of steps, on the same pseudo-samples of the comparison
   section's problems (degradation, one per SCC). The two optimisers draw different
   minibatches, so the fits agree only up to the Adam noise; the table shows that noise next to
   each fit's error to the planted drift.

Usage (from the package folder; creates the environment on first use, needs ``uv`` and PyPI)::

    python bench/stadion_side_by_side.py --out results/stadion
    python bench/stadion_side_by_side.py --python /path/to/venv/bin/python --out results/stadion

Writes ``OUT/results.json`` and ``OUT/results.md`` (section ``stadion``) atomically.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

STADION_PINS = ["stadion==1.0.2", "jax==0.4.30", "jaxlib==0.4.30"]
WORKER = Path(__file__).with_name("stadion_worker.py")


def fail(msg: str) -> None:
    print(f"stadion_side_by_side: error: {msg}", file=sys.stderr)
    raise SystemExit(2)


def stadion_python(venv: Path) -> Path:
    """The isolated environment's interpreter, created with uv on first use."""
    python = venv / "bin" / "python"
    if python.exists():
        return python
    uv = shutil.which("uv")
    if uv is None:
        fail("uv is needed to create the isolated stadion environment (or pass --python)")
    print(f"creating the stadion environment in {venv} (TensorFlow + JAX, a few minutes)")
    for cmd in (
        [uv, "venv", str(venv), "--python", "3.11", "-q"],
        [uv, "pip", "install", "-q", "--python", str(python), *STADION_PINS],
    ):
        res = subprocess.run(cmd, capture_output=True, text=True)
        if res.returncode != 0:
            last = (res.stderr.strip().splitlines() or ["no output"])[-1]
            fail(f"{' '.join(cmd[:3])} failed (offline?): {last}")
    return python


def run_case(python: Path, p: int, n: int, steps: int, seed: int, work: Path) -> dict:
    from ou_ident.baselines import pseudo_samples
    from ou_ident.recovery_metrics import edge_auroc, scale_aligned_rel_error
    from ou_ident.stationary_diffusion import fit_stationary_diffusion, kds_loss
    from ou_ident.synthetic import make_problem

    prob = make_problem(p, "degradation", seed=seed)
    data = prob.moments(n, seed=seed)
    n_max = 10_000
    xs = [  # the very samples fit_stationary_diffusion draws internally
        pseudo_samples(d.mean, d.cov, int(min(d.n or n_max, n_max)), seed + k)
        for k, d in enumerate(data)
    ]
    targets = np.zeros((len(data), p), dtype=np.int32)
    for e, d in enumerate(data):
        targets[e, list(d.environment.targets)] = 1
    rng = np.random.default_rng(seed)
    probe_A = rng.normal(0.0, 0.3, (5, p, p)) - np.eye(p)
    probe_b = rng.normal(0.0, 1.0, (5, p))
    probe_s = np.exp(rng.normal(0.0, 0.5, (5, p)))
    probe_x = xs[0][:128]
    src, dst = work / f"in-{p}-{seed}.npz", work / f"out-{p}-{seed}.npz"
    np.savez(src, n_env=len(xs), targets=targets, steps=steps, seed=seed, probe_x=probe_x,
             probe_A=probe_A, probe_b=probe_b, probe_s=probe_s,
             **{f"x{e}": x for e, x in enumerate(xs)})  # fmt: skip
    t0 = time.perf_counter()
    res = subprocess.run([str(python), str(WORKER), str(src), str(dst)], capture_output=True,
                         text=True)  # fmt: skip
    t_stadion = time.perf_counter() - t0
    if res.returncode != 0:
        last = (res.stderr.strip().splitlines() or ["no output"])[-1]
        fail(f"stadion worker failed: {last}")
    out = np.load(dst)
    import torch

    def t(a):
        return torch.as_tensor(a, dtype=torch.float64)

    ours = {
        est: np.array([float(kds_loss(t(probe_x), t(A), t(b), t(s), 5.0, est))
                       for A, b, s in zip(probe_A, probe_b, probe_s, strict=True)])
        for est in ("linear", "u-statistic")
    }  # fmt: skip
    rel = max(
        float(np.max(np.abs(ours["linear"] - out["kds_linear"]) / np.abs(out["kds_linear"]))),
        float(np.max(np.abs(ours["u-statistic"] - out["kds_u"]) / np.abs(out["kds_u"]))),
    )
    t0 = time.perf_counter()
    fit = fit_stationary_diffusion(data, steps=steps, n_max=n_max, seed=seed)
    t_ours = time.perf_counter() - t0
    A_s, A_o, A = out["weights"], fit.A, prob.params.A
    off = ~np.eye(p, dtype=bool)
    return {
        "kds rel diff": rel,
        "A diff": float(np.linalg.norm(A_o - A_s) / np.linalg.norm(A_s)),
        "stadion err": scale_aligned_rel_error(A_s, A),
        "ours err": scale_aligned_rel_error(A_o, A),
        "stadion auroc": edge_auroc(np.abs(A_s) * off, A),
        "ours auroc": edge_auroc(np.abs(A_o) * off, A),
        "stadion diag": float(np.max(np.abs(np.diag(A_s) + 1.0))),
        "time stadion": t_stadion,
        "time ours": t_ours,
    }


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True, help="results folder (results.json, results.md)")
    ap.add_argument("--python", help="interpreter of an environment with stadion installed")
    ap.add_argument(
        "--venv",
        default=str(Path(tempfile.gettempdir()) / "ou-ident-stadion-venv"),
        help="where to create the isolated environment (default: the temp folder)",
    )
    ap.add_argument("--p", type=int, default=10)
    ap.add_argument("--n", type=int, default=100_000, help="cells per environment")
    ap.add_argument("--steps", type=int, default=2000, help="Adam steps of both fits")
    ap.add_argument("--seeds", type=int, default=3)
    args = ap.parse_args(argv)
    if args.steps < 1 or args.seeds < 1 or args.p < 2:
        fail("need --steps >= 1, --seeds >= 1 and --p >= 2")
    from icml26_shared.results import Report, Table, ensure_writable_dir

    out = ensure_writable_dir(args.out)
    python = Path(args.python) if args.python else stadion_python(Path(args.venv))
    if not python.exists():
        fail(f"no interpreter at {python}")
    start, cpu0 = time.perf_counter(), time.process_time()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for seed in range(args.seeds):
            print(f"seed {seed + 1}/{args.seeds}: stadion, then our port", flush=True)
            rows.append(run_case(python, args.p, args.n, args.steps, seed, Path(tmp)))
    table = Table(
        f"stadion 1.0.2 vs our port (ou_ident.stationary_diffusion), p = {args.p}, "
        f"{args.steps} Adam steps, {args.seeds} seeds",
        ["seed", "KDS loss max rel. diff", "||A_ours - A_stadion|| / ||A_stadion||",
         "rel. error A: stadion", "rel. error A: ours", "edge AUROC: stadion",
         "edge AUROC: ours", "time stadion (s)", "time ours (s)"],
        notes=(
            "KDS loss: stadion's kds_loss (JAX autodiff, float64) vs our closed form at 5 random "
            "parameter draws on 128 observational samples, linear and U-statistic estimators, "
            "largest relative difference. Fits: the same pseudo-samples (10,000 per "
            "environment of make_problem(p, 'degradation', seed)), both at stadion's defaults "
            "(bandwidth 5, lr 3e-3, batch 128, sparsity 1e-3, diagonal of A fixed to -1); the "
            "two runs draw different minibatches. rel. error A: scale-aligned relative error "
            "to the planted drift. stadion's time includes starting its interpreter and JIT."
        ),
    )  # fmt: skip
    for seed, r in enumerate(rows):
        table.add_row(**{
            "seed": seed,
            "KDS loss max rel. diff": r["kds rel diff"],
            "||A_ours - A_stadion|| / ||A_stadion||": r["A diff"],
            "rel. error A: stadion": r["stadion err"],
            "rel. error A: ours": r["ours err"],
            "edge AUROC: stadion": r["stadion auroc"],
            "edge AUROC: ours": r["ours auroc"],
            "time stadion (s)": r["time stadion"],
            "time ours (s)": r["time ours"],
        })  # fmt: skip
    report = Report("ou-ident", out)
    report.add_section(
        "stadion",
        claim="our torch port of stadion's linear SDE estimator agrees with stadion itself",
        tables=[table],
        timing={"wall_s": time.perf_counter() - start, "cpu_s": time.process_time() - cpu0},
    )
    report.metadata = {"seed": 0, "cpu_count": os.cpu_count(), "stadion": STADION_PINS,
                       "wall_time_s": time.perf_counter() - start}  # fmt: skip
    for path in report.write():
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
