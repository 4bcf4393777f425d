"""Shrinking a predicted change towards "no change", and choosing how much by LOEO-CV."""

import numpy as np
import pytest
from ou_ident.interventions import Degradation
from ou_ident.ou_process import OUParams
from ou_ident.prediction import anchored_prediction, gaussian_w2
from ou_ident.sachs import FRACTIONS, loeo_fraction
from ou_ident.synthetic import make_problem


def test_fraction_walks_the_w2_geodesic_from_no_change():
    theta = OUParams([[-1.0, 0.3], [0.8, -1.5]], [1.0, -0.5], [1.0, 0.7])
    m0, S0 = np.array([0.2, -0.1]), np.array([[0.9, 0.2], [0.2, 0.6]])  # not the model's law
    iv = Degradation(1, 0.9)
    full = anchored_prediction(theta, iv, m0, S0)
    zero = anchored_prediction(theta, iv, m0, S0, fraction=0.0)
    assert np.allclose(zero[0], m0) and np.allclose(zero[1], S0)  # "no change"
    total = gaussian_w2(*full, m0, S0)
    for f in (0.25, 0.5, 0.8):
        part = anchored_prediction(theta, iv, m0, S0, fraction=f)
        # constant-speed geodesic: W2(P0, Pf) = f W2(P0, P1) and W2(Pf, P1) = (1 - f) W2(P0, P1)
        assert gaussian_w2(*part, m0, S0) == pytest.approx(f * total, rel=1e-6)
        assert gaussian_w2(*part, *full) == pytest.approx((1 - f) * total, rel=1e-6)
    with pytest.raises(ValueError, match="fraction"):
        anchored_prediction(theta, iv, m0, S0, fraction=1.5)


def test_loeo_fraction_keeps_the_whole_change_of_a_correct_model():
    # one degradation per node: leaving one training environment out still identifies the
    # drift, population moments make every left-out prediction exact at fraction 1
    prob = make_problem(4, "degradation", per_component=4, seed=1)
    train = prob.moments(None)
    frac, curve = loeo_fraction(train, "degradation")
    assert frac == 1.0
    assert curve[-1] < 1e-6 < curve[0]
    assert np.all(np.diff(curve) < 0)  # every step towards the model's change helps
    assert len(curve) == len(FRACTIONS)


def test_loeo_fraction_refuses_a_change_that_points_the_wrong_way():
    # the training interventions are labelled on the wrong node (each environment's target
    # is shifted by one), so the fitted model's changes do not match what the cells did
    prob = make_problem(4, "degradation", per_component=4, seed=1)
    train = prob.moments(None)
    wrong = [train[0]]
    for d in train[1:]:
        k = d.environment.targets[0]
        env = type(d.environment)(d.name, (Degradation((k + 1) % 4, 1.0),))
        wrong.append(type(d)(env, d.mean, d.cov, d.n))
    frac, curve = loeo_fraction(wrong, "degradation")
    assert frac < 1.0 and curve[FRACTIONS.index(frac)] < curve[-1]
