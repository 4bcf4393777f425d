"""The bonus constants: the theory value is the one-sided Hoeffding width (closed form and a
simulated coverage check), and the naive augmented learner is given the rewards."""

import numpy as np
import pytest
from delayed_rl.baselines import UCBVI, NaiveAugmentedUCBVI
from delayed_rl.bonus import THEORY_SCALE, HoeffdingBonus, log_term, make_bonus, resolve_scale
from delayed_rl.mdp import FiniteMDP


def test_theory_scale_is_the_one_sided_hoeffding_width():
    counts = np.zeros((3, 2, 3))
    counts[..., 0] = 40.0  # n(s, a) = 40
    H, k, delta = 5, 7, 0.1
    beta = make_bonus("hoeffding", "theory", delta)(counts, np.zeros((3, 2)), H, k)
    L = log_term(3, 2, H, k, delta)
    assert beta[0, 0, 0] == pytest.approx(H * np.sqrt(L / (2 * 40)))
    assert THEORY_SCALE["bernstein"] == 1.0
    with pytest.raises(ValueError, match="'theory'"):
        resolve_scale("huge")
    with pytest.raises(ValueError, match=">= 0"):
        resolve_scale(-0.1)


@pytest.mark.parametrize("scale,covers", [("theory", True), (0.2, False)])
def test_theory_constant_covers_the_worst_case_at_level_delta(scale, covers):
    # one (s, a, h, k): L = log(1 / delta); V in {0, H} with P = 1/2 has the largest variance
    rng = np.random.default_rng(0)
    H, n, delta, trials = 4, 20, 0.1, 20_000
    counts = np.zeros((1, 1, 1))
    counts[0, 0, 0] = n
    beta = HoeffdingBonus(resolve_scale(scale), delta)(counts, np.zeros((1, 1)), H, 1)[0, 0, 0]
    means = H * rng.binomial(n, 0.5, size=trials) / n  # P_hat . V
    violations = np.mean(means < H / 2 - beta)  # optimism fails: P_hat V + beta < P V
    assert (violations <= delta) == covers


def test_naive_augmented_is_given_the_rewards():
    # H = 1, no delay: the only decision is the reward; a learner that knows R picks its argmax
    # before any episode, exactly as UCBVI does (a learner estimating R would be optimistic).
    R = np.array([[0.1, 0.9, 0.4], [0.7, 0.2, 0.3]])
    mdp = FiniteMDP(np.full((2, 3, 2), 0.5), R, H=1, mu=np.array([0.5, 0.5]))
    naive = NaiveAugmentedUCBVI.for_mdp(mdp, d_max=0, bonus_scale=0.5)
    ucbvi = UCBVI.for_mdp(mdp, d_max=0, bonus_scale=0.5)
    assert naive.policy()[0][0][:, 0].tolist() == [1, 0]
    assert ucbvi.policy()[0][0][:, 0].tolist() == [1, 0]
