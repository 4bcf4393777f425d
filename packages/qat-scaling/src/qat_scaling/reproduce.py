"""``qat-scaling reproduce``: the paper's headline analysis at CPU scale.

Paper: "Scaling Law for Quantization-Aware Training", Chen et al., arXiv 2505.14302.

One run trains a paired grid (:mod:`qat_scaling.grid`: FP baseline, W4A4 at several G,
W4A16, W16A4, FC2-A8 mixed precision, and a Hadamard-rotated FC2 input as the outlier
anchor), then reports:

* per (N, D): the FP loss and delta = L_QAT - L_FP of every scheme (tokens D from WSD decay
  branches of one run per scheme);
* the unified law fitted to W4A4 (and, where identifiable, to W4A16 / W16A4: the
  decomposition) with OLS and bootstrap 95 % intervals and R^2;
* leave-one-(N, D)-cell-out error of the unified law next to the N-only prior law;
* the Chinchilla fit of the FP loss (where identifiable);
* input statistics of every linear layer of the FP models (kurtosis, max/RMS, 4-bit error);
* a figure of delta against N, D and G with the fitted law;
* the torchao anchor (``bench`` extra): our W4A4 / W8A8 fake quantisers against torchao's
  ``FakeQuantizedLinear`` at the same convention (:mod:`qat_scaling.torchao_parity`).
"""

from __future__ import annotations

import time
import warnings
from dataclasses import replace
from pathlib import Path

import numpy as np
from icml26_shared.results import Report, Table

from .grid import PRESETS, GridSpec, run_grid, spec_hash
from .quant_linear import LLAMA_LINEARS
from .scaling_law import (
    NotIdentifiableError,
    compare_laws,
    decompose,
    fit_chinchilla,
    qat_error,
)


def reproduce(out: Path, quick: bool = False, seed: int = 0) -> Report:
    """Train the paired grid (``small`` preset with ``quick``, else ``medium``), fit, report."""
    cpu_start, wall_start = time.process_time(), time.perf_counter()
    preset = "small" if quick else "medium"
    spec = replace(PRESETS[preset], seed=seed)
    out = Path(out)
    runs_path = out / f"runs-{preset}-{spec_hash(spec)}.jsonl"
    records = run_grid(spec, runs_path)
    report = Report("qat-scaling", out)
    report.note(
        f"Grid preset {preset!r}: sizes {', '.join(spec.sizes)}, token budgets "
        f"{', '.join(str(spec.tokens(b)) for b in spec.budgets)} (WSD decay branches, decay "
        f"fraction {spec.decay_fraction}), batch {spec.batch_size} x {spec.seq_len} tokens, "
        f"AdamW lr {spec.lr}, seed {seed}; corpus {_corpus_line(spec)}. Validation on "
        f"{spec.val_batches * spec.batch_size} fixed held-out windows. Runs: {runs_path.name} "
        "(resumable: rerunning reuses finished runs)."
    )
    errors = qat_error([r for r in records if r["seed"] == seed])
    report.add_table(_delta_table(records, errors, spec, seed))
    fits = decompose(errors, bootstrap=1000, seed=seed)
    report.add_table(_fit_table(fits))
    decomposition = _decomposition_table(errors, _decomposition_group(spec))
    if decomposition is not None:
        report.add_table(decomposition)
        _plot_decomposition(report, errors, _decomposition_group(spec))
    w4a4 = [e for e in errors if e["scheme"] == "W4A4"]
    report.add_table(_holdout_table(w4a4))
    chin = _chinchilla_table(records, seed)
    if chin is not None:
        report.add_table(chin)
    report.add_table(_outlier_table(records, seed))
    _plot(report, w4a4, fits.get("W4A4"), spec)
    parity = _torchao_table(spec, seed)
    if parity is None:
        report.note("torchao cross-check skipped: torchao is not installed "
                    "(pip install 'qat-scaling[bench]').")  # fmt: skip
    else:
        report.add_table(parity)
    _summary(report, records, errors, fits, seed)
    report.note(
        f"Wall time {time.perf_counter() - wall_start:.0f} s, CPU time "
        f"{time.process_time() - cpu_start:.0f} s of this process (finished runs reused: "
        f"{'see ' + runs_path.name})."
    )
    return report


