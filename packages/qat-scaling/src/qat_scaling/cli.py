"""Command line of qat-scaling: ``qat-scaling --help``.

``fit/validate/test/predict`` (LightningCLI over :class:`QATLanguageModel` and
:class:`TextDataModule`), ``reproduce``, and the package commands ``sweep`` (the paired
grid), ``fit-law`` (the unified law on a CSV/JSONL of runs), ``decompose``, ``predict-law``,
``outliers`` (input statistics of a trained checkpoint) and ``benchmark``.
"""

from __future__ import annotations

import csv
import json
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from icml26_shared.cli import PaperCLI, UsageError, load_checkpoint

from .paper import PAPER


def _read_errors(runs: Path, scheme: str | None, strict: bool) -> list[dict]:
    """Rows with N, D, G, delta from a CSV (N,D,G,delta[,scheme]) or a grid JSONL file."""
    from .grid import load_records
    from .scaling_law import qat_error

    runs = Path(runs)
    if not runs.is_file():
        raise UsageError(f"runs file {str(runs)!r} does not exist")
    if runs.suffix == ".csv":
        with runs.open(newline="") as fh:
            reader = csv.DictReader(fh)
            missing = {"N", "D", "G", "delta"} - set(reader.fieldnames or [])
            if missing:
                raise UsageError(
                    f"{runs}: missing column(s) {sorted(missing)}; need N, D, G, delta"
                )
            rows = []
            for n, row in enumerate(reader, 2):
                try:
                    rows.append(
                        {
                            "N": float(row["N"]),
                            "D": float(row["D"]),
                            "G": float(row["G"]),
                            "delta": float(row["delta"]),
                            "scheme": row.get("scheme") or "W4A4",
                            **({"seed": int(row["seed"])} if row.get("seed") else {}),
                        }
                    )
                except ValueError:
                    raise UsageError(f"{runs}:{n}: N, D, G and delta must be numbers") from None
    else:
        rows = qat_error(load_records(runs), strict=strict)
    if scheme is not None:
        rows = [r for r in rows if r["scheme"] == scheme]
        if not rows:
            raise UsageError(f"no rows of scheme {scheme!r} in {runs}")
    return rows


