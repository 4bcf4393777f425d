"""AsymP-GDA: exact equilibrium for small strength, linear rate, theory agreement."""

import math

import numpy as np
import pytest
import torch
from asymp_gda.asymp_gda import asymp_gda
from asymp_gda.baselines import gda, ogda, symp_gda
from asymp_gda.exploitability import exploitability_x, exploitability_y, nash_conv
from asymp_gda.hitting_time import baseline_hitting_times
from asymp_gda.matrix_game import MatrixGame, biased_rps, m_ne, random_game
from asymp_gda.parameter_free import parameter_free
from asymp_gda.perturbed_solution import (
    invariance_threshold,
    least_norm_equilibrium,
    perturbed_solution,
)
from asymp_gda.strength_sweep import strength_sweep


def test_brps_asymp_exact_while_symp_stalls_and_gda_cycles():
    g = biased_rps()
    a = asymp_gda(g, mu=1.0, eta=0.01, iterations=20_000, side="x")
    assert float(a.final("expl_x")[0]) < 1e-10
    assert torch.allclose(a.x[0], torch.tensor([0.2, 0.6, 0.2], dtype=torch.float64), atol=1e-9)
    s = symp_gda(g, mu=1.0, eta=0.1, iterations=2_000)
    assert abs(float(s.final()[0]) - 0.286) < 0.005
    assert float(gda(g, eta=0.1, iterations=2_000).final()[0]) > 0.1


def test_both_sides_give_a_full_equilibrium():
    g = biased_rps()
    x_only = asymp_gda(g, mu=1.0, eta=0.1, iterations=2_000, side="x")
    assert float(x_only.final("expl_y")[0]) > 0.1  # the unperturbed y does not converge
    both = asymp_gda(g, mu=1.0, eta=0.1, iterations=2_000, side="both")
    assert float(both.final("nash_conv")[0]) < 1e-10
    assert both.updates_per_step == 4


def test_strength_sweep_threshold():
    brps = strength_sweep(biased_rps(), [1.0, 2.0, 4.0], eta=0.1, iterations=3_000)
    assert [r.expl_dynamics < 1e-9 for r in brps] == [True, True, False]
    mne = strength_sweep(m_ne(), [0.5, 1.0, 2.0], eta=0.1, iterations=3_000)
    assert [r.expl_dynamics < 1e-9 for r in mne] == [True, True, False]
    # bisection agrees with the sweep: BRPS in (2, 4), M-Ne in (1, 2)
    assert 2.0 <= invariance_threshold(biased_rps()) < 4.0
    assert 1.0 <= invariance_threshold(m_ne()) < 2.0


@pytest.mark.parametrize(("seed", "mu"), [(0, 0.05), (1, 0.5), (2, 3.0)])
def test_converges_to_exact_qp_solution_for_any_strength(seed, mu):
    g = random_game(4, 3, seed=seed)
    (row,) = strength_sweep(g, [mu], eta=0.1, iterations=20_000 if mu < 0.1 else 4_000)
    assert row.distance < 1e-6


def test_linear_last_iterate_rate_on_random_games():
    for seed in range(3):
        g = random_game(5, seed=seed)
        mu = 0.5 * invariance_threshold(g)
        eta = 0.9 / (g.norm + mu)  # below the stability bound
        tr = asymp_gda(g, mu=mu, eta=eta, iterations=4_000, record_every=100)
        steps = np.array(tr.steps)
        expl = tr.curve("expl_x")[:, 0].numpy()
        # log-exploitability is fitted by a line of negative slope until machine precision
        window = expl > 1e-13
        t, le = steps[window], np.log(expl[window])
        assert len(t) >= 4
        slope, intercept = np.polyfit(t, le, 1)
        r2 = 1 - ((le - (slope * t + intercept)) ** 2).sum() / ((le - le.mean()) ** 2).sum()
        assert slope < 0 and r2 > 0.8, (seed, slope, r2)
        assert expl[-1] < 1e-3 * expl[0]
        if expl[-1] < 1e-12:  # converged: the limit is the exact perturbed solution
            xq, _ = perturbed_solution(g, mu)
            assert float((tr.x[0] - xq).abs().sum()) < 1e-8


def test_least_norm_selection_with_duplicated_row():
    # the duplicated rows 1 and 3 split mass equally: the least-norm equilibrium
    P = np.array([[0.0, -1.0, 3.0], [1.0, 0.0, -1.0], [-3.0, 1.0, 0.0], [1.0, 0.0, -1.0]])
    g = MatrixGame.from_maximizer_payoff(P)
    x0 = torch.tensor([0.05, 0.8, 0.1, 0.05], dtype=torch.float64)  # asymmetric start
    tr = asymp_gda(g, mu=0.3, eta=0.05, iterations=20_000, x0=x0)
    expected = torch.tensor([0.2, 0.3, 0.2, 0.3], dtype=torch.float64)
    assert torch.allclose(least_norm_equilibrium(g), expected, atol=1e-7)
    assert torch.allclose(tr.x[0], expected, atol=1e-7)


