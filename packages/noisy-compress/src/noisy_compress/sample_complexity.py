"""Empirical sample complexity of the noise-aware learner, against the bound's shape.

:func:`sample_complexity_curves` measures, on the planted ``U[0, 1]`` target under Gaussian
noise, the TV of the learner's estimate over a grid of sample sizes and seeds; the table gives
the smallest ``n`` reaching ``TV <= eps`` in at least 2/3 of the seeds, the log-log slope of the
mean TV (the bound's shape ``sqrt(log M / n)`` has slope -1/2), and the constant-explicit bound
of :mod:`noisy_compress.bounds` at ``eps = delta = 0.1``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from icml26_shared.results import Table


def sample_complexity_curves(
    sigmas: Sequence[float], ns: Sequence[int], seeds: int, eps_levels: Sequence[float],
    seed: int = 0, max_candidates: int | None = None, search_rounds: int | None = None,
) -> tuple[Table, dict]:  # fmt: skip
    """The table, and the curves ``{"ns": ns, "tv": {sigma: (seeds, len(ns)) array}}``.

    Sample ``(s, n)`` at noise ``sigma`` is drawn from ``default_rng([seed, s, n, 1000 sigma,
    7])`` and learnt with seed ``1000 seed + s`` (the learner's defaults: code precision
    ``eps_n``, a ``log n`` candidate budget, unless ``max_candidates`` / ``search_rounds`` are set).
    """
    from .bounds import clean_sample_complexity, noisy_sample_complexity
    from .comparison import log_log_slope
    from .learner import learn
    from .metrics import tv_distance
    from .noise import GaussianNoise
    from .noisy_data import make_target, noisy_sample

    target = make_target("uniform")
    fam = target.make_family()
    tv: dict[float, np.ndarray] = {}
    for sigma in sigmas:
        noise = GaussianNoise(sigma)
        arr = np.zeros((seeds, len(ns)))
        for s in range(seeds):
            for j, n in enumerate(ns):
                rng = np.random.default_rng([seed, s, n, int(sigma * 1000), 7])
                _, y = noisy_sample(target.density, noise, n, rng)
                res = learn(fam, y, noise, max_candidates=max_candidates,
                            search_rounds=search_rounds, seed=seed * 1000 + s)  # fmt: skip
                arr[s, j] = tv_distance(target.density, res.density)
        tv[sigma] = arr
    cols = ["sigma", *[f"n*(eps={e})" for e in eps_levels], "slope", "bound n(eps=0.1)"]
    table = Table(
        "Empirical sample complexity on U[0,1]: smallest n with TV <= eps in >= 2/3 of seeds",
        cols,
        notes=(
            f"n grid {list(ns)}, {seeds} seeds; '>' = not reached on the grid. slope: log-log "
            "slope of the mean TV (the bound's shape sqrt(log M / n) has slope -1/2). bound: "
            "noisy_sample_complexity at eps = delta = 0.1 with the learner's radius and quantisation "
            "(a worst-case, constant-explicit bound, far above the empirical n)."
        ),
    )
    size = fam.compression_size(0.1)
    for sigma, arr in tv.items():
        row = {"sigma": sigma}
        for e in eps_levels:
            hit = [(arr[:, j] <= e).mean() >= 2 / 3 for j in range(len(ns))]
            row[f"n*(eps={e})"] = next(
                (str(n) for n, h in zip(ns, hit, strict=True) if h), f">{ns[-1]}"
            )
        row["slope"] = log_log_slope(ns, arr.mean(axis=0))
        if sigma > 0:
            r = GaussianNoise(sigma).radius(ns[-1] // 2, 0.1)
            bound = noisy_sample_complexity(size, 1, 0.1, 0.1, r, 0.05 * 0.29 / 2)
        else:
            bound = clean_sample_complexity(size.tau, size.t, size.m, 0.1, 0.1)
        row["bound n(eps=0.1)"] = bound.total
        table.add_row(**row)
    return table, {"ns": list(ns), "tv": tv}
