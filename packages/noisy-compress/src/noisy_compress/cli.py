"""Command line of noisy-compress: ``noisy-compress --help``.

``fit/validate/test/predict`` (LightningCLI over :class:`~noisy_compress.lightning.ConvolvedMLEModule`
or :class:`~noisy_compress.lightning.TournamentModule`, with
:class:`~noisy_compress.lightning.NoisySampleDataModule` or
:class:`~noisy_compress.lightning.SklearnNoisyDataModule`; configs use ``class_path``),
``reproduce --preset quick|full|paper``, and the package commands ``learn`` (``--out`` writes the
fit, its guarantee, the held-out log-likelihood and a figure), ``evaluate`` (reloads that fit),
``bound``, ``curve`` and ``benchmark``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from icml26_shared.cli import PaperCLI, UsageError

from .paper import PAPER

FamilyName = Literal["uniform", "gaussian", "axis-gaussian"]
NoiseName = Literal["gaussian", "laplace", "uniform", "fejer"]


def _read_samples(path: Path):
    """Samples from ``.npy`` (1-D or 2-D) or text (``.csv``: commas; else whitespace), as ``(n, d)``."""
    import numpy as np

    path = Path(path)
    if not path.is_file():
        raise UsageError(f"data file {str(path)!r} does not exist")
    try:
        if path.suffix == ".npy":
            y = np.load(path, allow_pickle=False)
        else:
            delim = "," if path.suffix == ".csv" else None
            try:
                y = np.loadtxt(path, delimiter=delim, ndmin=2)
            except ValueError:  # a header line
                y = np.loadtxt(path, delimiter=delim, ndmin=2, skiprows=1)
        y = np.asarray(y, dtype=float)
    except (ValueError, OSError, TypeError) as err:
        raise UsageError(f"cannot read samples from {str(path)!r}: {err}") from err
    if y.ndim == 1:
        y = y[:, None]
    if y.ndim != 2 or y.shape[0] == 0:
        raise UsageError(
            f"samples in {str(path)!r} must be a 1-D array (n,) or a 2-D array (n, d); got shape "
            f"{y.shape}"
        )
    if not np.all(np.isfinite(y)):
        raise UsageError(f"samples in {str(path)!r} contain NaN or inf")
    return y


def learn(
    data: Path | None = None,
    target: str = "uniform",
    n: int = 2000,
    family: FamilyName | None = None,
    k: int | None = None,
    noise: NoiseName = "gaussian",
    noise_scale: float = 0.1,
    eps: float | None = None,
    delta: float = 0.1,
    strategy: Literal["auto", "all", "sample", "search", "seeded"] = "auto",
    selection: Literal["auto", "scheffe", "min_distance", "knockout"] = "auto",
    max_candidates: int | None = None,
    delta_q: float | None = None,
    numerical: bool = False,
    holdout: float = 0.2,
    out: Path | None = None,
    seed: int = 0,
) -> None:
    """Learn a member of a compressible family from noisy samples; print the fit and its guarantee.

    Args:
        data: Noisy samples: ``.npy`` (shape (n,) or (n, d)), ``.csv`` (comma-separated, one
            sample per row, optional header) or whitespace text (default: draw ``n`` samples of
            the planted ``target``).
        target: Planted target when no data file is given (uniform, uniform-mixture,
            uniform-mixture-unequal, gaussian, gmm, uniform-2d).
        n: Number of planted samples.
        family: Family (default: the target's, or uniform for a data file).
        k: Mixture components (default: the target's, else 1).
        noise: Known noise law.
        noise_scale: Its scale (sigma, b, h or the band limit W).
        eps: Code precision in (0, 1) (default sqrt(ln n / n)).
        delta: Confidence in (0, 1).
        strategy: Candidate generation.
        selection: Tournament.
        max_candidates: Candidate budget (default ceil(32 ln n)).
        delta_q: Quantisation step (default eps * std / 2).
        numerical: Allow Monte-Carlo convolutions without a closed form.
        holdout: Fraction of the samples kept aside to report the held-out log-likelihood of the
            fitted noisy law (0: none).
        out: Folder for result.json (fit, guarantee, held-out log-likelihood), model.json (the
            fitted density, reloaded by ``evaluate``) and fit.png.
        seed: Seed.
    """
    import json

    import numpy as np

    from .families import make_family
    from .metrics import tv_distance
    from .noise import make_noise
    from .noisy_data import make_target, noisy_sample

    if not 0 <= holdout < 1:
        raise UsageError(f"holdout must be in [0, 1); got {holdout}")
    if out is not None:
        from icml26_shared.results import ensure_writable_dir

        ensure_writable_dir(out)
    truth = None
    if data is not None:
        y = _read_samples(data)
        fam = make_family(family or "uniform", d=y.shape[1], k=1 if k is None else k)
    else:
        tgt = make_target(target)
        fam = make_family(family or tgt.family, d=tgt.density.d, k=tgt.k if k is None else k)
        truth = tgt.density
    nz = make_noise(noise, noise_scale, d=fam.d)
    if data is None:
        _, y = noisy_sample(truth, nz, n, np.random.default_rng(seed))
    perm = np.random.default_rng([seed, 1]).permutation(len(y))
    n_test = int(round(holdout * len(y)))
    y_test, y_fit = y[perm[:n_test]], y[perm[n_test:]]
    from .learner import learn as run
    from .likelihood import convolved_loglik

    res = run(
        fam,
        y_fit,
        nz,
        eps=eps,
        delta=delta,
        strategy=strategy,
        selection=selection,
        max_candidates=max_candidates,
        delta_q=delta_q,
        numerical=numerical,
        seed=seed,
    )
    print(res.summary())
    result = {
        "family": repr(fam),
        "noise": {"name": noise, "scale": noise_scale, "repr": repr(nz)},
        "data": str(data) if data is not None else f"planted {target}, n = {n}, seed {seed}",
        "n_fit": len(y_fit),
        "n_holdout": n_test,
        "fit": res.to_dict(),
    }
    if n_test:
        ll = convolved_loglik(res.density, nz, y_test, numerical=numerical)
        result["heldout_loglik"] = ll
        print(f"held-out log-likelihood of the noisy data under f_hat*g: {ll:.4f} (n = {n_test})")
    if truth is not None and truth.d <= 2:
        tv = tv_distance(truth, res.density)
        result["tv_to_planted"] = tv
        print(f"TV to the planted target: {tv:.4f}")
    if out is not None:
        from icml26_shared.results import atomic_write_figure, atomic_write_text

        from .plots import fit_figure

        out = Path(out)
        model = {"family": repr(fam), "noise": result["noise"], "density": res.density.params()}
        atomic_write_text(out / "model.json", json.dumps(model, indent=2) + "\n")
        atomic_write_text(out / "result.json", json.dumps(result, indent=2, default=str) + "\n")
        fig = fit_figure(y, res.density, nz, truth, title=f"{fam!r}, {nz!r}, n = {len(y)}")
        atomic_write_figure(out / "fit.png", fig)
        print(f"wrote {out / 'result.json'}, {out / 'model.json'} and {out / 'fit.png'}")


def evaluate(
    model: Path,
    data: Path,
    clean: bool = False,
    numerical: bool = False,
) -> None:
    """Score samples under a fitted density saved by ``learn --out`` (mean log-likelihood).

    Args:
        model: The ``model.json`` written by ``learn --out``.
        data: Samples (same formats as ``learn --data``).
        clean: The samples are clean (score them under f_hat) instead of noisy (under f_hat*g).
        numerical: Allow Monte-Carlo convolutions without a closed form.
    """
    import json

    import numpy as np

    from .densities import density_from_params
    from .likelihood import convolved_loglik
    from .noise import make_noise

    model = Path(model)
    if not model.is_file():
        raise UsageError(f"model file {str(model)!r} does not exist")
    try:
        spec = json.loads(model.read_text())
        dens = density_from_params(spec["density"])
        nz = make_noise(spec["noise"]["name"], spec["noise"]["scale"], d=dens.d)
    except (ValueError, KeyError, TypeError) as err:
        raise UsageError(
            f"{str(model)!r} is not a model.json written by learn --out: {err}"
        ) from err
    y = _read_samples(data)
    if y.shape[1] != dens.d:
        raise UsageError(f"the model is {dens.d}-D but the samples have {y.shape[1]} columns")
    if clean:
        with np.errstate(divide="ignore"):
            ll = float(np.mean(dens.logpdf(y)))
        print(f"mean log-likelihood of the clean samples under f_hat: {ll:.4f} (n = {len(y)})")
    else:
        ll = convolved_loglik(dens, nz, y, numerical=numerical)
        print(f"mean log-likelihood of the noisy samples under f_hat*g: {ll:.4f} (n = {len(y)})")


def bound(
    family: FamilyName = "uniform",
    d: int = 1,
    k: int = 1,
    eps: float = 0.1,
    delta: float = 0.1,
    noise: NoiseName = "gaussian",
    noise_scale: float = 0.3,
    n: int = 5000,
    delta_q: float = 0.01,
    min_scale: float = 0.5,
) -> None:
    """Print the compression size, the clean and noisy sample complexity, and the noisy l2 bound.

    Args:
        family: Family.
        d: Dimension.
        k: Mixture components.
        eps: Accuracy in (0, 1).
        delta: Confidence in (0, 1).
        noise: Noise law.
        noise_scale: Its scale.
        n: Sample size used for the perturbation radius and the l2 bound.
        delta_q: Quantisation step.
        min_scale: Smallest scale in the class (interval length / standard deviation) for the Fourier tail.
    """
    import math

    from .bounds import clean_sample_complexity, noisy_l2_bound, noisy_sample_complexity
    from .families import make_family
    from .noise import make_noise
    from .tournament import deviation_bound

    fam = make_family(family, d=d, k=k)
    nz = make_noise(noise, noise_scale, d=d)
    nz.check_identifiable()
    size = fam.compression_size(eps)
    clean = clean_sample_complexity(size.tau, size.t, size.m, eps, delta)
    radius = nz.radius(n // 2, delta)
    noisy = noisy_sample_complexity(size, d, eps, delta, radius, delta_q)
    print(f"{fam!r}: tau = {size.tau}, t = {size.t:.1f} bits, m = {size.m}")
    print(
        f"clean: n1 = {clean.n1}, n2 = {clean.n2}, total = {clean.total} (log M = {clean.log_candidates:.1f})"
    )
    print(
        f"noisy ({nz!r}, r = {radius:.3g}, Delta = {delta_q:g}): total = {noisy.total} (log M = {noisy.log_candidates:.1f})"
    )
    dev = deviation_bound(n // 2, int(min(math.exp(2 * noisy.log_candidates), 1e300)), delta)
    l2 = noisy_l2_bound(nz, fam, 2 * dev, min_scale)
    print(
        f"at n = {n}: TV(f_hat*g, f*g) <= 3*OPT + {2 * dev:.4f}; clean l2 bound {l2.l2:.4g} (W = {l2.W:.3g})"
    )


def curve(
    target: str = "uniform",
    noise_scale: float = 0.1,
    ns: list[int] | None = None,
    seeds: int = 3,
    eps: float = 0.1,
    max_candidates: int | None = None,
    seed: int = 0,
) -> None:
    """Empirical sample-complexity curve: mean TV against n and the smallest n reaching TV <= eps.

    Args:
        target: Planted target.
        noise_scale: Gaussian noise sigma.
        ns: Sample sizes (default 250, 500, 1000, 2000, 4000).
        seeds: Seeds per sample size.
        eps: Target TV.
        max_candidates: Candidate budget (default ceil(32 ln n)).
        seed: Base seed.
    """
    import numpy as np

    from .learner import learn as run
    from .metrics import tv_distance
    from .noise import GaussianNoise
    from .noisy_data import make_target, noisy_sample

    ns = ns or [250, 500, 1000, 2000, 4000]
    if seeds < 1 or any(n < 2 for n in ns):
        raise UsageError("seeds must be >= 1 and every n >= 2")
    tgt = make_target(target)
    nz = GaussianNoise(noise_scale, d=tgt.density.d)
    hit = None
    for n in ns:
        tvs = []
        for s in range(seeds):
            _, y = noisy_sample(tgt.density, nz, n, np.random.default_rng([seed, s, n]))
            res = run(tgt.make_family(), y, nz, max_candidates=max_candidates, seed=seed + s)
            tvs.append(tv_distance(tgt.density, res.density))
        ok = np.mean(np.array(tvs) <= eps) >= 2 / 3
        hit = hit or (n if ok else None)
        print(
            f"n = {n:6d}: mean TV {np.mean(tvs):.4f} (min {np.min(tvs):.4f}, max {np.max(tvs):.4f})"
        )
    print(f"smallest n with TV <= {eps} in >= 2/3 of seeds: {hit if hit else 'not reached'}")


def benchmark(
    target: str = "uniform-mixture",
    noise_scale: float = 0.3,
    n: int = 3000,
    seed: int = 0,
) -> None:
    """TV and time of the learner and every anchor on one planted target and noise level.

    Args:
        target: Planted target.
        noise_scale: Gaussian noise sigma.
        n: Sample size.
        seed: Seed.
    """
    import time

    import numpy as np

    from .comparison import comparison_methods
    from .metrics import tv_distance
    from .noise import GaussianNoise
    from .noisy_data import make_target, noisy_sample

    tgt = make_target(target)
    if tgt.density.d != 1:
        raise UsageError("benchmark compares 1-D targets (the KDE anchors are 1-D)")
    nz = GaussianNoise(noise_scale)
    _, y = noisy_sample(tgt.density, nz, n, np.random.default_rng(seed))
    print(f"target {target}, sigma = {noise_scale}, n = {n}")
    methods = comparison_methods(tgt, nz, seed, mle_steps=150)
    for name, fit in methods.items():
        t0 = time.perf_counter()
        est = fit(y)
        print(
            f"  {name:40s} TV {tv_distance(tgt.density, est):.4f}  time {time.perf_counter() - t0:.2f} s"
        )


def build_cli() -> PaperCLI:
    """The package's CLI (nothing heavy is imported until a command runs)."""
    return PaperCLI(
        PAPER,
        model_class="lightning.pytorch:LightningModule",
        datamodule_class="lightning.pytorch:LightningDataModule",
        subclass_mode_model=True,
        subclass_mode_data=True,
        commands={
            "learn": "noisy_compress.cli:learn",
            "bound": "noisy_compress.cli:bound",
            "curve": "noisy_compress.cli:curve",
            "benchmark": "noisy_compress.cli:benchmark",
            "evaluate": "noisy_compress.cli:evaluate",
        },
    )


def main(args: Sequence[str] | None = None) -> int:
    """Entry point of the ``noisy-compress`` console script."""
    return build_cli().main(args)