def test_parameter_free_certifies_nash_conv_without_an_lp(monkeypatch):
    """Alg. 1 must run without the game value: any LP call fails the test."""
    import asymp_gda.linear_program as lp

    def no_lp(*a, **k):
        raise AssertionError("parameter_free called the LP")

    monkeypatch.setattr(lp, "solve_lp", no_lp)
    games = [random_game(4, seed=s) for s in range(3)]
    r = parameter_free(games, eps=1e-6, eta_scale=0.5, max_iterations=100_000)
    monkeypatch.undo()
    assert bool(r.converged.all())
    for k, g in enumerate(games):
        # the reported NashConv is the pair's true duality gap, and bounds both exploitabilities
        gap = float(nash_conv(g, r.x[k : k + 1], r.y[k : k + 1])[0])
        assert abs(gap - float(r.nash_conv[k])) < 1e-12
        assert float(exploitability_x(g, r.x[k : k + 1])[0]) <= 1e-6 + 1e-12
        assert float(exploitability_y(g, r.y[k : k + 1])[0]) <= 1e-6 + 1e-12
        # halving stops once mu is below the invariance threshold (never far below it)
        assert float(r.mu_x[k]) >= invariance_threshold(g) / 64
    assert torch.equal(r.gradient_evaluations, 4 * r.iterations)


@pytest.mark.parametrize("eps", [1e-3, 1e-8])
def test_parameter_free_converged_is_exactly_nash_conv_below_eps(eps):
    games = [random_game(6, seed=s) for s in range(4)]
    r = parameter_free(games, eps=eps, eta_scale=0.5, max_iterations=2_000)
    assert torch.equal(r.converged, r.nash_conv <= eps)
    for k, g in enumerate(games):
        assert abs(float(nash_conv(g, r.x[k : k + 1], r.y[k : k + 1])[0] - r.nash_conv[k])) < 1e-12


def test_baseline_hitting_times_agree_with_the_trajectories():
    """OGDA's hitting time (in gradient evaluations) matches the NashConv curve of ``ogda``."""
    g = biased_rps()
    hit = int(baseline_hitting_times(g, "OGDA", [0.1], eps=1e-6, check_every=1)[0])
    tr = ogda(g, eta=0.1, iterations=hit // 2, record_every=1)
    nc = tr.curve("nash_conv")[:, 0]
    assert float(nc[-1]) <= 1e-6 < float(nc[-2])
    eg = int(baseline_hitting_times(g, "EG", [0.1], eps=1e-6, check_every=1)[0])
    assert eg % 4 == 0 and eg > 0


def test_ogda_reaches_machine_precision():
    tr = ogda(biased_rps(), eta=0.1, iterations=4_000)
    assert float(tr.final()[0]) < 1e-10
    assert math.isfinite(float(tr.final()[0]))


def test_large_game_table_runs_without_any_lp(monkeypatch):
    """The large-game comparison (Alg. 1, OGDA, EG at their best steps) never solves an LP:
    both the package's LP and scipy's linprog raise, and every method still reaches eps."""
    import asymp_gda.linear_program as lp
    import scipy.optimize
    from asymp_gda.hitting_time import METHODS, large_game_table

    def no_lp(*a, **k):
        raise AssertionError("the large-game comparison called an LP")

    monkeypatch.setattr(lp, "solve_lp", no_lp)
    monkeypatch.setattr(lp, "linprog", no_lp)
    monkeypatch.setattr(scipy.optimize, "linprog", no_lp)
    table, proxy, _ = large_game_table(
        10, 1, 60_000, 4, 1, 20_000, eps=1e-6, eta_scales=(0.25, 0.5)
    )
    monkeypatch.undo()
    assert [r["method"] for r in table.rows] == list(METHODS)
    for row, prow in zip(table.rows, proxy.rows, strict=True):
        assert row["step s"] == prow["best step s"]  # the step comes from the proxy study
        evals = [int(e) for e in row["per game"].split()]
        assert len(evals) == 1 and row["solved"] == f"{int(evals[0] >= 0)}/1"
    # Alg. 1 solves the large game; its count is the one its own run reports, and its pair
    # is certified by the exact duality gap (LP-free)
    assert table.rows[0]["solved"] == "1/1"
    g = random_game(10, seed=0)
    r = parameter_free(g, eps=1e-6, eta=table.rows[0]["step s"] / g.norm, max_iterations=15_000)
    assert int(r.gradient_evaluations[0]) == int(table.rows[0]["per game"])
    assert float(nash_conv(g, r.x, r.y)[0]) <= 1e-6


def test_large_game_table_with_fixed_steps_runs_only_the_chosen_methods():
    from asymp_gda.hitting_time import baseline_hitting_times, large_game_table

    table, proxy, _ = large_game_table(
        10, 1, 60_000, 4, 1, 20_000, steps={"EG": 0.5}, methods=["EG"]
    )
    assert [r["method"] for r in table.rows] == ["EG"] and not proxy.rows
    assert table.rows[0]["step s"] == 0.5 and "fixed in the preset" in table.notes
    g = random_game(10, seed=0)
    expected = int(baseline_hitting_times(g, "EG", [0.5 / g.norm], 1e-6, 60_000)[0])
    assert int(table.rows[0]["per game"]) == expected
    with pytest.raises(ValueError, match="unknown methods"):
        large_game_table(10, 1, 100, 4, 1, 100, methods=["SGD"])
