"""Games, LP values and exploitability: closed forms and scipy agreement."""

import numpy as np
import pytest
import torch
from asymp_gda.exploitability import exploitability_x, exploitability_y, nash_conv, perturbed_gap
from asymp_gda.matrix_game import MatrixGame, biased_matching_pennies, biased_rps, m_ne, random_game
from scipy.optimize import linprog

T = torch.tensor


def test_paper_equilibria_are_exact():
    g = biased_rps()
    ne = T([0.2, 0.6, 0.2], dtype=torch.float64)
    assert abs(g.value) < 1e-12
    assert float(nash_conv(g, ne, ne)[0]) < 1e-12
    b = biased_matching_pennies()
    ne = T([5 / 8, 3 / 8], dtype=torch.float64)
    assert float(nash_conv(b, ne, ne)[0]) < 1e-12
    m = m_ne()
    x = T([1 / 3, 1 / 3, 1 / 3, 0, 0], dtype=torch.float64)
    assert float(exploitability_x(m, x)[0]) < 1e-12


def _scipy_value(A):
    m, n = A.shape
    res = linprog(
        np.r_[np.zeros(m), 1.0],
        A_ub=np.hstack([A.T, -np.ones((n, 1))]),
        b_ub=np.zeros(n),
        A_eq=np.r_[np.ones(m), 0.0][None],
        b_eq=[1.0],
        bounds=[(0, None)] * m + [(None, None)],
    )
    return res.fun


@pytest.mark.parametrize("seed", range(4))
def test_value_agrees_with_independent_lp_and_equilibrium_has_zero_gap(seed):
    g = random_game(5, 4, seed=seed)
    assert abs(g.value - _scipy_value(g.A.numpy())) < 1e-9
    x, y, _ = g.equilibrium
    assert float(nash_conv(g, x, y)[0]) < 1e-9


def test_value_agrees_with_nashpy():
    nash = pytest.importorskip("nashpy")
    g = random_game(4, seed=7)
    P = -g.A.numpy()  # row player maximises P
    x, y = nash.Game(P).lemke_howson(initial_dropped_label=0)
    assert abs(float(x @ P @ y) - (-g.value)) < 1e-8


def test_exploitability_nonnegative_and_zero_only_at_nash():
    g = random_game(5, seed=3)
    gen = torch.Generator().manual_seed(0)
    e = -torch.log(torch.rand(200, 5, generator=gen, dtype=torch.float64))
    x = e / e.sum(-1, keepdim=True)
    y = x.flip(0)
    assert (exploitability_x(g, x) >= -1e-12).all()
    assert (exploitability_y(g, y) >= -1e-12).all()
    assert (nash_conv(g, x, y) > 1e-6).all()  # random points are not equilibria
    xs, ys, _ = g.equilibrium
    assert abs(float(nash_conv(g, xs, ys)[0])) < 1e-9
    # NashConv is the sum of the two individual exploitabilities
    assert torch.allclose(nash_conv(g, x, y), exploitability_x(g, x) + exploitability_y(g, y))


def test_perturbed_gap_zero_at_perturbed_solution():
    from asymp_gda.perturbed_solution import perturbed_solution

    g = biased_rps()
    x, y = perturbed_solution(g, 4.0)  # above the threshold: a genuinely perturbed point
    assert float(perturbed_gap(g, x, y, 4.0)[0]) < 1e-8
    assert float(perturbed_gap(g, x, y.flip(0), 4.0)[0]) > 1e-3


def test_constant_shift_and_permutation():
    from asymp_gda.asymp_gda import asymp_gda

    g = random_game(4, seed=2)
    shifted = MatrixGame(g.A + 0.7)
    a = asymp_gda(g, mu=0.05, eta=0.1, iterations=3000)
    b = asymp_gda(shifted, mu=0.05, eta=0.1, iterations=3000)
    assert torch.allclose(a.x, b.x, atol=1e-10) and torch.allclose(a.y, b.y, atol=1e-10)
    pr, pc = torch.tensor([2, 0, 3, 1]), torch.tensor([1, 3, 0, 2])
    perm = MatrixGame(g.A[pr][:, pc])
    c = asymp_gda(perm, mu=0.05, eta=0.1, iterations=3000)
    assert torch.allclose(c.x[0], a.x[0][pr], atol=1e-10)
    assert torch.allclose(c.y[0], a.y[0][pc], atol=1e-10)


def test_role_swap_mirrors_players():
    from asymp_gda.asymp_gda import asymp_gda

    g = biased_rps()
    a = asymp_gda(g, mu=1.0, eta=0.1, iterations=1000, side="x")
    b = asymp_gda(g.transposed(), mu=1.0, eta=0.1, iterations=1000, side="y")
    assert torch.allclose(a.x, b.y, atol=1e-12) and torch.allclose(a.y, b.x, atol=1e-12)
