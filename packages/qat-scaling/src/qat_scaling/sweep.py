"""The report of a paired multi-seed sweep: delta per cell, noise floor, laws, torchao check.

Paper: "Scaling Law for Quantization-Aware Training", Chen et al., arXiv 2505.14302: the
unified law ``delta = k D^gD (log2 G)^gG / N^gN`` of the W4A4 QAT error (gN, gD, gG > 0), its
weight (W4A16) and activation (W16A4) parts, and its advantage over an N-only law on
held-out cells.

``qat-scaling sweep --config grid.yaml --out DIR`` trains the grid (:mod:`qat_scaling.grid`)
and calls :func:`write_sweep_report`, which reads it in seven sections:

1. ``delta``: seed mean and spread of delta per (N, D, scheme, G) -> :func:`delta_cells_table`.
2. ``noise``: the paired-seed noise floor of delta -> :func:`noise_table`; the noise model
   chosen from the data: how a cell's seed sd grows with its mean (slope of log sd on
   log |mean|) and the fitted variance function ``floor^2 + (cv mu)^2`` ->
   :func:`noise_model_table`, figure ``noise_model.png`` (:func:`noise_model_figure`).
3. ``law``: the law per scheme, fitted to every point in delta space under the chosen noise
   model (``relative`` by default; W4A4 also under the other), seed-bootstrap intervals
   (:mod:`qat_scaling.delta_fit`) -> :func:`law_table`; figure ``delta_fit.png``
   (:func:`sweep_figure`).
4. ``decomposition``: the exponents of the weight and activation parts -> in :func:`law_table`
   (rows W4A16 and W16A4) and :func:`decomposition_cells_table`.
5. ``group``: delta(G_max) - delta(G_min) per cell, paired within each seed, and a sign
   test (the direct check of gG > 0) -> :func:`group_size_contrast_table`.
6. ``holdout``: leave-one-(N, D)-cell-out RMSE of the unified and the N-only law.
7. ``torchao``: torchao-QAT cells against ours, cell by cell -> :func:`torchao_agreement_table`.

Besides ``results.md`` / ``results.json`` (the shared layout) it writes ``result.json`` (the
fits, noise floor, held-out errors and agreement as plain JSON) and ``fit-<scheme>.json`` per
scheme (read by ``qat-scaling predict-law --fit``).
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from pathlib import Path

import numpy as np
from icml26_shared.results import Report, Table, atomic_write_text

from .delta_fit import (
    DeltaFit,
    cell_means,
    fit_delta_law_weighted,
    holdout_delta,
    noise_floor,
    seed_bootstrap,
    usable_noise_model,
)
from .grid import GridSpec
from .scaling_law import NotIdentifiableError, qat_error

__all__ = [
    "decomposition_cells_table",
    "delta_cells_table",
    "group_size_contrast_table",
    "law_table",
    "noise_model_figure",
    "noise_model_table",
    "noise_table",
    "sweep_figure",
    "torchao_agreement_table",
    "write_sweep_report",
]

#: Schemes whose law is fitted, in report order (when present in the sweep).
LAW_SCHEMES = ("W4A4", "W4A16", "W16A4", "W4A4-torchao", "W4A16-torchao", "W16A4-torchao")


def _fmt_ms(mean: float, sd: float) -> str:
    return f"{mean:.5f} ± {sd:.5f}" if np.isfinite(sd) else f"{mean:.5f}"


def _by_scheme(errors: Sequence[Mapping]) -> dict[str, list[Mapping]]:
    out: dict[str, list[Mapping]] = {}
    for e in errors:
        out.setdefault(e["scheme"], []).append(e)
    return out


def delta_cells_table(records: Sequence[Mapping], errors: Sequence[Mapping]) -> Table:
    """Seed mean ± sd of L_FP and of delta of every scheme, per (N, D) and G."""
    fp: dict[tuple, list[float]] = {}
    for r in records:
        if r["scheme"] == "FP":
            fp.setdefault((r["N"], r["D"]), []).append(float(r["val_loss"]))
    cols = sorted({(e["scheme"], e["G"]) for e in errors}, key=lambda sg: (sg[0], sg[1]))
    names = [f"{s} G={g}" for s, g in cols]
    table = Table(
        "delta = L_QAT - L_FP per (N, D): seed mean ± seed sd",
        ["N", "D", "tokens/param", "L_FP", *names, "seeds"],
        notes=(
            "Validation cross-entropy in nats per token; every QAT run is paired with the FP "
            "run of the same size and seed (same initial weights, same batches)."
        ),
    )
    by = {}
    for e in errors:
        by.setdefault((e["N"], e["D"], e["scheme"], e["G"]), []).append(float(e["delta"]))
    for n, d in sorted(fp):
        row = {"N": n, "D": d, "tokens/param": round(d / n, 2)}
        f = np.asarray(fp[(n, d)])
        row["L_FP"] = _fmt_ms(f.mean(), f.std(ddof=1) if len(f) > 1 else float("nan"))
        for (s, g), name in zip(cols, names, strict=True):
            v = np.asarray(by.get((n, d, s, g), []))
            row[name] = (
                ""
                if not len(v)
                else _fmt_ms(v.mean(), v.std(ddof=1) if len(v) > 1 else float("nan"))
            )
        row["seeds"] = len(f)
        table.add_row(**row)
    return table


def noise_table(errors: Sequence[Mapping]) -> tuple[Table, dict]:
    """The paired-seed spread of delta per scheme (median over cells) and its standard error."""
    table = Table(
        "Noise floor: paired-seed spread of delta",
        [
            "scheme",
            "median seed sd of delta",
            "median SE of a cell mean",
            "median |cell mean|",
            "cells",
        ],
        notes=(
            "sd over the seeds of one (N, D, G) cell, median over cells; SE = sd / sqrt(seeds). "
            "A trend in delta is resolved only where it exceeds this spread."
        ),
    )
    floors = {}
    for scheme, pts in _by_scheme(errors).items():
        nf = noise_floor(pts)
        means = [abs(c["mean"]) for c in cell_means(pts)]
        floors[scheme] = {**nf, "median_abs_mean": float(np.median(means))}
        table.add_row(
            scheme=scheme,
            **{
                "median seed sd of delta": nf["sd"],
                "median SE of a cell mean": nf["se"],
                "median |cell mean|": float(np.median(means)),
                "cells": nf["cells"],
            },
        )
    return table, floors


def _ci_text(fit: DeltaFit, name: str) -> str:
    if name not in fit.free:
        return "fixed 0 (one value)"
    if name not in fit.ci:
        return "n/a"
    lo, hi = fit.ci[name]
    return f"[{lo:.3g}, {hi:.3g}]"


def _noise_text(fit: DeltaFit) -> str:
    if fit.variance is None:
        return fit.noise
    return f"relative (cv {fit.variance.cv:.2g}, floor {fit.variance.floor:.2g})"


def noise_model_table(errors: Sequence[Mapping]) -> tuple[Table, dict]:
    """How delta's seed spread depends on its size, per scheme: the evidence for a noise model.

    Per scheme: the slope of log(seed sd) on log|seed mean| over the (N, D, G) cells (0 =
    additive noise, 1 = relative noise), with a 95% t interval; the median coefficient of
    variation sd / |mean|; the spread of the sd itself (max / min over cells); the fitted
    variance function of the relative model at the law's fit.
    """
    from scipy import stats

    table = Table(
        "Noise model: how the paired-seed spread of delta grows with delta",
        [
            "scheme",
            "cells",
            "seed sd min .. max",
            "slope of log sd on log |mean|",
            "95% CI",
            "median sd / |mean|",
            "fitted cv",
            "fitted floor",
        ],
        notes=(
            "Cells with >= 2 seeds. A slope near 0: the spread does not depend on delta "
            "(additive noise, an unweighted fit is right); near 1: the spread is proportional to "
            "delta (relative noise: an unweighted fit is dominated by the largest, noisiest "
            "cells). fitted cv / floor: Var(delta) = floor^2 + (cv mu)^2, maximum likelihood on "
            "the cells' sample variances at the law's fit (qat_scaling.delta_fit)."
        ),
    )
    summary = {}
    for scheme, pts in _by_scheme(errors).items():
        cells = [c for c in cell_means(pts) if c["seeds"] > 1 and c["sd"] > 0 and c["mean"] != 0]
        if len(cells) < 3:
            continue
        x = np.log([abs(c["mean"]) for c in cells])
        y = np.log([c["sd"] for c in cells])
        reg = stats.linregress(x, y)
        half = stats.t.ppf(0.975, len(cells) - 2) * reg.stderr
        row = {
            "slope": float(reg.slope),
            "ci": [float(reg.slope - half), float(reg.slope + half)],
            "median_cv": float(np.median(np.exp(y - x))),
        }
        try:
            f = fit_delta_law_weighted(*([p[k] for p in pts] for k in ("N", "D", "G", "delta")))
            row.update(cv=f.variance.cv, floor=f.variance.floor)
        except (ValueError, NotIdentifiableError):
            row.update(cv=None, floor=None)
        summary[scheme] = row
        sds = [c["sd"] for c in cells]
        table.add_row(
            scheme=scheme,
            cells=len(cells),
            **{
                "seed sd min .. max": f"{min(sds):.2g} .. {max(sds):.2g}",
                "slope of log sd on log |mean|": row["slope"],
                "95% CI": f"[{row['ci'][0]:.2f}, {row['ci'][1]:.2f}]",
                "median sd / |mean|": row["median_cv"],
                "fitted cv": row["cv"],
                "fitted floor": row["floor"],
            },
        )
    return table, summary


def noise_model_figure(errors: Sequence[Mapping], summary: Mapping[str, Mapping]):
    """Seed sd against |seed mean| per cell (log-log), one colour per scheme, with the fitted
    relative variance function sd = sqrt(floor^2 + (cv mu)^2) and the additive model's line."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5.6, 4.2))
    cmap = plt.get_cmap("tab10")
    lo, hi = np.inf, 0.0
    for i, (scheme, pts) in enumerate(_by_scheme(errors).items()):
        cells = [c for c in cell_means(pts) if c["seeds"] > 1 and c["sd"] > 0 and c["mean"] != 0]
        if scheme not in summary or not cells:
            continue
        m = np.array([abs(c["mean"]) for c in cells])
        sd = np.array([c["sd"] for c in cells])
        lo, hi = min(lo, m.min()), max(hi, m.max())
        ax.plot(
            m, sd, "o", color=cmap(i % 10), label=f"{scheme} (slope {summary[scheme]['slope']:.2f})"
        )
        s = summary[scheme]
        if s.get("cv") is not None:
            grid = np.geomspace(m.min(), m.max(), 40)
            ax.plot(grid, np.sqrt(s["floor"] ** 2 + (s["cv"] * grid) ** 2), "-", color=cmap(i % 10))
    if hi > 0:
        grid = np.geomspace(lo, hi, 10)
        ax.plot(grid, grid, ":", color="0.5", label="sd = |mean|")
    ax.set(
        xscale="log",
        yscale="log",
        xlabel="|seed mean of delta| per (N, D, G) cell (nats)",
        ylabel="seed sd of delta (nats)",
        title="Paired-seed spread of delta against its size",
    )
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def law_table(fits: Mapping[str, DeltaFit], bootstrap: int) -> Table:
    """The law per scheme: exponents with seed-bootstrap intervals; whether each excludes 0."""
    table = Table(
        "Unified law delta = k D^gD (log2 G)^gG / N^gN, fitted to every point in delta space",
        [
            "scheme",
            "k",
            "gN",
            "gN 95% CI",
            "gD",
            "gD 95% CI",
            "gG",
            "gG 95% CI",
            "noise model",
            "sigma",
            "points",
            "resolved (CI excludes 0)",
        ],
        notes=(
            "Every point counts, delta <= 0 included. Noise models: additive = constant "
            "variance (nonlinear least squares); relative = Var(delta) = floor^2 + (cv mu)^2 "
            "with floor and cv fitted to the paired-seed variances of the cells "
            "(iteratively reweighted least squares). sigma: RMS residual (nats). Intervals: "
            "percentile, "
            f"{bootstrap} resamples of the seeds of each size (all cells of a drawn seed "
            "together), widened about the estimate by sqrt(m / (m - 1)) for m seeds per size "
            "(the bootstrap's variance deficit; 1.22 for 3 seeds); an interval end at +-6 is the optimiser's bound on the exponents, i.e. the "
            "data do not bound that side. An exponent whose variable takes one value in the "
            "grid is fixed at 0. "
            "W4A16 is the weight part, W16A4 the activation part of the W4A4 error. Paper: "
            "gN, gD, gG > 0."
        ),
    )
    for scheme, fit in fits.items():
        law = fit.law
        resolved = [n for n in fit.free if fit.excludes_zero(n)]
        table.add_row(
            scheme=scheme,
            k=law.k,
            gN=law.gN,
            gD=law.gD if "gD" in fit.free else None,
            gG=law.gG if "gG" in fit.free else None,
            sigma=fit.sigma,
            points=fit.n,
            **{
                "noise model": _noise_text(fit),
                "gN 95% CI": _ci_text(fit, "gN"),
                "gD 95% CI": _ci_text(fit, "gD"),
                "gG 95% CI": _ci_text(fit, "gG"),
                "resolved (CI excludes 0)": ", ".join(resolved) or "none",
            },
        )
    return table


