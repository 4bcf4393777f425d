"""Command line of ou-ident: ``ou-ident --help``.

``predict --model fit.json --intervention SPEC`` (the steady state of a fitted model under an
intervention, :func:`predict`), ``fit/validate/test/predict`` (LightningCLI over :class:`~ou_ident.lightning.SteadyStateOU`
and the moment datamodules of :mod:`ou_ident.lightning`, ``--data.class_path`` picks synthetic
or Perturb-seq data), ``reproduce``, and the package commands ``simulate``,
``identifiability``, ``solve`` and ``benchmark``.

Nothing heavy is imported at start-up; ``simulate``, ``identifiability`` and ``solve`` never
import torch or lightning (issue #51), ``benchmark`` imports torch for the KDS anchor only.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from icml26_shared.cli import PaperCLI, UsageError

from .paper import PAPER

if TYPE_CHECKING:
    import numpy as np

Family = Literal["shift", "noise", "degradation", "knockdown", "hard", "inhibition"]


def _load_matrix(path: Path, what: str) -> np.ndarray:
    import numpy as np

    path = Path(path)
    if not path.is_file():
        raise UsageError(f"{what} file {str(path)!r} does not exist")
    try:
        arr = np.load(path) if path.suffix == ".npy" else np.loadtxt(path, delimiter=",", ndmin=2)
    except ValueError as exc:
        raise UsageError(f"cannot read {what} from {str(path)!r}: {exc}") from exc
    return np.asarray(arr, dtype=float)


def simulate(
    out: Path,
    p: int = 10,
    family: Family = "degradation",
    per_component: int = 1,
    n: int | None = 10_000,
    strength: float | None = None,
    drift: Path | None = None,
    noise: list[float] | None = None,
    targets: list[int] | None = None,
    seed: int = 0,
) -> None:
    """Simulate a steady-state perturbation experiment and write its moments (.npz).

    Args:
        out: Output ``.npz`` file (read by ``ou-ident solve``).
        p: Number of variables (ignored with ``--drift``).
        family: Intervention family of the environments.
        per_component: Interventions per strongly connected component.
        n: Samples per environment (``null``: population moments).
        strength: Strength of every intervention (default: random in the family's domain).
        drift: Optional ``.npy``/``.csv`` drift matrix ``A`` (must be Hurwitz); ``b = 0``.
        noise: Diagonal noise ``D`` for ``--drift`` (default: ones; must be >= 0).
        targets: Targets for ``--drift`` (default: node 0).
        seed: Seed of the graph, parameters and samples.
    """
    import numpy as np

    from ou_ident.experiment_file import save_experiment
    from ou_ident.interventions import Environment, make_intervention
    from ou_ident.ou_process import OUParams
    from ou_ident.synthetic import SteadyStateProblem, make_problem, random_strength

    if n is not None and n < 2:
        raise UsageError(f"n must be >= 2 samples per environment, got {n}")
    rng = np.random.default_rng(seed)
    if drift is not None:
        A = _load_matrix(drift, "drift")
        p = A.shape[0]
        params = OUParams(A, np.zeros(p), np.ones(p) if noise is None else noise)
        params.check_hurwitz("a steady state for simulation")
        envs = [Environment("obs")]
        for t in targets or [0]:
            if not 0 <= t < p:
                raise UsageError(f"target {t} out of range for p={p} variables")
            s = strength if strength is not None else random_strength(family, params, t, rng)
            envs.append(Environment(f"{family}-{t}", (make_intervention(family, t, s),)))
        prob = SteadyStateProblem(params, A != 0, envs, [])
    else:
        if noise is not None or targets is not None:
            raise UsageError("--noise and --targets need --drift")
        prob = make_problem(p, family, per_component, seed=seed)
        if strength is not None:
            envs = [prob.environments[0]] + [
                Environment(
                    e.name,
                    tuple(make_intervention(family, iv.target, strength) for iv in e.interventions),
                )
                for e in prob.environments[1:]
            ]
            prob = SteadyStateProblem(prob.params, prob.mask, envs, prob.heldout)
    data = prob.moments(n, seed=seed)
    truth = {"A": prob.params.A, "b": prob.params.b, "d": prob.params.d}
    save_experiment(out, data, prob.mask, truth)
    comps = len(prob.graph.components)
    print(f"wrote {out}: p={prob.params.p}, {len(data)} environments, {comps} SCCs, n={n}")


def identifiability(
    graph: Literal["dense", "chain", "random"] = "dense",
    p: int = 4,
    family: Family = "degradation",
    targets: list[int] | None = None,
    observational: bool = True,
    n_draws: int = 3,
    seed: int = 0,
) -> None:
    """Jacobian-rank nullity and conditioning of a graph, targets and family.

    Args:
        graph: ``dense`` (one SCC), ``chain`` (0 -> 1 -> ...) or ``random`` (generator).
        p: Number of variables.
        family: Intervention family.
        targets: One target per interventional environment (default: one per SCC).
        observational: Include the observational environment.
        n_draws: Random parameter draws (the generic nullity is the smallest).
        seed: Seed of the draws.
    """
    import numpy as np

    from ou_ident.drift_graph import DriftGraph
    from ou_ident.identifiability import identifiability_report
    from ou_ident.synthetic import random_scc_graph

    if p < 1:
        raise UsageError(f"p must be >= 1, got {p}")
    if graph == "dense":
        mask = np.ones((p, p), dtype=bool)
    elif graph == "chain":
        mask = np.eye(p, dtype=bool) | np.eye(p, k=-1, dtype=bool)
    else:
        mask = random_scc_graph(p, seed=seed)
    g = DriftGraph(mask)
    if targets is None:
        targets = [c[0] for c in g.components]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        rep = identifiability_report(mask, targets, family, observational, n_draws, seed)
    verdict = "identifiable up to the global scale" if rep.identifiable else "NOT identifiable"
    print(
        f"{graph} graph, p={p}, {len(g.components)} SCCs, {family} on {list(targets)}: "
        f"nullity {rep.nullity} ({verdict}), conditioning {rep.conditioning:.3g}, "
        f"{rep.n_params} unknowns, {rep.n_equations} equations"
    )
    for w in caught:
        print(f"warning: {w.message}")


def solve(
    data: Path,
    method: Literal["joint", "efficient", "recursive"] = "joint",
    mask: Path | None = None,
    unknown_support: bool = False,
    l1: float = 0.0,
    ridge: float = 0.0,
    penalty: str = "0",
    adaptive: bool = False,
    genes: list[str] | None = None,
    top_k: int | None = None,
    family: Family = "knockdown",
    shrinkage: float = 0.0,
    out: Path | None = None,
) -> None:
    """Fit the OU parameters to an experiment file (.npz) or a cells CSV.

    Args:
        data: ``.npz`` from ``ou-ident simulate``, or a CSV with one row per cell
            (gene columns and a ``perturbation`` column, ``control`` for controls).
        method: ``joint`` (regularised least squares), ``efficient`` (weighted moment
            equations + stationary Gaussian ML, with standard errors) or ``recursive`` (per SCC).
        mask: Optional ``.npy``/``.csv`` drift support (must contain the diagonal).
        unknown_support: Allow every edge (ignore the file's support).
        l1: L1 penalty on the off-diagonal drift (joint only).
        ridge: Ridge penalty on the off-diagonal drift (joint and efficient).
        penalty: L1 prior on the off-diagonal drift added to the efficient estimator's
            likelihood (``--method efficient``): ``0`` (none, Wald intervals), a number
            (per sample of log-likelihood) or ``auto`` (chosen by the extended BIC). A
            penalised fit is biased towards sparse drifts and has no intervals.
        adaptive: Adaptive-lasso weights for ``--penalty`` (1/|A_ij| of the unpenalised fit).
        genes: Genes to model (cells CSV only; default: every gene column).
        top_k: Model only the top-k genes by variance (cells CSV only).
        family: Intervention family of the perturbations (cells CSV only).
        shrinkage: Covariance shrinkage towards the diagonal (cells CSV only).
        out: Output folder: ``fit.json`` (reload with ``ou-ident predict --model``),
            ``result.json`` and ``fit.png`` (drift and observed vs fitted covariances).
    """
    from ou_ident.experiment_file import load_experiment
    from ou_ident.joint import fit_joint
    from ou_ident.recovery_metrics import scale_aligned_rel_error
    from ou_ident.recursive import fit_recursive

    data = Path(data)
    truth: dict = {}
    if data.suffix == ".csv":
        from ou_ident.perturbseq import read_cells_csv

        if genes is not None and top_k is not None:
            raise UsageError("give either --genes or --top_k, not both")
        moments, names = read_cells_csv(
            data, family=family, genes=genes, shrinkage=shrinkage, top_k=top_k
        )
        support = None
        n_cols = len(Path(data).read_text().splitlines()[0].split(",")) - 1
        chosen = "listed" if genes else (f"top {top_k} by variance" if top_k else "all")
        print(f"modelling {len(names)} of {n_cols} genes ({chosen}): {', '.join(names[:20])}"
              + (" ..." if len(names) > 20 else ""))  # fmt: skip
    else:
        if genes is not None or top_k is not None:
            raise UsageError("--genes/--top_k apply to a cells CSV, not to an experiment file")
        moments, support, truth = load_experiment(data)
        names = [str(i) for i in range(moments[0].p)]
    if mask is not None:
        support = _load_matrix(mask, "support mask") != 0
    if unknown_support:
        support = None
    pen_value: float | str = "auto"
    if penalty != "auto":
        try:
            pen_value = float(penalty)
        except ValueError:
            pen_value = float("nan")
        if not pen_value >= 0:  # also nan: not a number
            raise UsageError(f"--penalty must be auto, 0 or a number >= 0, got {penalty!r}")
    if (pen_value != 0 or adaptive) and method != "efficient":
        raise UsageError("--penalty/--adaptive apply to --method efficient")
    if method == "recursive":
        if l1 or ridge:
            raise UsageError("--l1/--ridge apply to --method joint or efficient")
        if support is None:
            raise UsageError("the recursive estimator needs a support (--mask or the file's)")
        fit = fit_recursive(moments, support)
    elif method == "efficient":
        from ou_ident.stationary_likelihood import fit_efficient

        if l1:
            raise UsageError("--l1 applies to --method joint")
        fit = fit_efficient(moments, support, ridge=ridge)
        if pen_value != 0:
            from ou_ident.sparse_drift import fit_sparse_efficient

            fit = fit_sparse_efficient(moments, support, pen_value, adaptive=adaptive, start=fit)
            print(
                f"l1 prior on the off-diagonal drift: penalty {fit.diagnostics['penalty']:.3g}"
                f"{' (extended BIC)' if pen_value == 'auto' else ''}, "
                f"{fit.diagnostics['nonzero_offdiag']} of {fit.diagnostics['candidate_offdiag']} "
                "off-diagonal entries kept (biased towards sparsity: no intervals)"
            )
    else:
        fit = fit_joint(moments, support, ridge=ridge, l1=l1)
    p = fit.params.p
    print(f"{method} fit of {len(moments)} environments, p={p} (scale: tr D = p)")
    err = None
    if "A" in truth:
        err = scale_aligned_rel_error(fit.A, truth["A"])
        print(f"relative error of A (scale aligned): {err:.4g}")
    se = fit.standard_errors()
    layout = fit.layout
    for env, slices in zip(layout.environments, layout.free_slices, strict=True):
        for iv, sl, s in zip(env.interventions, slices, fit.strengths[env.name], strict=True):
            extra = ""
            if se is not None and sl.stop > sl.start:
                extra = f" (se {se[sl][0]:.3g} of its free number)"
            print(f"  {env.name}: {iv.family} on {names[iv.target]}, strength {s:.4g}{extra}")
    if fit.diagnostics.get("at_boundary"):
        print(
            "warning: the likelihood ran to a degenerate boundary (a drift eigenvalue near 0); "
            "parameters and intervals are weakly identified - give a support (--mask) or more "
            "interventions"
        )
    if not fit.params.is_hurwitz:
        print(
            "warning: the fitted drift is not Hurwitz (no stationary law); try --method efficient"
        )
    if out is not None:
        from icml26_shared.results import (
            atomic_write_figure,
            atomic_write_text,
            ensure_writable_dir,
        )

        from ou_ident.fit_figure import plot_fit

        folder = ensure_writable_dir(out)
        payload = fit.to_json(names)
        payload["data"] = data.name
        atomic_write_text(folder / "fit.json", json.dumps(payload, indent=2) + "\n")
        result = {
            "method": method,
            "penalty": fit.diagnostics.get("penalty", 0.0),
            "nonzero_offdiag": int((fit.A != 0).sum()) - p,
            "p": p,
            "environments": [d.name for d in moments],
            "genes": names,
            "hurwitz": bool(fit.params.is_hurwitz),
            "rel_err_A": err,
            "strengths": {k: list(v) for k, v in fit.strengths.items()},
        }
        atomic_write_text(folder / "result.json", json.dumps(result, indent=2) + "\n")
        atomic_write_figure(folder / "fit.png", plot_fit(fit, moments, names))
        print(f"wrote {folder / 'fit.json'}, {folder / 'result.json'}, {folder / 'fit.png'}")


def _parse_intervention(spec: str, genes: list[str]):
    """``family:target[=strength]`` (target: a gene name or an index) -> (family, k, s)."""
    from ou_ident.interventions import FAMILIES

    if ":" not in spec:
        raise UsageError(
            f"intervention {spec!r}: expected FAMILY:TARGET[=STRENGTH], e.g. degradation:G3=0.5"
        )
    family, rest = spec.split(":", 1)
    family = family.strip()
    if family not in FAMILIES:
        raise UsageError(
            f"unknown intervention family {family!r}; choose one of {sorted(FAMILIES)}"
        )
    target, _, strength = rest.partition("=")
    target = target.strip()
    if target in genes:
        k = genes.index(target)
    elif target.isdigit() and int(target) < len(genes):
        k = int(target)
    else:
        raise UsageError(f"unknown target {target!r}; the model's genes: {', '.join(genes[:20])}")
    s = None
    if strength.strip():
        try:
            s = float(strength)
        except ValueError:
            raise UsageError(f"strength {strength!r} is not a number") from None
    return family, k, s


def predict(
    model: Path,
    intervention: str,
    heldout: Path | None = None,
    label: str | None = None,
    out: Path | None = None,
) -> None:
    """Predict the steady state of a fitted model under an intervention.

    Args:
        model: ``fit.json`` written by ``ou-ident solve --out``.
        intervention: ``FAMILY:TARGET[=STRENGTH]``, e.g. ``degradation:G3=0.5``; without a
            strength it is calibrated on the target's mean and variance in ``--heldout``.
        heldout: Optional cells CSV (same format as ``solve``); the rows labelled ``--label``
            are the held-out environment, scored by the Gaussian 2-Wasserstein distance.
        label: Perturbation label of the held-out rows (default: the target gene's name).
        out: Output folder: ``prediction.json`` (mean, covariance, W2).
    """
    from ou_ident.interventions import make_intervention
    from ou_ident.prediction import calibrate_strength, gaussian_w2, predict_intervention
    from ou_ident.steady_state_fit import OUFit

    model = Path(model)
    if not model.is_file():
        raise UsageError(f"model file {str(model)!r} does not exist")
    try:
        payload = json.loads(model.read_text())
    except json.JSONDecodeError as exc:
        raise UsageError(f"{str(model)!r} is not JSON: {exc}") from None
    fit = OUFit.from_json(payload)
    genes = list(payload["genes"])
    family, k, s = _parse_intervention(intervention, genes)
    held = None
    if heldout is not None:
        from ou_ident.perturbseq import read_cells_csv

        lab = label or genes[k]
        data, held_genes = read_cells_csv(heldout, family=family, genes=genes)
        match = [d for d in data if d.name == lab]
        if not match:
            raise UsageError(f"no cells labelled {lab!r} in {str(heldout)!r}")
        held = match[0]
    if s is None:
        if held is None:
            raise UsageError(
                "give a strength (FAMILY:TARGET=STRENGTH) or --heldout to calibrate it"
            )
        iv = calibrate_strength(fit.params, family, k, held.mean[k], held.cov[k, k])
        how = "calibrated on the held-out target's mean and variance"
    else:
        try:
            iv = make_intervention(family, k, s)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        how = "given"
    mean, cov = predict_intervention(fit.params, iv)
    print(f"{family} on {genes[k]}, strength {iv.strength:.4g} ({how})")
    print("predicted steady-state mean: " + ", ".join(
        f"{g}={m:.4g}" for g, m in zip(genes, mean, strict=True)))  # fmt: skip
    result = {
        "model": model.name,
        "intervention": {"family": family, "target": genes[k], "strength": iv.strength},
        "genes": genes,
        "mean": mean.tolist(),
        "cov": cov.tolist(),
    }
    if held is not None:
        w2 = gaussian_w2(mean, cov, held.mean, held.cov)
        obs = [d for d in read_cells_csv(heldout, family=family, genes=genes)[0]
               if d.environment.is_observational]  # fmt: skip
        w2_none = gaussian_w2(obs[0].mean, obs[0].cov, held.mean, held.cov) if obs else None
        print(f"W2 to the held-out cells ({held.n} cells): {w2:.4g}"
              + (f" (no change: {w2_none:.4g})" if w2_none is not None else ""))  # fmt: skip
        result.update(
            {"heldout": held.name, "n_heldout": held.n, "w2": w2, "w2_no_change": w2_none}
        )
    if out is not None:
        from icml26_shared.results import atomic_write_text, ensure_writable_dir

        folder = ensure_writable_dir(out)
        atomic_write_text(folder / "prediction.json", json.dumps(result, indent=2) + "\n")
        print(f"wrote {folder / 'prediction.json'}")


def benchmark(
    p: int = 10,
    family: Family = "degradation",
    n: int | None = 100_000,
    seeds: int = 2,
    gies: bool = True,
    seed: int = 0,
) -> None:
    """Compare the estimators and the anchors on synthetic experiments (one table).

    Args:
        p: Number of variables.
        family: Intervention family of the training and held-out interventions.
        n: Samples per environment (``null``: population moments).
        seeds: Number of random experiments to average over.
        gies: Include the GIES + linear SEM anchor (needs the ``bench`` extra).
        seed: First seed.
    """
    import numpy as np

    from ou_ident.comparison import METHODS, evaluate_methods, summarize

    if seeds < 1:
        raise UsageError(f"seeds must be >= 1, got {seeds}")
    rows = []
    for s in range(seed, seed + seeds):
        rows += evaluate_methods(p, family, n, seed=s, gies=gies)
    print(f"p={p}, family={family}, n={n}, {seeds} seed(s)")
    print(f"{'method':44s} {'rel err A':>10s} {'AUROC':>8s} {'W2 held-out':>12s} {'time s':>8s}")
    for r in summarize(rows):
        if r["method"] not in METHODS:
            continue
        cells = [
            f"{r[k]:.4g}" if isinstance(r.get(k), float) and np.isfinite(r[k]) else "-"
            for k in ("rel_err_A", "auroc", "w2_heldout", "time_s")
        ]
        print(f"{r['method']:44s} {cells[0]:>10s} {cells[1]:>8s} {cells[2]:>12s} {cells[3]:>8s}")


def build_cli() -> PaperCLI:
    """The package's CLI (nothing heavy is imported until a command runs)."""
    return PaperCLI(
        PAPER,
        model_class="ou_ident.lightning:SteadyStateOU",
        datamodule_class="ou_ident.lightning:MomentDataModule",
        subclass_mode_data=True,
        commands={
            "simulate": "ou_ident.cli:simulate",
            "identifiability": "ou_ident.cli:identifiability",
            "solve": "ou_ident.cli:solve",
            "benchmark": "ou_ident.cli:benchmark",
        },
    )


def _is_model_predict(argv: list[str]) -> bool:
    """``predict --model fit.json ...``: the package's command, not Lightning's ``predict``."""
    if argv[:1] != ["predict"]:
        return False
    for i, a in enumerate(argv[1:], start=1):
        if a.startswith("--model=") and a.endswith(".json"):
            return True
        if a == "--model" and i + 1 < len(argv) and argv[i + 1].endswith(".json"):
            return True
    return False


def main(args: Sequence[str] | None = None) -> int:
    """Entry point of the ``ou-ident`` console script.

    ``ou-ident predict --model fit.json --intervention SPEC`` runs :func:`predict`; any other
    ``predict`` is LightningCLI's.
    """
    import sys

    argv = list(sys.argv[1:] if args is None else args)
    cli = build_cli()
    if _is_model_predict(argv):
        try:
            cli._run_function("predict", predict, argv[1:])
        except SystemExit as exc:
            return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
        except (UsageError, ValueError, OSError, KeyError) as exc:
            return cli.error(str(exc) or type(exc).__name__)
        return 0
    return cli.main(argv)