def sweep(
    preset: Literal["smoke", "small", "medium"] | None = None,
    sizes: list[str] | None = None,
    budgets: list[int] | None = None,
    runs: list[list[str | int]] | None = None,
    torchao_runs: list[list[str | int]] | None = None,
    torchao_sizes: list[str] | None = None,
    seeds: list[int] | None = None,
    batch_size: int | None = None,
    seq_len: int | None = None,
    lr: float | None = None,
    warmup_steps: int | None = None,
    decay_fraction: float | None = None,
    val_batches: int | None = None,
    corpus: Literal["stdlib", "markov", "text", "hf"] | None = None,
    corpus_kwargs: dict | None = None,
    scale_rule: Literal["absmax", "torchao"] | None = None,
    out: Path = Path("sweep"),
    resume: bool = True,
    train: bool = True,
    seed: int = 0,
    bootstrap: int = 1000,
    noise: Literal["relative", "additive"] = "relative",
) -> None:
    """Train a paired N x D x G x scheme grid (resumable) and fit the law on every point.

    The grid comes from a YAML file (``--config grid.yaml`` with the keys below; ``qat-scaling
    configs sweep-cpu.yaml`` prints a full one) or a named ``--preset``, whose keys the other
    options override.

    Args:
        preset: Start from a named grid: ``smoke`` (seconds), ``small``, ``medium``.
        sizes: Model sizes (``qat_scaling.tiny_llama.SIZES``: s16, s32, s32x3, s64, s96, s128).
        budgets: Increasing optimizer-step budgets, one WSD decay branch each (D = steps x
            batch_size x seq_len tokens).
        runs: ``[scheme, G]`` pairs trained at every size and seed; ``[FP, 0]`` is required
            (schemes: FP, W4A4, W4A16, W16A4, W4A4-FC2A8, W16A4-FC2A8, W16A4-FC2had, ...).
        torchao_runs: ``[scheme, G]`` pairs also trained with torchao's QAT flow (``bench``
            extra; W4A4, W4A16, W16A4).
        torchao_sizes: Sizes of the ``torchao_runs`` (default: every size).
        seeds: Paired seeds (weights and data order); 3 or more give intervals over seeds.
        batch_size, seq_len, lr, warmup_steps, decay_fraction, val_batches: Training settings.
        corpus: ``stdlib`` (CPython's sources), ``markov``, ``text`` (``corpus_kwargs:
            {path: FILE_OR_FOLDER}``, read as bytes) or ``hf`` (``{dataset: HUB_ID_OR_FOLDER}``,
            ``bench`` extra).
        corpus_kwargs: Options of the corpus.
        scale_rule: Scale convention of our quantisers: ``absmax`` (absmax / 7 at 4 bits) or
            ``torchao`` (absmax / 7.5 on [-8, 7], the one of torchao's trainer).
        out: Output folder (``runs.jsonl``, ``result.json``, ``results.md``, ``results.json``,
            ``delta_fit.png``, ``fits.json``); a ``.jsonl`` path writes only the run records.
        resume: Keep the finished runs already in ``out`` (they are never retrained).
        train: ``false``: train nothing, only fit and report the finished runs in ``out``.
        seed: Seed when ``seeds`` is not given.
        bootstrap: Resamples of the seed bootstrap of the law fits.
        noise: Noise model of delta in the law fits: ``relative`` (variance floor^2 + (cv
            mu)^2 from the paired-seed cell variances, reweighted least squares) or
            ``additive`` (constant variance); the report shows W4A4 under both.
    """
    from dataclasses import replace

    from .grid import PRESETS, GridMismatchError, GridSpec, run_grid

    given = {
        "sizes": sizes,
        "budgets": budgets,
        "runs": runs,
        "torchao_runs": torchao_runs,
        "torchao_sizes": torchao_sizes,
        "seeds": seeds,
        "batch_size": batch_size,
        "seq_len": seq_len,
        "lr": lr,
        "warmup_steps": warmup_steps,
        "decay_fraction": decay_fraction,
        "val_batches": val_batches,
        "corpus": corpus,
        "corpus_kwargs": corpus_kwargs,
        "scale_rule": scale_rule,
    }
    given = {k: v for k, v in given.items() if v is not None}
    try:
        if preset is not None:
            spec = replace(PRESETS[preset], seed=seed, **given)
        else:
            missing = [k for k in ("sizes", "budgets", "runs") if k not in given]
            if missing:
                raise UsageError(
                    f"sweep: give --preset or a grid (--config grid.yaml) with {', '.join(missing)}"
                )
            spec = GridSpec(seed=seed, **given)
    except (ValueError, TypeError) as err:
        raise UsageError(f"sweep: {err}") from None
    if spec.torchao_runs:
        from .torchao_parity import torchao_available

        if not torchao_available():
            raise UsageError("torchao_runs need torchao: pip install 'qat-scaling[bench]'")
    out = Path(out)
    runs_file = out if out.suffix == ".jsonl" else out / "runs.jsonl"
    try:
        if train:
            records = run_grid(
                spec, runs_file, resume=resume, on_run=lambda r: print(f"done {r}", flush=True)
            )
        else:
            from .grid import finished_records

            records = finished_records(spec, runs_file)
            if not records:
                raise UsageError(f"no finished runs of this grid in {runs_file}")
    except GridMismatchError as err:
        raise UsageError(str(err)) from None
    except (FileNotFoundError, NotADirectoryError, ValueError) as err:
        raise UsageError(f"sweep: {err}") from None
    print(f"{len(records)} records in {runs_file}")
    if out.suffix != ".jsonl":
        from .scaling_law import NotIdentifiableError
        from .sweep import write_sweep_report

        try:
            written = write_sweep_report(spec, records, out, bootstrap=bootstrap, noise=noise)
        except NotIdentifiableError as err:
            raise UsageError(f"sweep: {err}") from None
        for path in written:
            print(f"wrote {path}")


