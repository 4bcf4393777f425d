"""Can SVEB resolve a state-value difference? The value-information diagnostic and the
per-problem paired differences, on planted ground truth."""

import numpy as np
import pytest
from hista.estimators import GroupMean
from hista.sveb import SvebCase, problem_errors, sveb_table, value_information
from hista.sveb_mini import information_table, seed_summary


def planted(values_per_problem, m, rng):
    """Cases whose true values are given; V_MC = mean of m Bernoulli draws; pool of 16."""
    cases = []
    for pid, values in enumerate(values_per_problem):
        pool_r = list(rng.binomial(1, np.mean(values), 16).astype(float))
        for v in values:
            mc = list(rng.binomial(1, v, m).astype(float))
            cases.append(SvebCase(pid, (1, 2), ["3;"] * 16, pool_r, "3;", 1.0, "", mc, [], v))
    return cases


def test_excess_spread_recovers_the_planted_within_problem_spread():
    rng = np.random.default_rng(0)
    # two states per problem at 0.5 +- 0.2: within-problem sd (ddof 1) of the values = 0.2 * sqrt 2
    apart = planted([(0.3, 0.7)] * 400, 64, rng)
    info = value_information(apart)
    assert info["within_exact_sd"] == pytest.approx(0.2 * np.sqrt(2))
    assert info["excess_sd"] == pytest.approx(0.2 * np.sqrt(2), abs=0.02)
    assert info["within_mc_sd"] > info["excess_sd"]  # V_MC's own noise adds to the spread


def test_no_excess_spread_when_a_state_is_worth_its_problem():
    rng = np.random.default_rng(1)
    same = planted([(v, v) for v in rng.uniform(0.1, 0.9, 400)], 32, rng)
    info = value_information(same)
    assert info["within_exact_sd"] == 0.0
    assert info["excess_sd"] < 0.03  # V_MC differs only by noise, which is subtracted
    assert info["within_mc_sd"] == pytest.approx(info["noise_sd"], rel=0.1)


class Exact:
    name = "exact"

    def predict(self, case):
        return case.exact


def test_per_problem_paired_difference_pools_problems_over_seeds():
    rng = np.random.default_rng(2)
    per_seed, per_problem = [], []
    for _ in range(3):
        cases = planted([(0.2, 0.8)] * 10, 64, rng)
        preds: dict = {}
        per_seed.append(sveb_table("t", cases, [GroupMean(), Exact()], predictions=preds))
        per_problem.append({
            n: (problem_errors(p, cases), problem_errors(p, cases, True)) for n, p in preds.items()
        })  # fmt: skip
    rows = {r["estimator"]: r for r in seed_summary("s", per_seed, "", per_problem).rows}
    group, exact = rows[GroupMean.name], rows["exact"]
    assert group["Δ/problem (exact)"] == 0.0
    # every problem: the exact value errs by 0, the group mean by about 0.3 on both states
    assert exact["Δ/problem (exact)"] == pytest.approx(-group["MAE vs exact"], abs=1e-9)
    assert exact["Δ/problem (exact)"] + exact["± 95% (Δ/problem exact)"] < 0  # resolved
    assert len(exact["per seed (V_MC)"].split(" / ")) == 3
    table = information_table([{"planted": value_information(c)} for c in [cases] * 2])
    assert table.rows[0]["case set"] == "planted"
