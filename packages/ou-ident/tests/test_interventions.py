"""Intervention families: effect on parameters, domains, linear forms."""

import numpy as np
import pytest
from ou_ident.interventions import (
    FAMILIES,
    Degradation,
    Environment,
    Hard,
    KnockDown,
    NoiseScale,
    Shift,
    make_intervention,
)
from ou_ident.moment_equations import ParameterLayout
from ou_ident.synthetic import random_parameters


@pytest.fixture
def theta():
    return random_parameters(np.ones((4, 4), bool), seed=2)


@pytest.mark.parametrize(
    "iv", [Shift(1, 0.7), NoiseScale(1, 2.0), Degradation(1, 0.8), KnockDown(1, 0.3), Hard(1, 2.0)]
)
def test_linear_form_matches_natural_change(theta, iv):
    """The estimators' linear form reproduces the family's parameter change at the truth."""
    env = Environment("e", (iv,))
    lay = ParameterLayout(np.ones((4, 4), bool), [env])
    t, rhos = lay.pack(theta)
    A, b, d = lay.environment_parameters(t[None, :], 0, rhos)
    want = iv.apply(theta)
    np.testing.assert_allclose(A[0], want.A)
    np.testing.assert_allclose(b[0], want.b)
    np.testing.assert_allclose(d[0], want.d)
    assert lay.strengths(t, rhos)["e"][0] == pytest.approx(iv.strength)


def test_hard_clamps_mean_and_cuts_parents(theta):
    after = Hard(2, 1.5).apply(theta)
    assert after.stationary_mean()[2] == pytest.approx(1.5)
    assert np.count_nonzero(after.A[2]) == 1


@pytest.mark.parametrize(
    "family,bad", [("noise", 0.0), ("noise", -1.0), ("degradation", -0.1), ("knockdown", 1.0)]
)
def test_strength_outside_domain(family, bad):
    with pytest.raises(ValueError, match="must be"):
        make_intervention(family, 0, bad)


def test_unknown_family_and_bad_targets(theta):
    with pytest.raises(ValueError, match="unknown intervention family"):
        make_intervention("teleport", 0, 1.0)
    with pytest.raises(ValueError, match="out of range"):
        Degradation(7, 1.0).apply(theta)
    with pytest.raises(ValueError, match="integer"):
        Degradation("GATA1", 1.0)
    with pytest.raises(ValueError, match="twice"):
        Environment("e", (Shift(0, 1.0), Degradation(0, 1.0)))


def test_families_registry():
    assert set(FAMILIES) == {"shift", "noise", "degradation", "knockdown", "hard", "inhibition"}
    assert [f for f, c in FAMILIES.items() if c.drift_changing] == [
        "degradation",
        "knockdown",
        "hard",
        "inhibition",
    ]


def test_inhibition_cuts_the_targets_outgoing_edges_and_is_fitted_exactly():
    """Activity inhibition: column k of A (off-diagonal) scaled, row k and b untouched; the
    joint estimator recovers a planted system from population moments under it."""
    from ou_ident.interventions import Inhibition
    from ou_ident.joint import fit_joint
    from ou_ident.moment_equations import EnvironmentMoments
    from ou_ident.ou_process import OUParams

    theta = OUParams(
        [[-1.5, 0.0, 0.4], [0.8, -1.2, 0.0], [0.0, -0.6, -1.0]], [1.0, 0.5, -0.3], [1.0, 0.8, 1.2]
    ).normalized()
    out = Inhibition(0, 0.25).apply(theta)
    assert np.allclose(out.A[:, 0], [theta.A[0, 0], 0.25 * theta.A[1, 0], 0.0])
    assert np.allclose(np.delete(out.A, 0, axis=1), np.delete(theta.A, 0, axis=1))
    assert np.allclose(out.b, theta.b)
    envs = [Environment("obs"), Environment("inh0", (Inhibition(0, 0.0),))]
    data = [EnvironmentMoments.population(e, theta) for e in envs]
    fit = fit_joint(data)
    assert np.allclose(fit.A, theta.A, atol=1e-8)
    with pytest.raises(ValueError, match="rho"):
        Inhibition(0, 1.0)