def decomposition_cells_table(errors: Sequence[Mapping], G: int) -> Table | None:
    """Seed means of delta W4A4, its weight part d_W and activation part d_A per (N, D)."""
    parts = {"W4A4": "d W4A4", "W4A16": "d_W (W4A16)", "W16A4": "d_A (W16A4)"}
    means = {}
    for e in errors:
        if e["G"] == G and e["scheme"] in parts:
            means.setdefault((e["N"], e["D"], e["scheme"]), []).append(float(e["delta"]))
    if not any(k[2] == "W16A4" for k in means):
        return None
    table = Table(
        f"Weight / activation decomposition of the W4A4 error (G = {G}), seed means",
        ["N", "D", *parts.values(), "d_W + d_A", "d_W / d_A"],
        notes="The paper: d_W + d_A close to d W4A4, and d_W grows faster with D than d_A.",
    )
    for n, d in sorted({(k[0], k[1]) for k in means}):
        row = {"N": n, "D": d}
        for s, label in parts.items():
            v = means.get((n, d, s))
            row[label] = float(np.mean(v)) if v else None
        w, a = row["d_W (W4A16)"], row["d_A (W16A4)"]
        row["d_W + d_A"] = None if w is None or a is None else w + a
        row["d_W / d_A"] = w / a if w is not None and a and a > 0 and w > 0 else None
        table.add_row(**row)
    return table