def _torchao_table(spec: GridSpec, seed: int) -> Table | None:
    """Our fake quantisers vs torchao's on Gaussian and heavy-tailed (Student t, 3 dof) inputs."""
    import torch

    from .quant_linear import QuantLinear
    from .torchao_parity import compare, torchao_available

    if not torchao_available():
        return None
    table = Table(
        "Anchor: our fake quantisers vs torchao's FakeQuantizedLinear (scale_rule='torchao')",
        ["bits", "G", "input", "weight mismatched", "input mismatched", "output max |diff|"],
        notes=(
            "A 256 x 256 layer (Kaiming-uniform weights) on 512 input rows; mismatched = "
            "entries whose quantised value differs from torchao's (IntxFakeQuantizer, symmetric "
            "per-group weights and per-token per-group activations). Same convention: "
            "s = absmax / ((2^b - 1)/2), integers in [-2^(b-1), 2^(b-1) - 1]."
        ),
    )  # fmt: skip
    groups = sorted({g for scheme, g in spec.runs if scheme == "W4A4" and g})
    torch.manual_seed(seed)
    inputs = {
        "Gaussian": torch.randn(512, 256),
        "Student t (3)": torch.distributions.StudentT(3.0).sample((512, 256)),
    }
    for bits in (4, 8):
        for G in groups:
            layer = QuantLinear(256, 256, w_bits=bits, a_bits=bits, group_size=G,
                                scale_rule="torchao")  # fmt: skip
            for name, x in inputs.items():
                r = compare(layer, x)
                table.add_row(**{
                    "bits": f"W{bits}A{bits}", "G": G, "input": name,
                    "weight mismatched": r["weight"], "input mismatched": r["input"],
                    "output max |diff|": r["output_max_abs_diff"],
                })  # fmt: skip
    return table


def _corpus_line(spec: GridSpec) -> str:
    if spec.corpus == "stdlib":
        from .corpora import StdlibCorpus

        return StdlibCorpus(**spec.corpus_kwargs).describe()
    return spec.corpus


def _schemes(errors: list[dict]) -> list[tuple[str, int]]:
    seen = []
    for e in errors:
        key = (e["scheme"], e["G"])
        if key not in seen:
            seen.append(key)
    return seen


def _delta_table(records, errors, spec, seed) -> Table:
    cols = [f"{s} G={g}" for s, g in _schemes(errors)]
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
        for s, g in _schemes(errors):
            row[f"{s} G={g}"] = by.get((size, d, s, g))
        table.add_row(**row)
    return table


def _fit_table(fits) -> Table:
    table = Table(
        "Unified law delta = k D^gD (log2 G)^gG / N^gN fitted per scheme",
        [
            "scheme",
            "k",
            "gN",
            "gN 95% CI",
            "gD",
            "gD 95% CI",
            "gG",
            "gG 95% CI",
            "R2",
            "n",
            "gN boot CI",
            "gD boot CI",
            "gG boot CI",
        ],
        notes=(
            "OLS on log delta; 95 % intervals from the t distribution, and percentile intervals "
            "from 1000 bootstrap resamples of the runs. Points with delta <= 0 (QAT not worse "
            "than FP at the measured precision) are dropped. W4A16 is the weight part, W16A4 "
            "the activation part of the W4A4 error. Paper's expectation: gN > 0, gD > 0, "
            "gG > 0, and gD(W4A16) > gD(W16A4)."
        ),
    )

    def fmt(ci, name):
        if name not in ci:
            return None
        lo, hi = ci[name]
        return f"[{lo:.3g}, {hi:.3g}]"

    for scheme, fit in fits.items():
        law = fit.law
        table.add_row(
            scheme=scheme,
            k=law.k,
            gN=law.gN,
            gD=law.gD,
            gG=law.gG,
            R2=fit.r2,
            n=fit.n,
            **{
                "gN 95% CI": fmt(fit.ci, "gN"),
                "gD 95% CI": fmt(fit.ci, "gD"),
                "gG 95% CI": fmt(fit.ci, "gG"),
                "gN boot CI": fmt(fit.bootstrap_ci, "gN"),
                "gD boot CI": fmt(fit.bootstrap_ci, "gD"),
                "gG boot CI": fmt(fit.bootstrap_ci, "gG"),
            },
        )
    return table