def fit_law(
    runs: Path,
    scheme: str = "W4A4",
    method: Literal["delta", "ols_log", "huber"] = "delta",
    bootstrap: int = 1000,
    strict: bool = False,
    seed: int = 0,
    out: Path | None = None,
    noise: Literal["relative", "additive"] = "relative",
) -> None:
    """Fit delta = k D^gD (log2 G)^gG / N^gN to a CSV (N,D,G,delta) or a sweep JSONL.

    Args:
        runs: ``.csv`` with columns N, D, G, delta (optional scheme, seed), or a ``sweep``
            JSONL (``DIR/runs.jsonl``).
        scheme: Rows of this scheme are fitted.
        method: ``delta`` (every point in delta space, the noise model of ``--noise``,
            intervals from the seed bootstrap; :mod:`qat_scaling.delta_fit`), or ``ols_log`` / ``huber`` on log delta
            (points with delta <= 0 dropped).
        bootstrap: Bootstrap resamples for percentile intervals (0 = none).
        strict: Fail on delta <= 0 instead of dropping those rows (``ols_log`` / ``huber``).
        seed: Seed of the bootstrap.
        out: Write the fit as JSON here (for ``predict-law``).
        noise: Noise model of ``--method delta``: ``relative`` (variance floor^2 + (cv mu)^2,
            estimated from cells with >= 2 seeds; with fewer than two such cells, additive is
            used and a note printed) or ``additive`` (constant variance).
    """
    from .scaling_law import compare_laws, fit_qat_law

    rows = _read_errors(runs, scheme, strict)
    args = (
        [r["N"] for r in rows],
        [r["D"] for r in rows],
        [r["G"] for r in rows],
        [r["delta"] for r in rows],
    )
    if method == "delta":
        from .delta_fit import holdout_delta, noise_floor, seed_bootstrap, usable_noise_model
        from .scaling_law import NotIdentifiableError

        if strict and any(r["delta"] <= 0 for r in rows):
            raise UsageError(f"{runs}: delta <= 0 in some rows (--strict)")
        pts = [
            {**r, "size": r.get("size", r["N"]), "seed": r.get("seed", i)}
            for i, r in enumerate(rows)
        ]
        noise, note = usable_noise_model(pts, noise)
        if note:
            print(f"note: {note}")
        try:
            fit = seed_bootstrap(pts, reps=bootstrap, seed=seed, noise=noise)
        except (NotIdentifiableError, ValueError) as err:
            hint = " (or --noise additive)" if noise == "relative" else ""
            raise UsageError(f"{runs}: {err}{hint}") from None
        law = fit.law
        print(
            f"{scheme}: delta = {law.k:.4g} * D^{law.gD:.4g} * (log2 G)^{law.gG:.4g} / N^{law.gN:.4g}  (delta space, {noise} noise, n={fit.n}, sigma={fit.sigma:.3g})"
        )
        if fit.variance is not None:
            v = fit.variance
            print(f"  noise model: sd(delta) = sqrt({v.floor:.3g}^2 + ({v.cv:.3g} mu)^2)")
        for name in ("gN", "gD", "gG"):
            ci = "fixed 0 (one value)" if name not in fit.free else _ci(fit.ci.get(name))
            print(f"  {name}: {getattr(law, name):.4g}  seed-bootstrap 95% CI {ci}")
        nf = noise_floor(pts)
        print(f"  noise floor: median seed sd of delta {nf['sd']:.3g} over {nf['cells']} cells")
        try:
            for name, m in holdout_delta(pts, noise=noise).items():
                print(f"  held-out ({name}): RMSE delta {m['rmse']:.4g} over {m['cells']} cells")
        except NotIdentifiableError as err:
            print(f"  held-out comparison skipped: {err}")
        if out is not None:
            from icml26_shared.results import atomic_write_text

            atomic_write_text(out, json.dumps({"scheme": scheme, **fit.to_dict()}, indent=2))
            print(f"wrote {out}")
        return
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", RuntimeWarning)
        fit = fit_qat_law(*args, method=method, bootstrap=bootstrap, seed=seed, strict=strict)
    for w in caught:
        print(f"warning: {w.message}")
    law = fit.law
    print(
        f"{scheme}: delta = {law.k:.4g} * D^{law.gD:.4g} * (log2 G)^{law.gG:.4g} / N^{law.gN:.4g}  ({method}, n={fit.n}, R2={fit.r2:.4f})"
    )
    for name in ("k", "gN", "gD", "gG"):
        ci = fit.ci.get(name)
        boot = fit.bootstrap_ci.get(name)
        print(f"  {name}: {getattr(law, name):.4g}  95% CI {_ci(ci)}  bootstrap {_ci(boot)}")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            cmp = compare_laws(*args)
        for name, m in cmp.items():
            print(
                f"  held-out ({name}): RMSE log delta {m['rmse_log']:.4f}, mean |rel err| {m['mape']:.3f} over {m['cells']} cells"
            )
    except ValueError as err:
        print(f"  held-out comparison skipped: {err}")
    if out is not None:
        Path(out).write_text(json.dumps({"scheme": scheme, **fit.to_dict()}, indent=2))
        print(f"wrote {out}")


