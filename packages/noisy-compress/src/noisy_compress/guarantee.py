"""The learner's guarantee, measured: the additive term of its oracle inequality against real TVs.

Part of the implementation of "Provable Bounds for the Learnability of Sample-Compressible
Families from Noisy Samples" (ICML 2026); the inequality is Devroye & Lugosi's (2001) selection
guarantee applied to the noise-convolved candidates, as in the paper's learner.

:func:`noisy_compress.learner.learn` returns, with its estimate, the additive term ``x`` of
``TV(f_hat * g, f * g) <= C * OPT + x`` (w.p. ``>= 1 - delta``): ``C' Delta`` with the
Hoeffding / empirical-Bernstein deviation over every Scheffe set
(:func:`noisy_compress.tournament.deviation_bound`), plus in 1-D the binning gap of the exact
atoms (:meth:`noisy_compress.partition.CellPartition.binning_gap`), so that it bounds the true TV
of the noise-convolved laws. :func:`guarantee_table` runs the learner on planted targets and
tabulates ``x`` next to the measured ``TV(f_hat * g, f * g)`` and the clean TV.
"""

from __future__ import annotations

import numpy as np


def guarantee_table(
    targets: tuple[str, ...] | list[str] = ("uniform", "uniform-mixture", "uniform-mixture-unequal"),
    sigmas: tuple[float, ...] | list[float] = (0.1, 0.3), n: int = 10_000, seeds: int = 8,
    seed: int = 0, max_candidates: int | None = None, search_rounds: int | None = None,
    delta: float = 0.1,
):  # fmt: skip
    """The learner's oracle inequality at sample size ``n``: its additive term against measured TVs.

    For each planted target and Gaussian noise level, ``seeds`` noisy samples (``default_rng([seed,
    s, n, 1000 sigma, 11])``) are learnt (learner seed ``1000 seed + s``). Columns: the additive term
    ``x`` of ``TV(f_hat*g, f*g) <= C*OPT + x`` (mean and largest over seeds; it is
    ``C' Delta`` plus the binning gap, so a bound on the true TV of the noisy laws in 1-D), its
    parts, the measured ``TV(f_hat*g, f*g)`` and how many seeds it stayed under ``x`` (it must
    whenever ``OPT`` is negligible), and the clean TV.
    """
    from icml26_shared.results import Table

    from .comparison import mean_interval
    from .convolution import ConvolvedDensity
    from .learner import learn
    from .metrics import tv_distance
    from .noise import GaussianNoise
    from .noisy_data import make_target, noisy_sample

    table = Table(
        f"The learner's guarantee at n = {n} (w.p. >= {1 - delta:g}): "
        "TV(f_hat*g, f*g) <= C*OPT + x",
        ["target", "sigma", "selection", "x (mean)", "x (max)", "C' Delta (mean)",
         "binning gap (mean)", "TV noisy laws (mean)", "TV noisy <= x", "TV clean (mean)",
         "±95% clean"],
        notes=(
            f"{seeds} seeds per row. x: the additive term printed by `noisy-compress learn`: C' Delta "
            "(Hoeffding / empirical-Bernstein deviation over every Scheffe set, union bound) plus "
            "the binning gap h ||g'||_1 + mass outside the grid (exact atom masses in 1-D), so the "
            "inequality holds for the true TV of the noise-convolved laws. OPT: TV of the best "
            "candidate. TV noisy <= x: seeds where the measured TV(f_hat*g, f*g) is below x. "
            "The clean-density l2 bound is not in this table: under Gaussian noise it is vacuous "
            "at these n (severely ill-posed deconvolution)."
        ),
    )  # fmt: skip
    for tname in targets:
        target = make_target(tname)
        for sigma in sigmas:
            noise = GaussianNoise(sigma)
            xs, devs, gaps, tv_noisy, tv_clean, method = [], [], [], [], [], ""
            for s in range(seeds):
                rng = np.random.default_rng([seed, s, n, int(sigma * 1000), 11])
                _, y = noisy_sample(target.density, noise, n, rng)
                res = learn(target.make_family(), y, noise, delta=delta, seed=seed * 1000 + s,
                            max_candidates=max_candidates, search_rounds=search_rounds)  # fmt: skip
                method = res.selection.method
                xs.append(res.bound)
                devs.append(res.selection.constants[1] * res.deviation)
                gaps.append(res.binning_gap)
                tv_noisy.append(tv_distance(ConvolvedDensity(target.density, noise),
                                            ConvolvedDensity(res.density, noise)))  # fmt: skip
                tv_clean.append(tv_distance(target.density, res.density))
            m, hw = mean_interval(tv_clean)
            table.add_row(**{
                "target": tname, "sigma": sigma, "selection": method,
                "x (mean)": float(np.mean(xs)), "x (max)": float(np.max(xs)),
                "C' Delta (mean)": float(np.mean(devs)), "binning gap (mean)": float(np.mean(gaps)),
                "TV noisy laws (mean)": float(np.mean(tv_noisy)),
                "TV noisy <= x": f"{sum(t <= x for t, x in zip(tv_noisy, xs, strict=True))}/{seeds}",
                "TV clean (mean)": m, "±95% clean": hw,
            })  # fmt: skip
    return table