_PARTS = (
    ("W4A4", "d W4A4"),
    ("W4A16", "d_W (W4A16)"),
    ("W16A4", "d_A (W16A4)"),
    ("W16A4-FC2A8", "d_A FC2-A8"),
    ("W16A4-FC2had", "d_A FC2-Hadamard"),
    ("W4A4-FC2A8", "d W4A4-FC2A8"),
)


def _decomposition_group(spec: GridSpec) -> int:
    """The G at which the decomposition schemes were run (the largest such G)."""
    gs = [g for s, g in spec.runs if s in ("W4A16", "W16A4") and g]
    return max(gs) if gs else 0


def _decomposition_table(errors, G: int) -> Table | None:
    """Per (N, D) at one G: delta_W4A4 against its weight and activation parts, FC2 fixes."""
    by = {(e["size"], e["N"], e["D"], e["scheme"]): e["delta"] for e in errors if e["G"] == G}
    cells = sorted({(k[1], k[2], k[0]) for k in by})
    if not G or not cells or not any(k[3] == "W16A4" for k in by):
        return None
    ran = {k[3] for k in by}
    parts = [(scheme, label) for scheme, label in _PARTS if scheme in ran]
    table = Table(
        f"Weight / activation decomposition and FC2 mixed precision (G = {G})",
        [
            "size",
            "N",
            "D",
            *(label for _, label in parts),
            "d_W + d_A",
            "d_W / d_A",
            "d_W / d_A FC2-A8",
        ],
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
    )
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


def _plot_decomposition(report: Report, errors, G: int) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sizes = sorted({(e["N"], e["size"]) for e in errors})
    fig, axes = plt.subplots(1, len(sizes), figsize=(4 * len(sizes), 3.2), squeeze=False)
    for ax, (n, size) in zip(axes[0], sizes, strict=True):
        for scheme, label in _PARTS[:5]:
            pts = sorted(
                (e["D"], e["delta"])
                for e in errors
                if e["N"] == n and e["G"] == G and e["scheme"] == scheme
            )
            if pts:
                ax.plot([p[0] for p in pts], [p[1] for p in pts], "o-", ms=3, label=label)
        ax.axhline(0, color="k", lw=0.5)
        ax.set(xscale="log", xlabel="D (tokens)", ylabel="delta (nats)", title=f"{size} (N={n})")
    axes[0][0].legend(fontsize=7)
    fig.suptitle(f"Weight vs activation part of the W4A4 error, G = {G}", fontsize=10)
    fig.tight_layout()
    report.save_figure(fig, "decomposition.png")


def _holdout_table(w4a4) -> Table:
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
            cmp = compare_laws(
                [e["N"] for e in w4a4],
                [e["D"] for e in w4a4],
                [e["G"] for e in w4a4],
                [e["delta"] for e in w4a4],
            )
    except (NotIdentifiableError, ValueError) as err:
        table.notes += f" Not computed: {err}."
        return table
    for name, m in cmp.items():
        table.add_row(
            law=name,
            **{
                "RMSE log delta": m["rmse_log"],
                "mean |rel. error|": m["mape"],
                "held-out cells": m["cells"],
            },
        )
    return table


def _chinchilla_table(records, seed) -> Table | None:
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
    table.add_row(
        A=law.A,
        alpha=law.alpha,
        B=law.B,
        beta=law.beta,
        E=law.E,
        points=len(fp),
        **{"RMS log residual": rms},
    )
    return table


def _outlier_table(records, seed) -> Table:
    table = Table(
        "Input statistics of each linear layer (FP models, largest D, mean over blocks)",
        ["size", "stat", *[n.split(".")[-1] for n in LLAMA_LINEARS]],
        notes=(
            "kurtosis: Pearson kurtosis of the layer's input entries (3 = Gaussian); max/RMS; "
            "A4 rel. MSE: ||Q(x) - x||^2 / ||x||^2 for 4-bit per-token per-group quantisation "
            "at the grid's largest G. q/k/v share one input (after the attention norm), gate/up "
            "another; down_proj's input is the SwiGLU product silu(gate) * up (FC2 input)."
        ),
    )
    for r in records:
        if r["scheme"] != "FP" or r["seed"] != seed or "act_stats" not in r:
            continue
        for stat, label in (
            ("kurtosis", "kurtosis"),
            ("max_over_rms", "max/RMS"),
            ("rel_mse", "A4 rel. MSE"),
        ):
            table.add_row(
                size=r["size"],
                stat=label,
                **{n.split(".")[-1]: r["act_stats"][n][stat] for n in LLAMA_LINEARS},
            )
    return table