def group_size_contrast_table(
    errors: Sequence[Mapping], scheme: str = "W4A4"
) -> tuple[Table | None, dict]:
    """delta(G_max) - delta(G_min) per (N, D), paired within each seed, and a sign test.

    Both runs of a seed share the FP run, the initial weights and the batches, so their
    difference is ``L(G_max) - L(G_min)``: the group-size effect with the FP loss (and its
    seed noise) cancelled. ``gG > 0`` predicts a positive difference in every cell. Returns
    the table (``None`` with fewer than two G) and a summary: positive differences out of all
    (cell, seed) pairs and the two-sided binomial sign-test p-value.

    Examples:
        >>> rows = [dict(scheme="W4A4", N=1, D=1, seed=s, G=g, delta=0.01 * g + 0.001 * s)
        ...         for s in range(3) for g in (4, 16)]
        >>> table, summary = group_size_contrast_table(rows)
        >>> summary["positive"], summary["pairs"]
        (3, 3)
    """
    from scipy.stats import binomtest

    rows = [e for e in errors if e["scheme"] == scheme]
    gs = sorted({e["G"] for e in rows})
    if len(gs) < 2:
        return None, {}
    lo, hi = gs[0], gs[-1]
    by = {(e["N"], e["D"], e["seed"], e["G"]): float(e["delta"]) for e in rows}
    cells: dict[tuple, list[float]] = {}
    for n, d, seed, g in by:
        if g == hi and (n, d, seed, lo) in by:
            cells.setdefault((n, d), []).append(by[(n, d, seed, hi)] - by[(n, d, seed, lo)])
    name = f"delta(G={hi}) - delta(G={lo})"
    table = Table(
        f"Group size: {scheme} {name} per (N, D), paired within each seed",
        [
            "N",
            "D",
            f"mean delta G={lo}",
            f"mean delta G={hi}",
            name,
            "seeds with a positive difference",
        ],
        notes=(
            "Seed mean ± seed sd of the paired difference (the two runs of a seed share the FP "
            "run, weights and batches, so the FP loss cancels). The paper (gG > 0): delta grows "
            "with G, i.e. a positive difference in every cell."
        ),
    )
    for (n, d), v in sorted(cells.items()):
        a = np.asarray(v)
        mlo = np.mean([x for (nn, dd, _, g), x in by.items() if (nn, dd, g) == (n, d, lo)])
        mhi = np.mean([x for (nn, dd, _, g), x in by.items() if (nn, dd, g) == (n, d, hi)])
        table.add_row(
            N=n,
            D=d,
            **{
                f"mean delta G={lo}": float(mlo),
                f"mean delta G={hi}": float(mhi),
                name: _fmt_ms(a.mean(), a.std(ddof=1) if len(a) > 1 else float("nan")),
                "seeds with a positive difference": f"{int((a > 0).sum())} of {len(a)}",
            },
        )
    diffs = np.concatenate([np.asarray(v) for v in cells.values()])
    positive, pairs = int((diffs > 0).sum()), len(diffs)
    summary = {
        "scheme": scheme,
        "G": [lo, hi],
        "positive": positive,
        "pairs": pairs,
        "cells_with_positive_mean": int(sum(np.mean(v) > 0 for v in cells.values())),
        "cells": len(cells),
        "sign_test_p": float(binomtest(positive, pairs, 0.5).pvalue),
    }
    return table, summary


