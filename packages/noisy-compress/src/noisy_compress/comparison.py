"""The headline comparison: the noise-aware learner against the anchors, on the same samples.

For a planted target (:func:`noisy_compress.noisy_data.make_target`) and a known Gaussian noise
level, :func:`comparison_methods` names every estimator of the comparison, each a function
``fit(y) -> Density`` of the noisy samples:

* ours (:func:`noisy_compress.learner.learn`: perturbation-quantised compression candidates and a
  tournament among noise-convolved candidates), and the same learner told there is no noise;
* naive and deconvolved GMMs, extreme deconvolution, the deconvolution and naive KDEs, the
  convolved-likelihood MLE (:class:`~noisy_compress.lightning.ConvolvedMLEModule`, trained
  through the Trainer), moment deconvolution (k = 1), and the optional third-party anchors
  (pygmmis XD, KDEpy FFT-KDE; the ``bench`` extra).

:func:`comparison_table` measures TV to the clean target against ``n`` (mean over seeds) and the
log-log slope of TV in ``n`` (:func:`log_log_slope`); :func:`real_data_table` scores the
estimators by the held-out clean log-likelihood on scikit-learn's wine data with added noise.
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


def comparison_methods(
    target, noise, seed: int = 0, max_candidates: int = 300, search_rounds: int = 90,
    mle_steps: int = 400, pygmmis: bool = True,
) -> dict[str, Callable[[np.ndarray], Density]]:  # fmt: skip
    """``{name: fit(y) -> Density}`` for one planted ``target`` and ``noise`` level.

    ``max_candidates`` / ``search_rounds`` go to the learner (ours and the noise-ignoring
    variant, both at ``eps = 0.05``); ``mle_steps`` full-batch Adam steps for the convolved MLE;
    ``pygmmis`` adds pygmmis' XD when it is installed (it is slow).
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
        return learn(fam, y, noise, eps=0.05, max_candidates=max_candidates,
                     search_rounds=search_rounds, seed=seed).density  # fmt: skip

    def naive_comp(y):
        return learn(fam, y, GaussianNoise(0.0), eps=0.05, max_candidates=max_candidates,
                     search_rounds=search_rounds, seed=seed).density  # fmt: skip

    def mle(y):
        from .lightning import ConvolvedMLEModule

        m = ConvolvedMLEModule(comp, k=k, noise="gaussian", noise_scale=noise.scales[0], lr=0.05)
        return m.fit_full_batch(y, mle_steps).to_density()

    methods = {
        OURS: ours,
        NAIVE_COMP: naive_comp,
        "naive GMM": lambda y: NaiveGMM(k, seed).fit(y, noise),
        "deconvolved GMM": lambda y: DeconvolvedGMM(k, seed).fit(y, noise),
        "extreme deconvolution": lambda y: ExtremeDeconvolution(k, seed).fit(y, noise),
        "deconvolution KDE": lambda y: DeconvolutionKDE().fit(y, noise),
        "naive KDE": lambda y: NaiveKDE().fit(y, noise),
        MLE: mle,
    }
    if k == 1:
        family = "box" if target.family == "uniform" else "gaussian"
        methods["moment deconvolution"] = lambda y: MomentDeconvolution(family).fit(y, noise)
    if PygmmisXD.available() and pygmmis:
        methods["pygmmis XD (bench extra)"] = lambda y: PygmmisXD(k, seed).fit(y, noise)
    if KDEpyFFT.available():
        methods["KDEpy FFT-KDE (bench extra)"] = lambda y: KDEpyFFT().fit(y, noise)
    return methods


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
    Rows: mean TV per ``n``, the log-log slope of the means, the mean time per fit at the
    largest ``n``. Also returns ``{(target, sigma, method): estimate}`` of the first seed at the
    largest ``n`` (for figures).
    """
    from .metrics import tv_distance
    from .noisy_data import make_target, noisy_sample

    cols = ["target", "sigma", "method", *[f"TV n={n}" for n in ns], "slope", "time"]
    table = Table(
        "TV to the clean target (mean over seeds), Gaussian noise", cols, units={"time": "s"},
        notes=(
            "slope: least-squares slope of log TV against log n over the n columns "
            "(negative = consistent). time: mean seconds per fit at the largest n."
        ),
    )  # fmt: skip
    fits: dict = {}
    for tname in targets:
        target = make_target(tname)
        for sigma in sigmas:
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
                means = [float(np.mean(per_n[n])) for n in ns]
                row = {"target": tname, "sigma": sigma, "method": name}
                row.update({f"TV n={n}": m for n, m in zip(ns, means, strict=True)})
                row["slope"] = log_log_slope(ns, means)
                row["time"] = float(np.mean(times[name]))
                table.add_row(**row)
    return table, fits


def real_data_table(
    sigmas: Sequence[float] = (0.3, 0.6), seed: int = 0, max_candidates: int = 300,
    search_rounds: int = 90, mle_steps: int = 400,
) -> Table:  # fmt: skip
    """Held-out clean log-likelihood on wine (PCA 1-D, standardised) plus Gaussian noise.

    The estimators see only noisy training points; the clean held-out points score them
    (higher is better). k = 2 components.
    """
    from .baselines import DeconvolvedGMM, ExtremeDeconvolution, NaiveGMM
    from .families import make_family
    from .learner import learn
    from .lightning import ConvolvedMLEModule, SklearnNoisyDataModule

    table = Table(
        "Real data: wine (PCA 1-D, standardised) + Gaussian noise; held-out clean log-likelihood",
        ["sigma", "method", "clean test log-lik"],
        notes="Higher is better; the clean held-out points are never seen. k = 2 components.",
    )
    for sigma in sigmas:
        dm = SklearnNoisyDataModule("wine", pca_dim=1, noise_scale=sigma, seed=seed)
        noise, y = dm.noise, dm.y_train
        fits: dict[str, Density] = {
            OURS: learn(make_family("gaussian", k=2), y, noise, eps=0.05,
                        max_candidates=max_candidates, search_rounds=search_rounds,
                        seed=seed).density,
            "naive GMM": NaiveGMM(2, seed).fit(y, noise),
            "deconvolved GMM": DeconvolvedGMM(2, seed).fit(y, noise),
            "extreme deconvolution": ExtremeDeconvolution(2, seed).fit(y, noise),
            MLE: ConvolvedMLEModule("gaussian", k=2, noise_scale=sigma, lr=0.05)
            .fit_full_batch(y, mle_steps).to_density(),
        }  # fmt: skip
        for name, f in fits.items():
            ll = float(np.mean(np.log(f.pdf(dm.clean_test) + 1e-300)))
            table.add_row(sigma=sigma, method=name, **{"clean test log-lik": ll})
    return table
