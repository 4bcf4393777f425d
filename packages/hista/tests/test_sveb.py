"""SVEB protocol, the noisy teacher's exact values, and the noise floor."""

import numpy as np
import pytest
from hista.arith_chain import NoisyTeacher, Problem, reward, sample_problems
from hista.estimators import GroupMean, NumcaEstimator, Oracle
from hista.policy import CausalLMPolicy
from hista.sveb import (
    SvebCase,
    binomial_noise_floor,
    build_cases,
    evaluate,
    load_cases,
    noise_floor,
    save_cases,
    spearman,
)


def _teacher_cases(n=20, seed=0):
    teacher, rng = NoisyTeacher(), np.random.default_rng(seed)

    def sample(p, prefix, k):
        return [teacher.continue_from(p, prefix, rng) for _ in range(k)]

    probs = sample_problems(n, seed=seed)
    return build_cases(sample, probs, 8, 16, 4, 2, seed, teacher.exact_value)


def test_exact_value_matches_monte_carlo_of_the_teacher():
    teacher, rng = NoisyTeacher(), np.random.default_rng(0)
    p = Problem((7, 5, 9, 8))
    truth = p.partial_sums()
    for prefix in ["", f"{truth[0]} ", f"{truth[0]} {truth[1]} ", f"{truth[0] + 1} "]:
        mc = np.mean(
            [reward(p, prefix + teacher.continue_from(p, prefix, rng)) for _ in range(4000)]
        )
        assert mc == pytest.approx(teacher.exact_value(p, prefix), abs=0.03)


def test_oracle_scores_zero_mae_vs_exact_values_and_group_mean_collapses():
    cases = _teacher_cases()
    m = evaluate([Oracle().predict(c) for c in cases], cases)
    assert m["mae_exact"] == 0.0
    g = evaluate([GroupMean().predict(c) for c in cases], cases)
    assert g["within_std"] == 0.0 and g["mae_exact"] > 0.05
    n = evaluate([NumcaEstimator().predict(c) for c in cases], cases)
    assert n["mae_exact"] < g["mae_exact"]  # wrong partial sums are unseen -> value 0


def test_binomial_noise_floor_matches_enumeration_and_simulation():
    rng = np.random.default_rng(0)
    for v, m in [(0.2, 1), (0.5, 4), (0.9, 8)]:
        sim = np.abs(rng.binomial(m, v, size=200_000) / m - v).mean()
        assert binomial_noise_floor(v, m) == pytest.approx(sim, abs=5e-3)
    assert binomial_noise_floor(0.0, 3) == 0.0
    assert binomial_noise_floor(0.5, 1) == 0.5
    with pytest.raises(ValueError):
        binomial_noise_floor(1.5, 2)


def test_noise_floor_vs_exact_matches_the_binomial_expectation():
    # noise floor of V_MC (m samples) vs the exact value, averaged over states, equals the
    # mean binomial expectation up to sampling error
    cases = _teacher_cases(n=60, seed=1)
    got = noise_floor(cases, 2)["mae_exact"]
    expect = np.mean([binomial_noise_floor(c.exact, 2) for c in cases])
    assert got == pytest.approx(expect, abs=0.05)


@pytest.mark.parametrize(("v_num", "v_den", "m"), [(1, 2, 4), (1, 4, 3), (2, 3, 3)])
def test_noise_floor_equals_the_binomial_expectation_exactly(v_num, v_den, m):
    """Every binary outcome sequence of length m, repeated in proportion to its probability
    under Bernoulli(v) (integer weights ``v_num^j (v_den - v_num)^(m - j)``), as SVEB cases with
    exact value v: the M=m noise floor vs the exact value is then E|Bin(m, v)/m - v| exactly."""
    import itertools

    v = v_num / v_den
    cases = []
    for seq in itertools.product([0.0, 1.0], repeat=m):
        j = int(sum(seq))
        weight = v_num**j * (v_den - v_num) ** (m - j)
        for _ in range(weight):
            cases.append(SvebCase(0, (1, 2), ["3;"], [1.0], "3;", 1.0, "", list(seq), [], exact=v))
    assert len(cases) == v_den**m
    got = noise_floor(cases, m)["mae_exact"]
    assert got == pytest.approx(binomial_noise_floor(v, m), rel=1e-12, abs=1e-12)


def test_cases_round_trip_through_json_and_are_disjoint_from_the_pool():
    cases = _teacher_cases(n=5)
    back = load_cases(save_cases(cases))
    assert [c.target for c in back] == [c.target for c in cases]
    assert all(c.prefix.endswith(" ") and c.source.startswith(c.prefix) for c in cases)


def test_spearman_and_bad_inputs():
    assert spearman([1, 2, 3], [10, 20, 30]) == pytest.approx(1.0)
    assert spearman([1, 2, 3], [3, 2, 1]) == pytest.approx(-1.0)
    assert np.isnan(spearman([1, 1, 1], [1, 2, 3]))
    with pytest.raises(ValueError, match="group size"):
        build_cases(lambda p, s, n: [], sample_problems(1), 1, 4)
    with pytest.raises(ValueError, match="predictions for"):
        evaluate([0.1], _teacher_cases(n=2))
    with pytest.raises(ValueError, match="vocabulary"):
        CausalLMPolicy(hidden=8, layers=1, heads=2).encode("3*4")
