"""Jacobian-rank identifiability: nullity 1 exactly where the theory says so."""

import numpy as np
import pytest
from ou_ident.identifiability import identifiability_report, moment_jacobian
from ou_ident.interventions import Degradation, Environment
from ou_ident.synthetic import make_problem, random_parameters

DENSE3 = np.ones((3, 3), dtype=bool)


@pytest.mark.parametrize("family", ["degradation", "knockdown", "hard"])
@pytest.mark.parametrize("p", [3, 5])
def test_one_drift_changing_intervention_per_dense_scc(family, p):
    rep = identifiability_report(np.ones((p, p), bool), [0], family)
    assert rep.nullity == 1 and rep.identifiable
    assert rep.conditioning > 0


def test_observational_only_dense_scc_not_identifiable():
    with pytest.warns(UserWarning, match="not identifiable"):
        rep = identifiability_report(DENSE3, [], "degradation")
    assert rep.nullity == 6  # 15 unknowns, 9 moment equations


@pytest.mark.parametrize("p,nullity", [(3, 4), (4, 7)])
def test_shift_only_not_identifiable(p, nullity):
    with pytest.warns(UserWarning, match="not identifiable"):
        rep = identifiability_report(np.ones((p, p), bool), [0], "shift")
    assert rep.nullity == nullity


def test_one_per_scc_on_random_single_root_graph():
    prob = make_problem(12, "degradation", seed=0)
    targets = [e.targets[0] for e in prob.environments[1:]]
    assert len(targets) == len(prob.graph.components)
    assert identifiability_report(prob.mask, targets, "degradation").identifiable


def test_jacobian_has_scale_direction():
    mask = np.ones((3, 3), bool)
    theta = random_parameters(mask, seed=0)
    envs = [Environment("obs"), Environment("d", (Degradation(0, 0.5),))]
    J = moment_jacobian(theta, mask, envs)
    scale = np.concatenate([theta.A.ravel(), theta.b, theta.d, [0.5]])
    assert np.abs(J @ scale).max() < 1e-10


def test_bad_target():
    with pytest.raises(ValueError, match="out of range"):
        identifiability_report(DENSE3, [4], "degradation")
