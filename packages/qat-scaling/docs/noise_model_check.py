"""Planted-law check of the two noise models of the delta-space fit (investigation script).

Draws synthetic sweeps with the design of configs/sweep-long.yaml (N = 5200, 20640, 82240;
D = 256k, 512k tokens; G = 4, 16; 3 paired seeds) from a planted law
delta = k D^gD (log2 G)^gG / N^gN, with heteroscedastic noise of the kind measured on the
committed sweeps: a coefficient of variation of 0.5, half of its variance shared by the cells of
one (size, seed) (the paired FP run) and half per cell, plus a floor of 3e-4 nats. Each table is
fitted under the additive and the relative noise model (qat_scaling.delta_fit.seed_bootstrap)
and the script prints, per model and exponent, the mean and the RMSE of the estimate, the
coverage of the 95% seed-bootstrap interval, and how often the interval excludes 0.

    OMP_NUM_THREADS=1 nice python docs/noise_model_check.py 40 200 > docs/noise_model_check.txt

(arguments: tables, bootstrap resamples per fit).
"""

import sys
import time

import numpy as np
from qat_scaling.delta_fit import seed_bootstrap
from qat_scaling.scaling_law import QATLaw

LAW = QATLaw(k=0.0, gN=0.5, gD=1.0, gG=0.5)  # k set below: delta of 0.001-0.03 nats
SIZES, TOKENS, GROUPS, SEEDS = (5200, 20640, 82240), (256_000, 512_000), (4, 16), 3
CV, SHARED, FLOOR = 0.5, 0.5, 3e-4


def planted(rng: np.random.Generator, law: QATLaw) -> list[dict]:
    pts = []
    for n in SIZES:
        for s in range(SEEDS):
            z_seed = rng.standard_normal()
            for d in TOKENS:
                for g in GROUPS:
                    mu = float(law.predict(n, d, g))
                    z = np.sqrt(SHARED) * z_seed + np.sqrt(1 - SHARED) * rng.standard_normal()
                    delta = mu * (1 + CV * z) + FLOOR * rng.standard_normal()
                    pts.append(dict(size=n, seed=s, N=n, D=d, G=g, delta=delta))
    return pts


def main() -> None:
    tables, reps = (int(a) for a in (sys.argv[1:] + ["40", "200"])[:2])
    # k such that the geometric-mean cell has delta 0.005
    mid = QATLaw(k=1.0, gN=LAW.gN, gD=LAW.gD, gG=LAW.gG)
    gm = np.exp(
        np.mean([np.log(mid.predict(n, d, g)) for n in SIZES for d in TOKENS for g in GROUPS])
    )
    law = QATLaw(k=0.005 / float(gm), gN=LAW.gN, gD=LAW.gD, gG=LAW.gG)
    names = ("gN", "gD", "gG")
    est = {m: {n: [] for n in names} for m in ("additive", "relative")}
    cover = {m: {n: 0 for n in names} for m in est}
    excl = {m: {n: 0 for n in names} for m in est}
    t0 = time.process_time()
    for t in range(tables):
        pts = planted(np.random.default_rng(1000 + t), law)
        for model in est:
            fit = seed_bootstrap(pts, reps=reps, seed=t, noise=model)
            for n in names:
                est[model][n].append(getattr(fit.law, n))
                lo, hi = fit.ci[n]
                cover[model][n] += lo <= getattr(law, n) <= hi
                excl[model][n] += fit.excludes_zero(n)
    print(
        f"planted law gN = {law.gN}, gD = {law.gD}, gG = {law.gG}; {tables} tables of "
        f"{len(SIZES) * len(TOKENS) * len(GROUPS)} cells x {SEEDS} seeds; noise cv {CV} "
        f"({SHARED:.0%} of its variance shared by a (size, seed)), floor {FLOOR}; "
        f"{reps} seed-bootstrap resamples per fit"
    )
    print("model     exponent  mean    RMSE    95%-interval coverage  interval excludes 0")
    for model in est:
        for n in names:
            e = np.asarray(est[model][n])
            rmse = float(np.sqrt(np.mean((e - getattr(law, n)) ** 2)))
            print(
                f"{model:9} {n:9} {e.mean():6.3f}  {rmse:6.3f}  {cover[model][n] / tables:21.2f}  "
                f"{excl[model][n] / tables:.2f}"
            )
    print(f"CPU time {time.process_time() - t0:.0f} s")


if __name__ == "__main__":
    main()