def torchao_agreement_table(
    errors: Sequence[Mapping], scale_rule: str = "torchao"
) -> tuple[Table | None, list[dict]]:
    """torchao-QAT cells against ours (same scheme, G, weights and batches), per (N, D).

    A cell agrees when the difference of the seed means is within the larger of the two
    seed sds ("within seed spread").
    """
    ours: dict[tuple, dict[int, float]] = {}
    theirs: dict[tuple, dict[int, float]] = {}
    for e in errors:
        s = e["scheme"]
        if s.endswith("-torchao"):
            theirs.setdefault((s[: -len("-torchao")], e["G"], e["N"], e["D"]), {})[e["seed"]] = e[
                "delta"
            ]
        else:
            ours.setdefault((s, e["G"], e["N"], e["D"]), {})[e["seed"]] = e["delta"]
    keys = sorted(k for k in theirs if k in ours)
    if not keys:
        return None, []
    table = Table(
        "torchao QAT (prepare / convert) against our trainer: delta per cell",
        [
            "scheme",
            "G",
            "N",
            "D",
            "ours (mean ± sd)",
            "torchao (mean ± sd)",
            "difference",
            "seed spread",
            "paired diff sd",
            "agree",
        ],
        notes=(
            "Same initial weights, batches and schedule; only the QAT layers differ (ours: "
            "QuantLinear with an identity straight-through estimator; torchao: "
            "FakeQuantizedLinear after quantize_(model, QATConfig(step='prepare'))). "
            + (
                "Both quantise with torchao's scale convention (the forward passes agree bit "
                "for bit). "
                if scale_rule == "torchao"
                else f"Ours quantise with scale rule {scale_rule!r}, torchao with its own. "
            )
            + "Means and sds over the seeds both trainers ran. The backward passes differ: "
            "torchao's straight-through gradient is zero where its clamp is active (under its "
            "convention this includes each group's largest positive entry), ours passes every "
            "gradient. agree: |difference| <= seed spread (the larger seed sd of the two)."
        ),
    )
    rows = []
    for k in keys:
        seeds = sorted(set(ours[k]) & set(theirs[k]))
        a = np.array([ours[k][s] for s in seeds])
        b = np.array([theirs[k][s] for s in seeds])
        ddof = 1 if len(seeds) > 1 else 0
        spread = float(max(a.std(ddof=ddof), b.std(ddof=ddof)))
        diff = float(b.mean() - a.mean())
        row = {
            "scheme": k[0],
            "G": k[1],
            "N": k[2],
            "D": k[3],
            "ours (mean ± sd)": _fmt_ms(a.mean(), a.std(ddof=ddof)),
            "torchao (mean ± sd)": _fmt_ms(b.mean(), b.std(ddof=ddof)),
            "difference": diff,
            "seed spread": spread,
            "paired diff sd": float((b - a).std(ddof=ddof)),
            "agree": "yes" if abs(diff) <= spread else "no",
        }
        table.add_row(**row)
        rows.append({**row, "seeds": seeds})
    return table, rows


