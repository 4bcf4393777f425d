"""Law fitting: planted parameters recovered, interval coverage, held-out comparison, bad input."""

import numpy as np
import pytest
from qat_scaling.scaling_law import (
    ChinchillaLaw,
    NotIdentifiableError,
    QATLaw,
    compare_laws,
    fit_chinchilla,
    fit_n_only_law,
    fit_qat_law,
    qat_error,
)

TRUE = QATLaw(k=0.8, gN=0.35, gD=0.15, gG=1.2)


def _grid():
    N, D, G = np.meshgrid([2e4, 5e4, 1.2e5], [1e5, 2e5, 4e5], [8, 16, 32])
    return N.ravel(), D.ravel(), G.ravel()


def test_exact_without_noise():
    N, D, G = _grid()
    for method in ("ols_log", "huber"):
        fit = fit_qat_law(N, D, G, TRUE.predict(N, D, G), method=method)
        for name in ("k", "gN", "gD", "gG"):
            assert getattr(fit.law, name) == pytest.approx(getattr(TRUE, name), rel=1e-6)
    assert fit.r2 == pytest.approx(1.0)


def test_noisy_recovery_and_ci_coverage_near_nominal():
    N, D, G = _grid()
    rng = np.random.default_rng(0)
    hits = {n: 0 for n in ("gN", "gD", "gG")}
    reps = 200
    for _ in range(reps):
        delta = TRUE.predict(N, D, G) * np.exp(rng.normal(0, 0.05, len(N)))
        fit = fit_qat_law(N, D, G, delta)
        for name in hits:
            lo, hi = fit.ci[name]
            hits[name] += lo <= getattr(TRUE, name) <= hi
    for name, h in hits.items():
        assert 0.90 <= h / reps <= 0.99, (name, h / reps)


def test_bootstrap_interval_covers_truth_most_of_the_time():
    N, D, G = _grid()
    rng = np.random.default_rng(1)
    hits, reps = 0, 20
    for r in range(reps):
        delta = TRUE.predict(N, D, G) * np.exp(rng.normal(0, 0.05, len(N)))
        fit = fit_qat_law(N, D, G, delta, bootstrap=200, seed=r)
        hits += all(
            fit.bootstrap_ci[n][0] <= getattr(TRUE, n) <= fit.bootstrap_ci[n][1]
            for n in ("gN", "gD", "gG")
        )
    assert hits / reps >= 0.7  # joint coverage of three ~95 % intervals, percentile bootstrap


def test_unified_beats_n_only_on_held_out_cells_when_d_matters():
    N, D, G = _grid()
    delta = TRUE.predict(N, D, G) * np.exp(np.random.default_rng(2).normal(0, 0.02, len(N)))
    cmp = compare_laws(N, D, G, delta)
    assert cmp["unified"]["rmse_log"] < cmp["N-only"]["rmse_log"]
    assert cmp["unified"]["cells"] == 9
    n_only = fit_n_only_law(N, G, delta)
    assert n_only.gN == pytest.approx(TRUE.gN, abs=0.05)


def test_bad_input():
    N, D, G = _grid()
    delta = TRUE.predict(N, D, G)
    with pytest.raises(ValueError, match="G must be >= 2"):
        fit_qat_law(N, D, np.where(G == 8, 1, G), delta)
    bad = delta.copy()
    bad[0] = -0.01
    with pytest.warns(RuntimeWarning, match="delta <= 0"):
        fit = fit_qat_law(N, D, G, bad)
    assert fit.n == len(N) - 1
    with pytest.raises(ValueError, match="strict"):
        fit_qat_law(N, D, G, bad, strict=True)
    with pytest.raises(NotIdentifiableError, match="distinct values of D"):
        fit_qat_law(N, np.full_like(D, 1e5), G, delta)
    nan = delta.copy()
    nan[3] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        fit_qat_law(N, D, G, nan)
    with pytest.raises(ValueError, match="NaN"):
        qat_error([{"N": 1, "D": 1, "seed": 0, "scheme": "FP", "val_loss": float("nan")}])


def test_chinchilla_fit_recovers_a_planted_law():
    true = ChinchillaLaw(A=50.0, alpha=0.4, B=200.0, beta=0.35, E=1.2)
    N, D = (a.ravel() for a in np.meshgrid([1e4, 3e4, 1e5, 3e5], [1e5, 3e5, 1e6, 3e6]))
    law, rms = fit_chinchilla(N, D, true.predict(N, D))
    assert rms < 1e-3
    assert pytest.approx(1.2, rel=0.05) == law.E
    assert np.allclose(law.predict(N, D), true.predict(N, D), rtol=2e-3)


def test_qat_error_pairs_by_size_tokens_seed():
    recs = [
        {"run": "a", "N": 10, "D": 5, "seed": 0, "scheme": "FP", "G": 0, "val_loss": 2.0},
        {"run": "b", "N": 10, "D": 5, "seed": 0, "scheme": "W4A4", "G": 8, "val_loss": 2.3},
        {"run": "c", "N": 10, "D": 5, "seed": 1, "scheme": "W4A4", "G": 8, "val_loss": 2.1},
    ]
    out = qat_error(recs)
    assert [round(e["delta"], 6) for e in out] == [0.3]
