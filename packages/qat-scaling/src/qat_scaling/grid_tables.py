"""Result tables of a paired QAT grid: the error delta, the fitted laws, the decomposition.

Paper: "Scaling Law for Quantization-Aware Training", Chen et al., arXiv 2505.14302.

Every table is built from the run records of :func:`qat_scaling.grid.run_grid` and the errors
``delta = L_QAT - L_FP`` of :func:`qat_scaling.scaling_law.qat_error`:

1. ``L_FP(N, D)`` and ``delta(N, D, G)`` of every scheme, per (N, D) -> :func:`delta_table`.
2. The unified law ``delta = k D^gD (log2 G)^gG / N^gN`` per scheme (W4A4, and W4A16 / W16A4
   for the weight / activation parts), OLS and bootstrap intervals -> :func:`fit_table`.
3. ``delta_W4A4`` against ``delta_W`` (W4A16) + ``delta_A`` (W16A4), and ``delta_A`` with the
   FC2 input at 8 bits or Hadamard-rotated -> :func:`decomposition_table`.
4. Leave-one-(N, D)-cell-out error of the unified law against the N-only law
   -> :func:`holdout_table`.
5. ``L_FP = A / N^alpha + B / D^beta + E`` (Chinchilla) -> :func:`chinchilla_table`.
6. One line per claim, read off the fits and errors of the run -> :func:`summary_lines`.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence

import numpy as np
from icml26_shared.results import Table

from .grid import GridSpec
from .scaling_law import LawFit, NotIdentifiableError, compare_laws, fit_chinchilla

# (scheme, column label) of the decomposition table, in display order
DECOMPOSITION_PARTS = (
    ("W4A4", "d W4A4"),
    ("W4A16", "d_W (W4A16)"),
    ("W16A4", "d_A (W16A4)"),
    ("W16A4-FC2A8", "d_A FC2-A8"),
    ("W16A4-FC2had", "d_A FC2-Hadamard"),
    ("W4A4-FC2A8", "d W4A4-FC2A8"),
)


def schemes(errors: Sequence[Mapping]) -> list[tuple[str, int]]:
    """The ``(scheme, G)`` pairs of ``errors``, in order of first appearance."""
    seen: list[tuple[str, int]] = []
    for e in errors:
        key = (e["scheme"], e["G"])
        if key not in seen:
            seen.append(key)
    return seen


def grid_description(spec: GridSpec) -> str:
    """One paragraph naming the grid, the schedule and the corpus of a run."""
    if spec.corpus == "stdlib":
        from .corpora import StdlibCorpus

        corpus = StdlibCorpus(**spec.corpus_kwargs).describe()
    else:
        corpus = spec.corpus
    return (
        f"Grid: sizes {', '.join(spec.sizes)}, token budgets "
        f"{', '.join(str(spec.tokens(b)) for b in spec.budgets)} (WSD decay branches, decay "
        f"fraction {spec.decay_fraction}), batch {spec.batch_size} x {spec.seq_len} tokens, "
        f"AdamW lr {spec.lr}, seed {spec.seed}; corpus {corpus}. Validation on "
        f"{spec.val_batches * spec.batch_size} fixed held-out windows."
    )


def delta_table(records: Sequence[Mapping], errors: Sequence[Mapping], seed: int = 0) -> Table:
    """FP loss and ``delta`` of every (scheme, G) per (N, D), for the runs of ``seed``."""
    cols = [f"{s} G={g}" for s, g in schemes(errors)]
    table = Table(
        "FP loss and QAT error delta = L_QAT - L_FP per (N, D)",
        ["size", "N", "D", "L_FP", *cols],
        notes=(
            "Validation cross-entropy in nats per byte. Paired runs: the same initial weights "
            "and training batches for every scheme of one size. Schemes: W4A4 (4-bit weights "
            "and activations, group G), W4A16 (weights only, delta_W), W16A4 (activations "
            "only, delta_A), -FC2A8 (down_proj input at 8 bits), -FC2had (down_proj input "
            "and weight Hadamard-rotated, same bits)."
        ),
    )
    fp = {(r["size"], r["D"]): r for r in records if r["scheme"] == "FP" and r["seed"] == seed}
    by = {(e["size"], e["D"], e["scheme"], e["G"]): e["delta"] for e in errors}
    for (size, d), r in sorted(fp.items(), key=lambda kv: (kv[1]["N"], kv[0][1])):
        row = {"size": size, "N": r["N"], "D": d, "L_FP": r["val_loss"]}
        for s, g in schemes(errors):
            row[f"{s} G={g}"] = by.get((size, d, s, g))
        table.add_row(**row)
    return table


def _ci(ci: Mapping[str, tuple[float, float]], name: str) -> str | None:
    if name not in ci:
        return None
    lo, hi = ci[name]
    return f"[{lo:.3g}, {hi:.3g}]"


def fit_table(fits: Mapping[str, LawFit], bootstrap: int = 1000) -> Table:
    """The unified law fitted per scheme (:func:`qat_scaling.scaling_law.decompose`)."""
    cols = ["scheme", "k", "gN", "gN 95% CI", "gD", "gD 95% CI", "gG", "gG 95% CI", "R2", "n",
            "gN boot CI", "gD boot CI", "gG boot CI"]  # fmt: skip
    table = Table(
        "Unified law delta = k D^gD (log2 G)^gG / N^gN fitted per scheme",
        cols,
        notes=(
            "OLS on log delta; 95 % intervals from the t distribution, and percentile intervals "
            f"from {bootstrap} bootstrap resamples of the runs. Points with delta <= 0 (QAT not "
            "worse than FP at the measured precision) are dropped. W4A16 is the weight part, "
            "W16A4 the activation part of the W4A4 error. Paper's expectation: gN > 0, gD > 0, "
            "gG > 0, and gD(W4A16) > gD(W16A4)."
        ),
    )
    for scheme, fit in fits.items():
        law = fit.law
        table.add_row(
            scheme=scheme, k=law.k, gN=law.gN, gD=law.gD, gG=law.gG, R2=fit.r2, n=fit.n,
            **{f"{p} 95% CI": _ci(fit.ci, p) for p in ("gN", "gD", "gG")},
            **{f"{p} boot CI": _ci(fit.bootstrap_ci, p) for p in ("gN", "gD", "gG")},
        )  # fmt: skip
    return table


def decomposition_group(spec: GridSpec) -> int:
    """The G at which the decomposition schemes were run (the largest such G; 0 if none)."""
    gs = [g for s, g in spec.runs if s in ("W4A16", "W16A4") and g]
    return max(gs) if gs else 0


def decomposition_table(errors: Sequence[Mapping], G: int) -> Table | None:
    """Per (N, D) at one G: ``delta_W4A4`` against its weight and activation parts, FC2 fixes.

    ``None`` when no W16A4 run was made at ``G``. Columns of schemes that did not run are left
    out.
    """
    by = {(e["size"], e["N"], e["D"], e["scheme"]): e["delta"] for e in errors if e["G"] == G}
    cells = sorted({(k[1], k[2], k[0]) for k in by})
    if not G or not cells or not any(k[3] == "W16A4" for k in by):
        return None
    ran = {k[3] for k in by}
    parts = [(scheme, label) for scheme, label in DECOMPOSITION_PARTS if scheme in ran]
    table = Table(
        f"Weight / activation decomposition and FC2 mixed precision (G = {G})",
        ["size", "N", "D", *(label for _, label in parts), "d_W + d_A", "d_W / d_A",
         "d_W / d_A FC2-A8"],
        notes=(
            "delta in nats per byte, paired with the FP run of the same size and D. d_W: "
            "weights at 4 bits, activations in full precision; d_A: activations at 4 bits; "
            "FC2-A8: the down_proj input at 8 bits (every other linear input at 4); "
            "FC2-Hadamard: the down_proj input and weight rotated by an orthonormal Hadamard "
            "matrix before 4-bit quantisation (QuaRot-style outlier anchor, same bits). "
            "d_W + d_A close to d W4A4 means the two parts add up. The paper: the activation "
            "part is dominated by the FC2 input, FC2-A8 brings d_W and d_A level, and d_W "
            "grows faster with D."
        ),
    )  # fmt: skip
    for n, d, size in cells:
        row = {"size": size, "N": n, "D": d}
        for scheme, label in parts:
            row[label] = by.get((size, n, d, scheme))
        dw, da, da8 = row.get("d_W (W4A16)"), row.get("d_A (W16A4)"), row.get("d_A FC2-A8")
        if dw is not None and da is not None:
            row["d_W + d_A"] = dw + da
            row["d_W / d_A"] = dw / da if da > 0 else None
        if dw is not None and da8 is not None:
            row["d_W / d_A FC2-A8"] = dw / da8 if da8 > 0 else None
        table.add_row(**row)
    return table


def holdout_table(w4a4: Sequence[Mapping]) -> Table:
    """Leave-one-(N, D)-cell-out error of the unified and the N-only law on W4A4 errors."""
    table = Table(
        "Held-out error: unified law vs the N-only law (leave one (N, D) cell out, W4A4)",
        ["law", "RMSE log delta", "mean |rel. error|", "held-out cells"],
        notes=(
            "Each (N, D) cell (all its G) is removed, both laws are refitted on the rest and "
            "predict it. N-only law: delta = c_G / N^gN (effective-parameter form of earlier "
            "QAT/precision laws, one constant per G, no D term)."
        ),
    )
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            cmp = compare_laws(*([e[k] for e in w4a4] for k in ("N", "D", "G", "delta")))
    except (NotIdentifiableError, ValueError) as err:
        table.notes += f" Not computed: {err}."
        return table
    for name, m in cmp.items():
        table.add_row(law=name, **{"RMSE log delta": m["rmse_log"],
                                   "mean |rel. error|": m["mape"], "held-out cells": m["cells"]})  # fmt: skip
    return table


def chinchilla_table(records: Sequence[Mapping], seed: int = 0) -> Table:
    """Chinchilla fit of the FP losses of ``seed`` (a note instead of a row if not identifiable)."""
    fp = [r for r in records if r["scheme"] == "FP" and r["seed"] == seed]
    table = Table(
        "Chinchilla fit of the FP loss L = A/N^alpha + B/D^beta + E (Huber on log L)",
        ["A", "alpha", "B", "beta", "E", "RMS log residual", "points"],
    )
    try:
        law, rms = fit_chinchilla(
            [r["N"] for r in fp], [r["D"] for r in fp], [r["val_loss"] for r in fp]
        )
    except NotIdentifiableError as err:
        table.notes = f"Not identifiable on this grid: {err}."
        return table
    table.add_row(A=law.A, alpha=law.alpha, B=law.B, beta=law.beta, E=law.E, points=len(fp),
                  **{"RMS log residual": rms})  # fmt: skip
    return table


def seed_noise(records: Sequence[Mapping], seed: int = 0) -> float | None:
    """Mean |L_FP(seed) - L_FP(other seed)| over the (size, D) cells with a second FP seed."""
    base = {(r["size"], r["D"]): r["val_loss"] for r in records
            if r["scheme"] == "FP" and r["seed"] == seed}  # fmt: skip
    diffs = [
        abs(r["val_loss"] - base[(r["size"], r["D"])])
        for r in records
        if r["scheme"] == "FP" and r["seed"] != seed and (r["size"], r["D"]) in base
    ]
    return float(np.mean(diffs)) if diffs else None


def summary_lines(
    records: Sequence[Mapping],
    errors: Sequence[Mapping],
    fits: Mapping[str, LawFit],
    seed: int = 0,
) -> list[str]:
    """The run's answer to each claim in one line: signs of the exponents, FC2 cut, kurtosis."""
    lines = []
    w = fits.get("W4A4")
    if w is not None:
        for name in ("gN", "gD", "gG"):
            lo, hi = w.ci.get(name, (float("nan"), float("nan")))
            sign = "> 0" if lo > 0 else ("< 0" if hi < 0 else "CI contains 0")
            lines.append(f"W4A4 {name} = {getattr(w.law, name):.3g} [{lo:.3g}, {hi:.3g}] ({sign})")
    if "W4A16" in fits and "W16A4" in fits:
        lines.append(f"gD weight (W4A16) = {fits['W4A16'].law.gD:.3g} vs activation (W16A4) = "
                     f"{fits['W16A4'].law.gD:.3g}")  # fmt: skip
    by: dict[tuple[str, int], list[float]] = {}
    for e in errors:
        by.setdefault((e["scheme"], e["G"]), []).append(e["delta"])
    for a, b in (("W16A4", "W16A4-FC2A8"), ("W16A4", "W16A4-FC2had")):
        if (a, 32) in by and (b, 32) in by:
            da, db = np.mean(by[(a, 32)]), np.mean(by[(b, 32)])
            lines.append(
                f"mean delta {b} G=32 {db:.4f} vs {a} {da:.4f} ({100 * (db / da - 1):+.0f}%)"
            )
    if ("W4A16", 32) in by and ("W16A4-FC2A8", 32) in by:
        lines.append(
            f"G=32: delta_W (W4A16) {np.mean(by[('W4A16', 32)]):.4f}, delta_A (W16A4) "
            f"{np.mean(by.get(('W16A4', 32), [np.nan])):.4f}, delta_A with FC2-A8 "
            f"{np.mean(by[('W16A4-FC2A8', 32)]):.4f}"
        )
    worst = {}
    for r in records:
        if r["scheme"] == "FP" and r["seed"] == seed and "act_stats" in r:
            k = max(r["act_stats"], key=lambda n: r["act_stats"][n]["kurtosis"])
            worst[r["size"]] = k.split(".")[-1]
    if worst:
        lines.append("largest input kurtosis: " + ", ".join(f"{s}: {k}" for s, k in worst.items()))
    noise = seed_noise(records, seed)
    if noise is not None:
        lines.append(f"FP seed noise |L(seed {seed}) - L(other seed)|: mean {noise:.4f} nats")
    return lines