def sweep_figure(errors: Sequence[Mapping], fits: Mapping[str, DeltaFit], floor: float | None):
    """delta against N (one line per D and G) and against D (per N and G): seeds, means, law.

    Log x axes; the y axis is symmetric-log (linear within the noise floor, where delta can be
    negative, logarithmic outside), so every point is shown.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    pts = [e for e in errors if e["scheme"] == "W4A4"]
    fit = fits.get("W4A4")
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    cmap = plt.get_cmap("tab10")
    for ax, x_key, series_keys, xlabel in (
        (axes[0], "N", ("D", "G"), "N (non-embedding parameters)"),
        (axes[1], "D", ("N", "G"), "D (training tokens)"),
    ):
        series = sorted({tuple(e[k] for k in series_keys) for e in pts})
        for i, key in enumerate(series):
            color = cmap(i % 10)
            sel = [e for e in pts if tuple(e[k] for k in series_keys) == key]
            xs = np.array([e[x_key] for e in sel], float)
            ax.plot(xs, [e["delta"] for e in sel], ".", color=color, alpha=0.35, ms=5)
            cells = sorted({e[x_key] for e in sel})
            m = [np.mean([e["delta"] for e in sel if e[x_key] == c]) for c in cells]
            label = ", ".join(
                f"{k}={v:.3g}" if k != "G" else f"G={int(v)}"
                for k, v in zip(series_keys, key, strict=True)
            )
            ax.plot(cells, m, "o", color=color, ms=6, label=label)
            if fit is not None:
                grid = np.geomspace(min(cells), max(cells), 30)
                fixed = dict(zip(series_keys, key, strict=True))
                fixed[x_key] = grid
                ax.plot(
                    grid,
                    fit.law.predict(fixed["N"], fixed["D"], fixed["G"]),
                    "-",
                    color=color,
                    lw=1.2,
                )
        ax.set_xscale("log")
        ax.set_yscale("symlog", linthresh=floor if floor and floor > 0 else 1e-4)
        ax.axhline(0, color="k", lw=0.5)
        if floor:
            ax.axhspan(-floor, floor, color="0.85", zorder=0, label="noise floor (seed sd)")
        ax.set(xlabel=xlabel, ylabel="delta W4A4 (nats)")
        ax.legend(fontsize=7, loc="best")
    fig.suptitle(
        "W4A4 QAT error: small dots = seeds, circles = seed means, lines = law fitted in delta space",
        fontsize=10,
    )
    fig.tight_layout()
    return fig


def _description(spec: GridSpec, records: Sequence[Mapping]) -> str:
    sizes = sorted({(r["N"], r["size"]) for r in records})
    return (
        f"Grid: sizes {', '.join(f'{s} (N={n})' for n, s in sizes)}; budgets "
        f"{', '.join(str(spec.tokens(b)) for b in spec.budgets)} tokens (WSD decay branches, "
        f"decay fraction {spec.decay_fraction}); batch {spec.batch_size} x {spec.seq_len} tokens, "
        f"AdamW lr {spec.lr}; paired seeds {list(spec.paired_seeds)}; corpus {spec.corpus} "
        f"{spec.corpus_kwargs or ''}; quantiser scale rule {spec.scale_rule}; validation on "
        f"{spec.val_batches * spec.batch_size} fixed windows. Training time on file: "
        f"{sum(r['seconds'] for r in records if r['steps'] == spec.budgets[-1]) / 60:.1f} min of "
        "wall time summed over runs."
    )


def _fit_scheme(pts, noise: str, reps: int, seed: int) -> tuple[DeltaFit, str | None]:
    """The law of one scheme under ``noise`` (relative falls back to additive, with a note,
    where too few cells have two or more seeds)."""
    used, note = usable_noise_model(pts, noise)
    return seed_bootstrap(pts, reps=reps, seed=seed, noise=used), note


def write_sweep_report(
    spec: GridSpec,
    records: Sequence[Mapping],
    out: str | Path,
    bootstrap: int = 1000,
    seed: int = 0,
    noise: str = "relative",
) -> list[Path]:
    """Fit and tabulate a sweep's records into ``out``; return the files written.

    ``noise``: the noise model of the law fits (``relative`` or ``additive``,
    :data:`qat_scaling.delta_fit.NOISE_MODELS`); W4A4 is also fitted under the other one.
    """
    t0 = time.perf_counter()
    out = Path(out)
    errors = qat_error(records)
    report = Report("qat-scaling", out)
    report.note(_description(spec, records))
    report.add_section(
        "delta",
        "QAT error delta = L_QAT - L_FP measured on paired runs per (N, D, G), over seeds",
        [delta_cells_table(records, errors)],
    )
    ntable, floors = noise_table(errors)
    mtable, noise_summary = noise_model_table(errors)
    report.add_section(
        "noise",
        "the paired-seed noise floor of delta, and how it grows with delta",
        [ntable, mtable] if noise_summary else [ntable],
    )
    if noise_summary:
        report.save_figure(
            noise_model_figure(errors, noise_summary), "noise_model.png", section="noise"
        )
    other = "additive" if noise == "relative" else "relative"
    fits: dict[str, DeltaFit] = {}
    compare: dict[str, DeltaFit] = {}
    skipped, fallbacks = [], []
    by = _by_scheme(errors)
    for scheme in [s for s in LAW_SCHEMES if s in by] + sorted(set(by) - set(LAW_SCHEMES)):
        try:
            fits[scheme], note = _fit_scheme(by[scheme], noise, bootstrap, seed)
            if note:
                fallbacks.append(f"{scheme}: {note}")
            if scheme == "W4A4":
                compare[f"W4A4 ({other})"], _ = _fit_scheme(by[scheme], other, bootstrap, seed)
        except (NotIdentifiableError, ValueError) as err:
            skipped.append(f"{scheme}: {err}")
    notes = [f"Not fitted: {'; '.join(skipped)}"] if skipped else []
    notes += fallbacks
    w4 = fits.get("W4A4")
    if w4 is not None:
        for f in (w4, *compare.values()):
            verdict = []
            for name in f.free:
                ok = f.excludes_zero(name)
                verdict.append(
                    f"{name} = {getattr(f.law, name):.3g} {_ci_text(f, name)}: "
                    + (
                        "no interval (a size with one seed)"
                        if ok is None
                        else "resolved"
                        if ok
                        else "NOT resolved (interval includes 0)"
                    )
                )
            notes.append(f"W4A4 ({f.noise} noise): " + "; ".join(verdict) + ".")
    report.add_section(
        "law",
        "delta = k D^gD (log2 G)^gG / N^gN with gN, gD, gG > 0",
        [law_table({**fits, **compare}, bootstrap)],
        notes,
    )
    if fits:
        floor = floors.get("W4A4", {}).get("sd")
        report.save_figure(sweep_figure(errors, fits, floor), "delta_fit.png", section="law")
    G_dec = max((g for s, g in spec.runs if s == "W16A4"), default=None)
    dec = decomposition_cells_table(errors, G_dec) if G_dec else None
    if dec is not None:
        parts = [s for s in ("W4A16", "W16A4") if s in fits]
        lines = [
            f"{s}: gN = {fits[s].law.gN:.3g} {_ci_text(fits[s], 'gN')}, gD = "
            + (f"{fits[s].law.gD:.3g} {_ci_text(fits[s], 'gD')}" if "gD" in fits[s].free else "n/a")
            for s in parts
        ]
        report.add_section(
            "decomposition",
            "W4A4 error = weight part + activation part; the weight part grows faster with D",
            [law_table({s: fits[s] for s in parts}, bootstrap), dec],
            ["Exponents of the two parts (seed-bootstrap 95% intervals): " + " | ".join(lines)],
        )
    gtable, gsummary = group_size_contrast_table(errors)
    if gtable is not None:
        report.add_section(
            "group",
            "delta grows with the group size G (gG > 0), cell by cell",
            [gtable],
            [
                f"{gsummary['positive']} of {gsummary['pairs']} paired (cell, seed) differences "
                f"are positive ({gsummary['cells_with_positive_mean']} of {gsummary['cells']} "
                f"cell means); two-sided sign test p = {gsummary['sign_test_p']:.2g}."
            ],
        )
    holdout = None
    if "W4A4" in by:
        try:
            holdout = {}
            for model in (noise, other):
                try:
                    res = holdout_delta(by["W4A4"], noise=model)
                except NotIdentifiableError:
                    continue
                holdout.update({f"{name} ({model})": m for name, m in res.items()})
            if not holdout:
                raise NotIdentifiableError(
                    "no (N, D) cell can be held out with both laws identifiable"
                )
        except NotIdentifiableError as err:
            report.add_section(
                "holdout", "the unified law beats the N-only law on held-out cells", [], [str(err)]
            )
        else:
            t = Table(
                "Held-out error: unified law vs the N-only law (leave one (N, D) cell out, W4A4)",
                ["law", "RMSE of delta (nats)", "held-out cells"],
                notes=(
                    "Each (N, D) cell (all its G) is removed, both laws are refitted to every "
                    "point of the rest (delta space, under the noise model in brackets; the "
                    "N-only law with the unified law's weights) and predict its seed-mean "
                    "deltas. N-only "
                    "law: delta = c_G / N^gN (one constant per G, no D term). Compare with "
                    "the noise floor's SE of a cell mean."
                ),
            )
            for name, m in holdout.items():
                t.add_row(
                    law=name, **{"RMSE of delta (nats)": m["rmse"], "held-out cells": m["cells"]}
                )
            report.add_section(
                "holdout", "the unified law beats the N-only law on held-out cells", [t]
            )
    agree_table, agree_rows = torchao_agreement_table(errors, spec.scale_rule)
    if agree_table is not None:
        n_ok = sum(r["agree"] == "yes" for r in agree_rows)
        report.add_section(
            "torchao",
            "torchao-QAT cells agree with ours within seed spread",
            [agree_table],
            [f"{n_ok} of {len(agree_rows)} cells agree within seed spread."],
        )
    report.metadata = {"seed": seed, "wall_time_s": time.perf_counter() - t0}
    written = report.write()
    result = {
        "grid": asdict(spec),
        "grid_fingerprint": spec.fingerprint(),
        "fits": {s: f.to_dict() for s, f in fits.items()},
        "fits_other_noise_model": {s: f.to_dict() for s, f in compare.items()},
        "noise_model": {"chosen": noise, "cells": noise_summary},
        "noise_floor": floors,
        "holdout": holdout,
        "group_size_contrast": gsummary,
        "torchao_agreement": agree_rows,
        "records": len(records),
    }
    written.append(atomic_write_text(out / "result.json", json.dumps(result, indent=2) + "\n"))
    for s, f in fits.items():
        path = out / f"fit-{s}.json"
        written.append(
            atomic_write_text(path, json.dumps({"scheme": s, **f.to_dict()}, indent=2) + "\n")
        )
    written += [
        out / name for name in ("delta_fit.png", "noise_model.png") if (out / name).exists()
    ]
    return written
