"""E-process maths: K_0 = 1, K_t >= 0, predictable bounded bets, Ville's bound by Monte Carlo."""

import math

import numpy as np
import pytest
from anytime_hoeffding.eprocess import (
    N_MIXTURE,
    BettingEProcess,
    EProcessBank,
    MixtureEProcess,
    ville_threshold,
)

BETTINGS = ["agrapa", "ons", "mixture"]


@pytest.mark.parametrize("betting", BETTINGS)
def test_starts_at_one_and_stays_positive(betting):
    rng = np.random.default_rng(0)
    bank = EProcessBank(50, betting=betting, cap=0.5)
    assert np.all(bank.e_values == 1.0)
    for _ in range(300):
        e = bank.update(rng.choice([-1.0, 1.0], 50))
        assert np.all(e > 0) and np.all(np.isfinite(e))


@pytest.mark.parametrize("betting", ["agrapa", "ons"])
def test_bets_are_predictable_and_bounded(betting):
    """The factor applied at step t is 1 + lambda_t g_t with lambda_t read *before* g_t."""
    rng = np.random.default_rng(1)
    cap = 0.3
    bank = EProcessBank(20, betting=betting, cap=cap)
    for _ in range(200):
        lam = bank.bets
        assert lam.shape == (20,)
        assert np.all((lam >= 0) & (lam <= cap))
        before = bank.log_e_values
        g = rng.uniform(-1, 1, 20) + 0.1 * rng.uniform(0, 1, 20)
        g = np.clip(g, -1, 1)
        bank.update(g)
        np.testing.assert_allclose(bank.log_e_values - before, np.log1p(lam * g), atol=1e-12)


def test_mixture_closed_form():
    """The mixture equals the average of constant-bet wealths, computed in closed form."""
    rng = np.random.default_rng(2)
    g = rng.uniform(-1, 1, 400) * 0.8 + 0.05
    ep = MixtureEProcess(cap=0.5)
    for v in g:
        ep.update(float(v))
    lams = 0.5 * np.arange(1, N_MIXTURE + 1) / N_MIXTURE
    wealth = np.exp(np.log1p(lams[:, None] * g[None, :]).sum(axis=1))
    assert ep.log_e_value == pytest.approx(math.log(wealth.mean()), rel=1e-10)


def test_weights_cap_the_effective_bet():
    ep = BettingEProcess("agrapa", cap=0.5)
    for _ in range(50):
        ep.update(0.5)
    lam = ep.bet
    before = ep.log_e_value
    ep.update(-1.0, w=6.0)  # min(6 * lam, c) = c
    assert ep.log_e_value - before == pytest.approx(math.log1p(-min(6 * lam, 0.5)))


@pytest.mark.parametrize("betting", BETTINGS)
def test_ville_bound_fair_coin(betting):
    """Under a fair +-1 null, P(sup_t K_t >= 20) <= 0.05 and E[K_T] <= 1 (Monte Carlo)."""
    rng = np.random.default_rng(3)
    paths, steps = 2000, 300
    bank = EProcessBank(paths, betting=betting, cap=0.5)
    crossed = np.zeros(paths, bool)
    for _ in range(steps):
        e = bank.update(rng.choice([-1.0, 1.0], paths))
        crossed |= e >= ville_threshold(0.05)
    se = math.sqrt(0.05 * 0.95 / paths)
    assert crossed.mean() <= 0.05 + 3 * se
    final = bank.e_values
    assert final.mean() <= 1 + 3 * final.std() / math.sqrt(paths)


@pytest.mark.parametrize("betting", BETTINGS)
def test_ville_bound_heteroskedastic_adaptive_stopping(betting):
    """Martingale differences whose scale depends on the past, stopped adaptively."""
    rng = np.random.default_rng(4)
    paths, steps = 2000, 400
    bank = EProcessBank(paths, betting=betting, cap=0.5)
    stopped = np.zeros(paths, bool)
    hit = np.zeros(paths, bool)
    for t in range(steps):
        # scale chosen from the past: small when the wealth is up, large when it is down
        scale = np.where(bank.log_e_values > 0, 0.1, 1.0) * (1 + (t % 3 == 0))
        scale = np.minimum(scale, 1.0)
        g = scale * rng.choice([-1.0, 1.0], paths)
        g[stopped] = 0.0  # a stopped path no longer moves
        e = bank.update(g)
        hit |= e >= 20
        stopped |= (e >= 20) | (e < 0.2)  # stop on success or on a loss
    se = math.sqrt(0.05 * 0.95 / paths)
    assert hit.mean() <= 0.05 + 3 * se


def test_alternative_has_power():
    rng = np.random.default_rng(5)
    bank = EProcessBank(1)
    for _ in range(1000):
        bank.update(np.clip(0.2 + rng.uniform(-0.7, 0.7, 1), -1, 1))
    assert bank.e_values[0] > 1e6


@pytest.mark.parametrize(
    "kwargs,msg",
    [
        ({"cap": 1.0}, "bet cap"),
        ({"cap": 0.0}, "bet cap"),
        ({"betting": "kelly"}, "unknown betting"),
    ],
)
def test_bad_parameters(kwargs, msg):
    with pytest.raises(ValueError, match=msg):
        EProcessBank(3, **kwargs)


def test_bad_increments():
    bank = EProcessBank(2)
    with pytest.raises(ValueError, match="shape"):
        bank.update(np.zeros(3))
    with pytest.raises(ValueError, match=r"\[-1, 1\]"):
        bank.update(np.array([2.0, 0.0]))
    with pytest.raises(ValueError, match="alpha"):
        ville_threshold(1.5)
