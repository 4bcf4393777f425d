"""The anytime-valid ARF: validity under Poisson weights, learning, equivalences, bad input."""

import math

import numpy as np
import pytest
from anytime_hoeffding import streams
from anytime_hoeffding.forest import AnytimeARFClassifier


def test_forest_on_noise_stays_unsplit():
    """The Poisson-weight path keeps the bet predictable: no tree splits on noise."""
    runs, split = 6, 0
    for r in range(runs):
        s = streams.noise(4_000, seed=200 + r)
        arf = AnytimeARFClassifier(n_models=5, classes=[0, 1], seed=r).learn_many(s.X, s.y)
        split += sum(t.n_nodes > 1 for t in arf.trees)
    trees = runs * 5
    assert split / trees <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / trees)


def test_forest_learns_sea():
    s = streams.sea(8_000, n_drifts=0, seed=1)
    arf = AnytimeARFClassifier(n_models=4, classes=[0, 1], seed=0).learn_many(
        s.X[:6_000], s.y[:6_000]
    )
    acc = float((arf.predict_many(s.X[6_000:]) == s.y[6_000:]).mean())
    assert acc > 0.8
    proba = arf.predict_proba_many(s.X[:5])
    assert proba.shape == (5, 2)  # (n, K)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)


def test_learn_one_equals_learn_many_with_unit_chunks():
    s = streams.sea(1_500, n_irrelevant=1, seed=2)
    a = AnytimeARFClassifier(n_models=3, classes=[0, 1], detection_chunk=1, seed=5)
    a.learn_many(s.X, s.y)
    b = AnytimeARFClassifier(n_models=3, classes=[0, 1], seed=5)
    for x, y in zip(s.X, s.y, strict=True):
        b.learn_one({j: v for j, v in enumerate(x)}, int(y))
    assert [t.split_log for t in a.trees] == [t.split_log for t in b.trees]


def test_deterministic_under_seed():
    s = streams.sea(3_000, seed=3)
    a = AnytimeARFClassifier(n_models=3, classes=[0, 1], seed=9).learn_many(s.X, s.y)
    b = AnytimeARFClassifier(n_models=3, classes=[0, 1], seed=9).learn_many(s.X, s.y)
    np.testing.assert_array_equal(a.predict_proba_many(s.X[:50]), b.predict_proba_many(s.X[:50]))


@pytest.mark.parametrize(
    "kwargs,msg",
    [
        ({"n_models": 0}, "n_models"),
        ({"lambda_value": 0}, "lambda_value"),
        ({"drift_delta": 1.5}, "drift_delta"),
        ({"alpha": 2.0}, "alpha"),
        ({"betting": "nope"}, "unknown betting"),
    ],
)
def test_bad_parameters(kwargs, msg):
    with pytest.raises(ValueError, match=msg):
        AnytimeARFClassifier(**kwargs)


def test_learning_is_not_mistaken_for_drift():
    """A young tree's falling error must not count as a drift (MOA's ADWIN rule)."""
    s = streams.sea(4_000, n_drifts=0, seed=4)
    arf = AnytimeARFClassifier(n_models=3, classes=[0, 1], seed=1).learn_many(s.X, s.y)
    assert arf.n_drifts == 0


def test_abrupt_drift_is_detected():
    rng = np.random.default_rng(5)
    X = rng.uniform(size=(8_000, 3))
    y = (X[:, 0] > 0.5).astype(int)
    y[4_000:] = 1 - y[4_000:]  # the concept flips: every tree's error jumps
    arf = AnytimeARFClassifier(n_models=3, classes=[0, 1], seed=2).learn_many(X, y)
    assert arf.n_drifts >= 1
    acc = float((arf.predict_many(X[7_000:]) == y[7_000:]).mean())
    assert acc > 0.9
