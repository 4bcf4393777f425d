"""Drifting-target toy: the simulation matches Eq. B and isotropy minimises the error."""

import math

import numpy as np
import pytest
from sigreg.drifting_target import (
    DriftingRegression,
    geometric_spectrum,
    simulate_tracking,
    stationary_error,
)


@pytest.mark.parametrize("kappa", [1, 10, 100])
def test_simulation_matches_closed_form_within_5_percent(kappa):
    lam = geometric_spectrum(16, kappa)
    closed = stationary_error(lam, 0.4, 0.1)
    sim = simulate_tracking(lam, 0.4, 0.1, steps=1500, chains=256, seed=kappa)
    assert abs(sim["param"] - closed) / closed < 0.05
    closed_pred = stationary_error(lam, 0.4, 0.1, "pred")
    assert abs(sim["pred"] - closed_pred) / closed_pred < 0.05


def test_per_direction_variance_formula():
    lam = np.array([0.5])
    assert stationary_error(lam, 1.0, 1.0) == pytest.approx(1 / (1 - 0.25))


def test_isotropic_spectrum_beats_every_random_same_trace_spectrum():
    rng = np.random.default_rng(0)
    iso = stationary_error(np.ones(8), 0.3, 1.0)
    iso_pred = stationary_error(np.ones(8), 0.3, 1.0, "pred")
    for _ in range(300):
        lam = rng.dirichlet(np.ones(8)) * 8
        assert stationary_error(lam, 0.3, 1.0) >= iso - 1e-12
        assert stationary_error(lam, 0.3, 1.0, "pred") >= iso_pred - 1e-12


def test_error_ratio_grows_with_condition_number_and_instability_is_inf():
    rows = DriftingRegression(dim=16, eta=0.4, sigma=0.1).compare(
        (1, 3, 10, 100), steps=300, chains=16
    )
    ratios = [r["ratio_vs_iso"] for r in rows]
    assert ratios[0] == pytest.approx(1.0)
    assert all(a < b for a, b in zip(ratios, ratios[1:], strict=False))
    # same trace, larger lambda_max: GD at eta = 0.5 diverges for kappa = 100 only
    assert stationary_error(geometric_spectrum(16, 100), 0.5) == math.inf
    assert math.isfinite(stationary_error(np.ones(16), 0.5))


def test_bad_inputs():
    with pytest.raises(ValueError, match="kappa"):
        geometric_spectrum(4, 0.5)
    with pytest.raises(ValueError, match="eta"):
        stationary_error(np.ones(2), 0.0)
    with pytest.raises(ValueError, match="mode"):
        simulate_tracking(np.ones(2), 0.1, mode="bad", steps=4)