def _ci(ci) -> str:
    return "n/a" if not ci else f"[{ci[0]:.4g}, {ci[1]:.4g}]"


def decompose(
    runs: Path,
    bootstrap: int = 500,
    seed: int = 0,
    noise: Literal["relative", "additive"] = "relative",
) -> None:
    """Fit the law to W4A4, W4A16 (weight part) and W16A4 (activation part) of a sweep JSONL.

    Each scheme is fitted to every point in delta space with seed-bootstrap intervals
    (:func:`qat_scaling.delta_fit.decompose_delta`), like ``fit-law --method delta``.

    Args:
        runs: JSONL written by ``sweep`` (or a CSV with N, D, G, delta, scheme[, seed]).
        bootstrap: Seed-bootstrap resamples (0 = no intervals).
        seed: Seed of the bootstrap.
        noise: Noise model of delta (see ``fit-law``).
    """
    from .delta_fit import decompose_delta

    rows = _read_errors(runs, None, False)
    pts = [{**r, "seed": r.get("seed", i)} for i, r in enumerate(rows)]
    fits = decompose_delta(pts, reps=bootstrap, seed=seed, noise=noise)
    if not fits:
        raise UsageError(f"no scheme in {runs} has enough distinct N and D to fit the law")
    print(_delta_fit_lines(fits))


def _delta_fit_lines(fits) -> str:
    """One line per scheme: k, each exponent with its seed-bootstrap interval, sigma, n."""
    lines = []
    for scheme, fit in fits.items():
        law = fit.law
        parts = [f"{scheme:6s} k={law.k:.4g}"]
        for name in ("gN", "gD", "gG"):
            if name in fit.free:
                parts.append(f"{name}={getattr(law, name):.4g} {_ci(fit.ci.get(name))}")
            else:
                parts.append(f"{name}=fixed 0")
        parts.append(f"sigma={fit.sigma:.3g} n={fit.n}")
        lines.append(" ".join(parts))
    return "\n".join(lines)


def predict_law(
    N: float,
    D: float,
    G: int,
    fit: Path | None = None,
    k: float | None = None,
    gN: float | None = None,
    gD: float | None = None,
    gG: float | None = None,
) -> None:
    """Predict the QAT error delta at (N, D, G) from a fit JSON or explicit parameters.

    Args:
        N: Non-embedding parameters.
        D: Training tokens.
        G: Group size (>= 2).
        fit: JSON written by ``fit-law --out``.
        k, gN, gD, gG: Law parameters (instead of ``fit``).
    """
    from .scaling_law import QATLaw

    if G < 2:
        raise UsageError(f"G must be >= 2, got {G}")
    if N <= 0 or D <= 0:
        raise UsageError("N and D must be positive")
    if fit is not None:
        if not Path(fit).is_file():
            raise UsageError(f"fit file {str(fit)!r} does not exist")
        try:
            law = QATLaw(**json.loads(Path(fit).read_text())["law"])
        except (KeyError, TypeError, json.JSONDecodeError) as err:
            raise UsageError(f"{fit} is not a fit-law JSON ({err})") from None
    elif None in (k, gN, gD, gG):
        raise UsageError("give --fit or all of --k --gN --gD --gG")
    else:
        law = QATLaw(k, gN, gD, gG)
    print(f"delta({N:g}, {D:g}, {G}) = {float(law.predict(N, D, G)):.6g}")


