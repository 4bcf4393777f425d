"""The headline comparison: the noise-aware learner against the anchors, on the same samples.

For a planted target (:func:`noisy_compress.noisy_data.make_target`) and a known Gaussian noise
level, :func:`comparison_methods` names every estimator of the comparison, each a function
``fit(y) -> Density`` of the noisy samples:

* ours (:func:`noisy_compress.learner.learn`: perturbation-quantised compression candidates and a
  tournament among noise-convolved candidates), and the same learner told there is no noise;
* the convolved-likelihood fit that seeds our candidate search, on the whole sample
  (:func:`noisy_compress.likelihood.convolved_mle`, L-BFGS-B), and the same objective trained
  through the Lightning Trainer (:class:`~noisy_compress.lightning.ConvolvedMLEModule`, slow);
* naive and deconvolved GMMs, extreme deconvolution, the deconvolution and naive KDEs, moment
  deconvolution (k = 1), and the optional third-party anchors (pygmmis XD, KDEpy FFT-KDE; the
  ``bench`` extra).

:func:`comparison_table` measures TV to the clean target against ``n``: the mean over seeds with
a 95% Student-t interval (:func:`mean_interval`), the relative change of the mean from the first
to the last ``n``, and the log-log slope (:func:`log_log_slope`); :func:`real_data_table` scores
the estimators by the held-out clean log-likelihood on scikit-learn's wine data with added noise,
over several noise draws.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence

import numpy as np
from icml26_shared.results import Table

from .densities import Density
from .noise import GaussianNoise

OURS = "noise-aware tournament (ours)"
NAIVE_COMP = "naive compression (noise ignored)"
MLE = "convolved MLE (Lightning module)"
SEED_MLE = "convolved MLE (L-BFGS; our seed)"
CHEAP = (OURS, NAIVE_COMP, SEED_MLE, "naive GMM", "extreme deconvolution", "moment deconvolution")


def mean_interval(values: Sequence[float], level: float = 0.95) -> tuple[float, float]:
    """Mean and the half-width of its Student-t ``level`` interval (``nan`` with one value).

    >>> m, hw = mean_interval([1.0, 2.0, 3.0])
    >>> m, round(hw, 3)
    (2.0, 2.484)
    """
    from scipy import stats

    v = np.asarray(values, dtype=float)
    if len(v) < 2:
        return float(v.mean()), math.nan
    hw = stats.t.ppf(0.5 + level / 2, len(v) - 1) * v.std(ddof=1) / math.sqrt(len(v))
    return float(v.mean()), float(hw)


def comparison_methods(
    target, noise, seed: int = 0, max_candidates: int | None = None,
    search_rounds: int | None = None, mle_steps: int = 400, pygmmis: bool = True,
    methods: Sequence[str] | None = None,
) -> dict[str, Callable[[np.ndarray], Density]]:  # fmt: skip
    """``{name: fit(y) -> Density}`` for one planted ``target`` and ``noise`` level.

    ``max_candidates`` / ``search_rounds`` go to the learner (ours and the noise-ignoring
    variant; ``None``: the learner's ``log n`` budget, code precision ``eps_n``); ``mle_steps``
    full-batch Adam steps for the Lightning convolved MLE; ``pygmmis`` adds pygmmis' XD when it
    is installed (it is slow); ``methods`` keeps only the named methods (default: all).
    """
    from .baselines import (
        DeconvolutionKDE,
        DeconvolvedGMM,
        ExtremeDeconvolution,
        KDEpyFFT,
        MomentDeconvolution,
        NaiveGMM,
        NaiveKDE,
        PygmmisXD,
    )
    from .learner import learn

    fam, k = target.make_family(), target.k
    comp = "uniform" if target.family == "uniform" else "gaussian"

    def ours(y):
        return learn(fam, y, noise, max_candidates=max_candidates,
                     search_rounds=search_rounds, seed=seed).density  # fmt: skip

    def naive_comp(y):
        return learn(fam, y, GaussianNoise(0.0), max_candidates=max_candidates,
                     search_rounds=search_rounds, seed=seed).density  # fmt: skip

    def seed_mle(y):
        from .likelihood import convolved_mle

        return convolved_mle(fam, y, noise, seed=seed)

    def mle(y):
        from .lightning import ConvolvedMLEModule

        m = ConvolvedMLEModule(comp, k=k, noise="gaussian", noise_scale=noise.scales[0], lr=0.05)
        return m.fit_full_batch(y, mle_steps).to_density()

    out = {
        OURS: ours,
        NAIVE_COMP: naive_comp,
        SEED_MLE: seed_mle,
        "naive GMM": lambda y: NaiveGMM(k, seed).fit(y, noise),
        "deconvolved GMM": lambda y: DeconvolvedGMM(k, seed).fit(y, noise),
        "extreme deconvolution": lambda y: ExtremeDeconvolution(k, seed).fit(y, noise),
        "deconvolution KDE": lambda y: DeconvolutionKDE().fit(y, noise),
        "naive KDE": lambda y: NaiveKDE().fit(y, noise),
        MLE: mle,
    }
    if k == 1:
        family = "box" if target.family == "uniform" else "gaussian"
        out["moment deconvolution"] = lambda y: MomentDeconvolution(family).fit(y, noise)
    if PygmmisXD.available() and pygmmis:
        out["pygmmis XD (bench extra)"] = lambda y: PygmmisXD(k, seed).fit(y, noise)
    if KDEpyFFT.available():
        out["KDEpy FFT-KDE (bench extra)"] = lambda y: KDEpyFFT().fit(y, noise)
    if methods is not None:
        unknown = set(methods) - set(out) - {"moment deconvolution", "pygmmis XD (bench extra)",
                                             "KDEpy FFT-KDE (bench extra)"}  # fmt: skip
        if unknown:
            raise ValueError(
                f"unknown comparison methods {sorted(unknown)}; choose from {list(out)}"
            )
        out = {name: fit for name, fit in out.items() if name in methods}
    return out


def log_log_slope(ns: Sequence[float], values: Sequence[float]) -> float:
    """Least-squares slope of ``log value`` against ``log n`` (NaN with fewer than 2 positives).

    >>> round(log_log_slope([100, 400], [0.2, 0.1]), 3)
    -0.5
    """
    ok = [(n, t) for n, t in zip(ns, values, strict=True) if t > 0]
    if len(ok) < 2:
        return math.nan
    x, yv = np.log([o[0] for o in ok]), np.log([o[1] for o in ok])
    return float(np.polyfit(x, yv, 1)[0])


def comparison_table(
    targets: Sequence[str], sigmas: Sequence[float], ns: Sequence[int], seeds: int,
    seed: int = 0, **method_options,
) -> tuple[Table, dict]:  # fmt: skip
    """TV to the clean target for every method, target and Gaussian noise level.

    For each of ``seeds`` seeds (run seed ``1000 seed + s``) and each ``n``, one noisy sample is
    drawn and every method of :func:`comparison_methods` (``method_options`` passed on) fits it.
    Rows: per ``n`` the mean TV and the half-width of its 95% interval, the relative change of the
    mean from the first to the last ``n``, the log-log slope of the means, the mean time per fit at
    the largest ``n``. Also returns ``{(target, sigma, method): estimate}`` of the first seed at
    the largest ``n`` (for figures) under ``"fits"`` and every TV under ``"tv"``.
    """
    from icml26_shared.progress import progress

    from .metrics import tv_distance
    from .noisy_data import make_target, noisy_sample

    tv_cols = [c for n in ns for c in (f"TV n={n}", f"±95% n={n}")]
    change = f"change {ns[0]}->{ns[-1]}"
    cols = ["target", "sigma", "method", *tv_cols, change, "slope", "time"]
    table = Table(
        "TV to the clean target (mean over seeds, 95% interval), Gaussian noise", cols,
        units={"time": "s", change: "%"},
        notes=(
            f"{seeds} seeds per cell. ±95%: half-width of the Student-t 95% interval of the mean. "
            f"change: relative change of the mean TV from n={ns[0]} to n={ns[-1]} (negative = "
            "falls). slope: least-squares slope of log mean TV against log n (negative = "
            "consistent). time: mean seconds per fit at the largest n."
        ),
    )  # fmt: skip
    fits: dict = {}
    all_tv: dict = {}
    cells = [(t, s) for t in targets for s in sigmas]
    for tname, sigma in progress(cells, desc="comparison"):
        target = make_target(tname)
        noise = GaussianNoise(sigma)
        results: dict[str, dict[int, list[float]]] = {}
        times: dict[str, list[float]] = {}
        for s in range(seeds):
            run_seed = seed * 1000 + s
            methods = comparison_methods(target, noise, run_seed, **method_options)
            for n in ns:
                rng = np.random.default_rng([run_seed, n, int(sigma * 1000), len(tname)])
                _, y = noisy_sample(target.density, noise, n, rng)
                for name, fit in methods.items():
                    t0 = time.perf_counter()
                    est = fit(y)
                    dt = time.perf_counter() - t0
                    results.setdefault(name, {}).setdefault(n, []).append(
                        tv_distance(target.density, est)
                    )
                    if n == ns[-1]:
                        times.setdefault(name, []).append(dt)
                    if s == 0 and n == ns[-1]:
                        fits[(tname, sigma, name)] = est
        for name, per_n in results.items():
            row = {"target": tname, "sigma": sigma, "method": name}
            means = []
            for n in ns:
                m, hw = mean_interval(per_n[n])
                row[f"TV n={n}"], row[f"±95% n={n}"] = m, hw
                means.append(m)
                all_tv[(tname, sigma, name, n)] = list(per_n[n])
            row[change] = 100.0 * (means[-1] / means[0] - 1.0) if means[0] > 0 else math.nan
            row["slope"] = log_log_slope(ns, means)
            row["time"] = float(np.mean(times[name]))
            table.add_row(**row)
    return table, {"fits": fits, "tv": all_tv}


def comparison_figures(fits: dict, sigma: float, n: int) -> dict:
    """``{png name: figure}``: our fit and three anchors on each uniform mixture at ``sigma``."""
    from .noisy_data import make_target
    from .plots import fits_figure

    figures = {}
    for tname in ("uniform-mixture-unequal", "uniform-mixture"):
        names = [m for m in (OURS, "extreme deconvolution", "deconvolution KDE", NAIVE_COMP)
                 if (tname, sigma, m) in fits]  # fmt: skip
        if OURS in names:
            chosen = {name: fits[(tname, sigma, name)] for name in names}
            title = f"{tname}, sigma={sigma}, n={n} (seed 0)"
            figures[f"{tname.replace('-', '_')}_fits.png"] = fits_figure(
                make_target(tname).density, chosen, names, title
            )
    return figures


def comparison_note(seeds: int, max_candidates: int | None) -> str:
    """The note under the comparison table: what "ours" is and its settings."""
    budget = (
        "a candidate budget of ceil(32 ln n)" if max_candidates is None
        else f"at most {max_candidates} candidates"
    )  # fmt: skip
    return (
        "Ours = perturbation-quantised compression candidates seeded from the convolved-likelihood "
        "fit on the first half (mixture weights profiled in closed form) plus a quarter of "
        "stochastic exploration, selected by a Scheffe / minimum-distance tournament among "
        f"noise-convolved candidates on the second half. Settings: {seeds} seeds per cell, "
        f"code precision eps_n = sqrt(ln n / n), {budget}."
    )


def real_data_table(
    sigmas: Sequence[float] = (0.3, 0.6), seed: int = 0, max_candidates: int | None = None,
    search_rounds: int | None = None, mle_steps: int = 400, seeds: int = 8,
) -> Table:  # fmt: skip
    """Held-out clean log-likelihood on wine (PCA 1-D, standardised) plus Gaussian noise.

    The estimators see only noisy training points; the clean held-out points score them
    (higher is better). k = 2 components. Each of ``seeds`` runs draws its own train/test split
    and noise (``SklearnNoisyDataModule`` seed ``1000 seed + s``); the table shows the mean and
    the half-width of its 95% interval.
    """
    from .baselines import DeconvolvedGMM, ExtremeDeconvolution, NaiveGMM
    from .families import make_family
    from .learner import learn
    from .lightning import ConvolvedMLEModule, SklearnNoisyDataModule

    table = Table(
        "Real data: wine (PCA 1-D, standardised) + Gaussian noise; held-out clean log-likelihood",
        ["sigma", "method", "clean test log-lik", "±95%"],
        notes=(
            f"Higher is better; the clean held-out points are never seen. k = 2 components. Mean "
            f"over {seeds} random splits and noise draws; ±95%: half-width of the Student-t 95% "
            "interval of the mean."
        ),
    )  # fmt: skip
    for sigma in sigmas:
        scores: dict[str, list[float]] = {}
        for s in range(seeds):
            run_seed = seed * 1000 + s
            dm = SklearnNoisyDataModule("wine", pca_dim=1, noise_scale=sigma, seed=run_seed)
            noise, y = dm.noise, dm.y_train
            fits: dict[str, Density] = {
                OURS: learn(make_family("gaussian", k=2), y, noise, max_candidates=max_candidates,
                            search_rounds=search_rounds, seed=run_seed).density,
                "naive GMM": NaiveGMM(2, run_seed).fit(y, noise),
                "deconvolved GMM": DeconvolvedGMM(2, run_seed).fit(y, noise),
                "extreme deconvolution": ExtremeDeconvolution(2, run_seed).fit(y, noise),
                MLE: ConvolvedMLEModule("gaussian", k=2, noise_scale=sigma, lr=0.05)
                .fit_full_batch(y, mle_steps).to_density(),
            }  # fmt: skip
            for name, f in fits.items():
                ll = float(np.mean(np.log(f.pdf(dm.clean_test) + 1e-300)))
                scores.setdefault(name, []).append(ll)
        for name, vals in scores.items():
            m, hw = mean_interval(vals)
            table.add_row(sigma=sigma, method=name, **{"clean test log-lik": m, "±95%": hw})
    return table
