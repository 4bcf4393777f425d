"""Anchors, metrics and held-out prediction: reference agreement and closed forms."""

import numpy as np
import pytest
from ou_ident.baselines import (
    LinearSEM,
    fit_observational,
    fit_shift_only,
    pseudo_samples,
)
from ou_ident.interventions import Degradation, Hard, Shift
from ou_ident.prediction import calibrate_strength, gaussian_w2, predict_intervention
from ou_ident.recovery_metrics import edge_auroc, scale_aligned_rel_error
from ou_ident.synthetic import make_problem


def test_auroc_matches_sklearn():
    sklearn_metrics = pytest.importorskip("sklearn.metrics")
    rng = np.random.default_rng(0)
    A = np.where(rng.random((8, 8)) < 0.3, 1.0, 0.0)
    S = rng.normal(size=(8, 8))
    off = ~np.eye(8, dtype=bool)
    want = sklearn_metrics.roc_auc_score(A[off] != 0, np.abs(S[off]))
    assert edge_auroc(S, A) == pytest.approx(want)


def test_scale_alignment_is_optimal():
    rng = np.random.default_rng(1)
    A, B = rng.normal(size=(4, 4)), rng.normal(size=(4, 4))
    e = scale_aligned_rel_error(B, A)
    grid = [np.linalg.norm(c * B - A) / np.linalg.norm(A) for c in np.linspace(0, 3, 3001)]
    assert e <= min(grid) + 1e-9


@pytest.mark.parametrize("iv", [Degradation(1, 0.7), Shift(1, -1.5), Hard(1, 2.0)])
def test_calibration_recovers_strength(iv):
    prob = make_problem(5, seed=0)
    m, S = predict_intervention(prob.params, iv)
    cal = calibrate_strength(prob.params, iv.family, 1, m[1], S[1, 1])
    assert cal.strength == pytest.approx(iv.strength, rel=1e-5)
    m2, S2 = predict_intervention(prob.params, cal)
    assert gaussian_w2(m, S, m2, S2) < 1e-5


def test_observational_needs_interventions_on_dense_scc_and_shift_is_misspecified():
    prob = make_problem(6, "degradation", seed=0)
    data = prob.moments()
    obs = fit_observational(data, np.ones((6, 6), bool))
    shift = fit_shift_only(data, prob.mask)
    assert scale_aligned_rel_error(obs.A, prob.params.A) > 1e-3
    assert scale_aligned_rel_error(shift.A, prob.params.A) > 1e-3


def test_pseudo_samples_and_sem_do():
    X = pseudo_samples([0.0, 1.0, 2.0], np.diag([1.0, 2.0, 3.0]), 40, seed=3)
    np.testing.assert_allclose(X.mean(0), [0, 1, 2], atol=1e-12)
    sem = LinearSEM(np.array([[0, 0], [0.5, 0]]), np.array([0.0, 1.0]), np.array([1.0, 1.0]))
    m, S = sem.predict_do(0, 2.0, 0.5)
    np.testing.assert_allclose(m, [2.0, 2.0])
    np.testing.assert_allclose(S, [[0.5, 0.25], [0.25, 1.125]])


def test_gies_sem_on_a_chain():
    pytest.importorskip("gies")
    from ou_ident.baselines import fit_gies_sem
    from ou_ident.interventions import Environment
    from ou_ident.moment_equations import EnvironmentMoments
    from ou_ident.ou_process import OUParams

    theta = OUParams([[-1.0, 0, 0], [1.5, -1.0, 0], [0, 1.5, -1.0]], [1.0, 0, 0], [1.0, 1.0, 1.0])
    envs = [Environment("obs"), Environment("d0", (Degradation(0, 1.0),))]
    data = [EnvironmentMoments(e, *predict_intervention(theta, e), 5000) for e in envs]
    sem = fit_gies_sem(data)
    # the OU steady state is not Markov to the drift DAG, so only check a valid SEM:
    assert np.count_nonzero(sem.B) >= 2  # dependencies are found
    assert np.allclose(np.linalg.matrix_power(sem.B != 0, 3), 0)  # acyclic (nilpotent)
    assert np.all(sem.omega > 0)