def outliers(
    ckpt: Path,
    bits: int = 4,
    group_size: int = 32,
    corpus: Literal["stdlib", "markov"] = "stdlib",
    windows: int = 8,
) -> None:
    """Input statistics (kurtosis, max/RMS, A4 error) of every linear layer of a checkpoint.

    Args:
        ckpt: Lightning checkpoint of ``qat-scaling fit``.
        bits: Bits of the quantiser for the relative-error column.
        group_size: Its group size.
        corpus: Text for the probe windows (validation split).
        windows: Number of probe windows.
    """
    from .activation_outliers import activation_statistics
    from .fake_quant import check_bits
    from .lightning import QATLanguageModel, TextDataModule

    check_bits(bits)
    module = load_checkpoint(QATLanguageModel, ckpt)
    dm = TextDataModule(
        corpus,
        module.hparams.seq_len,
        batch_size=windows,
        val_batches=1,
        corpus_kwargs={"max_bytes": 2_000_000}
        if corpus == "stdlib"
        else {"vocab": module.hparams.vocab_size},
    )
    dm.setup("fit")
    batch = dm.val_batches()[0][:, :-1]
    stats = activation_statistics(module.model, batch, bits, group_size)
    print(f"{'layer':18s} {'kurtosis':>9s} {'max/RMS':>8s} {'A' + str(bits) + ' rel MSE':>12s}")
    for name, s in stats.items():
        print(f"{name:18s} {s['kurtosis']:9.2f} {s['max_over_rms']:8.2f} {s['rel_mse']:12.5f}")


def benchmark(
    preset: Literal["smoke", "small", "medium"] = "smoke",
    out: Path = Path("benchmark-runs.jsonl"),
    seed: int = 0,
) -> None:
    """Sweep a preset, print delta per scheme and G, fit the law per scheme in delta space.

    Args:
        preset: Grid preset.
        out: JSONL of the runs (resumed).
        seed: Seed.
    """
    from dataclasses import replace

    from .delta_fit import decompose_delta
    from .grid import PRESETS, run_grid
    from .scaling_law import qat_error

    records = run_grid(replace(PRESETS[preset], seed=seed), out)
    errors = qat_error(records)
    print("| scheme | G | mean delta | runs |\n|---|---|---|---|")
    groups: dict[tuple, list[float]] = {}
    for e in errors:
        groups.setdefault((e["scheme"], e["G"]), []).append(e["delta"])
    for (s, g), v in groups.items():
        print(f"| {s} | {g} | {sum(v) / len(v):.5f} | {len(v)} |")
    fits = decompose_delta(errors, reps=0)
    if fits:
        print("\nlaw in delta space (every point; no intervals with one seed):")
        print(_delta_fit_lines(fits))


def build_cli() -> PaperCLI:
    """The package's CLI (nothing heavy is imported until a command runs)."""
    return PaperCLI(
        PAPER,
        model_class="qat_scaling.lightning:QATLanguageModel",
        datamodule_class="qat_scaling.lightning:TextDataModule",
        commands={
            "sweep": "qat_scaling.cli:sweep",
            "fit-law": "qat_scaling.cli:fit_law",
            "decompose": "qat_scaling.cli:decompose",
            "predict-law": "qat_scaling.cli:predict_law",
            "outliers": "qat_scaling.cli:outliers",
            "benchmark": "qat_scaling.cli:benchmark",
        },
        trainer_defaults={"max_steps": 200, "val_check_interval": 100, "limit_val_batches": 8},
    )


def _fp16_on_cpu(argv: Sequence[str]) -> str | None:
    """The fp16 precision asked for on a machine without CUDA (Lightning would swap it)."""
    import torch

    for i, tok in enumerate(argv):
        value = None
        if tok == "--trainer.precision" and i + 1 < len(argv):
            value = argv[i + 1]
        elif tok.startswith("--trainer.precision="):
            value = tok.split("=", 1)[1]
        if value is not None and "16" in value and "bf16" not in value:
            accel = [argv[j + 1] for j, t in enumerate(argv[:-1]) if t == "--trainer.accelerator"]
            if (accel and accel[-1] == "cpu") or not torch.cuda.is_available():
                return value
    return None


def main(args: Sequence[str] | None = None) -> int:
    """Entry point of the ``qat-scaling`` console script."""
    import sys

    argv = list(sys.argv[1:] if args is None else args)
    if argv and argv[0] in ("fit", "validate", "test", "predict"):
        bad = _fp16_on_cpu(argv)
        if bad is not None:
            print(
                f"qat-scaling: error: precision {bad!r} (fp16) is not supported for training on "
                "the CPU; use 32-true or bf16-mixed",
                file=sys.stderr,
            )
            return 2
    return build_cli().main(args)