def _plot(report: Report, w4a4, fit, spec: GridSpec) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(12, 3.4))
    pts = [e for e in w4a4 if e["delta"] > 0]
    N = np.array([e["N"] for e in pts], float)
    D = np.array([e["D"] for e in pts], float)
    G = np.array([e["G"] for e in pts], float)
    y = np.array([e["delta"] for e in pts], float)
    for ax, x, label, others in (
        (axes[0], N, "N (non-embedding parameters)", (D, G)),
        (axes[1], D, "D (tokens)", (N, G)),
        (axes[2], G, "G (group size)", (N, D)),
    ):
        keys = sorted(set(zip(*[o.tolist() for o in others], strict=True)))
        for key in keys:
            mask = np.all([o == k for o, k in zip(others, key, strict=True)], axis=0)
            order = np.argsort(x[mask])
            line = ax.plot(x[mask][order], y[mask][order], "o", ms=4)[0]
            if fit is not None:
                grid = np.geomspace(x[mask].min(), x[mask].max(), 20)
                args = {"N": (grid, *key), "D": (key[0], grid, key[1]), "G": (*key, grid)}[label[0]]
                ax.plot(grid, fit.law.predict(*args), "-", color=line.get_color(), lw=1)
        ax.set(xscale="log", yscale="log", xlabel=label, ylabel="delta W4A4 (nats)")
    fig.suptitle("W4A4 QAT error: points measured, lines the fitted unified law", fontsize=10)
    fig.tight_layout()
    report.save_figure(fig, "delta_vs_N_D_G.png")


def _summary(report, records, errors, fits, seed) -> None:
    lines = []
    w = fits.get("W4A4")
    if w is not None:
        for name in ("gN", "gD", "gG"):
            lo, hi = w.ci.get(name, (float("nan"), float("nan")))
            sign = "> 0" if lo > 0 else ("< 0" if hi < 0 else "CI contains 0")
            lines.append(f"W4A4 {name} = {getattr(w.law, name):.3g} [{lo:.3g}, {hi:.3g}] ({sign})")
    if "W4A16" in fits and "W16A4" in fits:
        lines.append(
            f"gD weight (W4A16) = {fits['W4A16'].law.gD:.3g} vs activation (W16A4) = {fits['W16A4'].law.gD:.3g}"
        )
    by = {}
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
            f"{np.mean(by.get(('W16A4', 32), [np.nan])):.4f}, delta_A with FC2-A8 {np.mean(by[('W16A4-FC2A8', 32)]):.4f}"
        )
    worst = {}
    for r in records:
        if r["scheme"] == "FP" and r["seed"] == seed and "act_stats" in r:
            k = max(r["act_stats"], key=lambda n: r["act_stats"][n]["kurtosis"])
            worst[r["size"]] = k.split(".")[-1]
    if worst:
        lines.append("largest input kurtosis: " + ", ".join(f"{s}: {k}" for s, k in worst.items()))
    noise = _seed_noise(records, seed)
    if noise is not None:
        lines.append(f"FP seed noise |L(seed {seed}) - L(other seed)|: mean {noise:.4f} nats")
    report.note("Summary (from this run): " + " | ".join(lines))


def _seed_noise(records, seed) -> float | None:
    base = {
        (r["size"], r["D"]): r["val_loss"]
        for r in records
        if r["scheme"] == "FP" and r["seed"] == seed
    }
    diffs = [
        abs(r["val_loss"] - base[(r["size"], r["D"])])
        for r in records
        if r["scheme"] == "FP" and r["seed"] != seed and (r["size"], r["D"]) in base
    ]
    return float(np.mean(diffs)) if diffs else None
