"""Hista's options beyond the reference (length window, one node per rollout, the group mean as
a pseudo-neighbour) and the validation-split selection, on planted ground truth.

Two generators whose hidden states carry the value (the package never saw either): a
*sequential* one, where one wrong step anywhere in the response makes success unlikely (the
value drops at the step and stays low: only a distance that counts the query's own positions
sees it), and a *latent* one, where the whole response encodes a latent that sets the success
rate. Exact values are known, so the validated default must beat the group mean on both.
"""

import zlib

import numpy as np
import pytest
import torch
from hista.estimators import GroupMean, HistaValue
from hista.hista_knn import ARITH_HISTA, HistaEstimator, knn_value
from hista.sveb import SvebCase, evaluate
from hista.sveb_mini import HISTA_GRID, validated_hista

LENGTH, P_WRONG = 10, 0.1


def _sequential(rng):
    """'a' = a right step, 'b' = a wrong one; success 0.9 without a wrong step, else 0.1."""
    text = "".join("b" if rng.random() < P_WRONG else "a" for _ in range(LENGTH))
    return text, float(rng.random() < (0.1 if "b" in text else 0.9))


def _sequential_value(prefix):
    if "b" in prefix:
        return 0.1
    clean = (1 - P_WRONG) ** (LENGTH - len(prefix))
    return 0.9 * clean + 0.1 * (1 - clean)


def _latent(rng):
    """'x' / 'y' responses (the latent); success 0.15 + 0.7 * [latent]."""
    z = rng.random() < 0.5
    text = ("y" if z else "x") * LENGTH
    return text, float(rng.random() < (0.85 if z else 0.15))


def _latent_value(prefix):
    return 0.85 if prefix[0] == "y" else 0.15


class PlantedEncoder:
    """(T, 6) states: a code of each response character plus noise that is a fixed function of
    the text (an encoder is deterministic); prompt characters are noise only."""

    def __init__(self, seed):
        g = torch.Generator().manual_seed(seed)
        self.code = {c: 3.0 * torch.randn(6, generator=g) for c in "abxy"}

    def states(self, texts):
        out = []
        for t in texts:
            g = torch.Generator().manual_seed(zlib.crc32(t.encode()))
            rows = [self.code.get(c, torch.zeros(6)) for c in t]
            out.append(torch.stack(rows) + 0.3 * torch.randn(len(t), 6, generator=g))
        return out


def _cases(make, value, problems, seed, group=16, per_problem=2, m=32):
    rng = np.random.default_rng(seed)
    cases = []
    for pid in range(problems):
        pool = [make(rng) for _ in range(group)]
        for _ in range(per_problem):
            source, r = make(rng)
            prefix = source[: int(rng.integers(1, LENGTH))]
            v = value(prefix)
            cases.append(
                SvebCase(
                    pid,
                    (1, 2),
                    [t for t, _ in pool],
                    [r_ for _, r_ in pool],
                    source,
                    r,
                    prefix,
                    [float(x) for x in rng.random(m) < v],
                    [],
                    v,
                )  # fmt: skip
            )
    return cases


@pytest.mark.parametrize("make,value", [(_sequential, _sequential_value), (_latent, _latent_value)])
def test_validated_default_beats_the_group_mean_on_planted_informative_states(make, value):
    enc = PlantedEncoder(0)
    val = _cases(make, value, 8, seed=1)
    test = _cases(make, value, 12, seed=2)
    est, _ = validated_hista(enc, val)
    hista = evaluate([HistaValue(enc, est).predict(c) for c in test], test)["mae_exact"]
    group = evaluate([GroupMean().predict(c) for c in test], test)["mae_exact"]
    assert hista < 0.75 * group, (hista, group, est)


def test_the_reference_setting_is_a_candidate_of_the_grid():
    keys = HISTA_GRID[0].keys()
    ref = {"distance": "longer", "length_window": None,
           "baseline_weight": 0.0, **ARITH_HISTA}  # fmt: skip
    assert {k: ref[k] for k in keys} in HISTA_GRID


def test_one_node_per_rollout_with_equal_weights_is_exactly_the_group_mean():
    g = torch.Generator().manual_seed(4)
    pool = [torch.randn(n, 3, generator=g) for n in (3, 9, 5, 7)]  # lengths differ
    rewards = torch.tensor([1.0, 0.0, 0.0, 1.0])
    query = torch.randn(4, 3, generator=g)
    kw = {"alpha": 0.0, "mean_window": 1, "min_interval": 1, "min_distance": 1e6, "k": 100}
    per = HistaEstimator(**kw, per_rollout=True).estimate(query, pool, rewards)
    assert per == pytest.approx(0.5)
    # every node: long rollouts outvote short ones (9 + 0 + ... nodes), not the group mean
    every = HistaEstimator(**kw).estimate(query, pool, rewards)
    assert every == pytest.approx((3 + 7) / (3 + 9 + 5 + 7))
    values = HistaEstimator(**kw, per_rollout=True).group_values(pool, rewards)
    for i, v in enumerate(values):
        loo = (float(rewards.sum()) - float(rewards[i])) / 3
        assert torch.allclose(v, torch.full_like(v, loo))


def test_the_group_mean_weight_interpolates_between_neighbours_and_group_mean():
    near, far = torch.tensor([0.01, 0.02]), torch.tensor([500.0, 800.0])
    r = torch.tensor([1.0, 1.0])
    # close neighbours keep their value; far ones fall back to the baseline
    assert knn_value(near, r, 2, 0.1, baseline=0.0, baseline_weight=1.0) == pytest.approx(2 / 3)
    assert knn_value(far, r, 2, 0.1, baseline=0.0, baseline_weight=1.0) < 0.001
    assert knn_value(far, r, 2, 0.1) == 1.0  # the reference: no fallback at any distance
    assert knn_value(near, r, 2, 0.1, baseline=0.2, baseline_weight=1e9) == pytest.approx(0.2)
    assert knn_value(torch.zeros(0), torch.zeros(0), 2, 0.1, baseline=0.3) == 0.3
    with pytest.raises(ValueError, match="baseline"):
        knn_value(near, r, 2, 0.1, baseline_weight=1.0)


def test_length_window_keeps_only_pool_nodes_of_similar_length():
    q = torch.zeros(2, 1)
    # rollout 0 (reward 1) starts far from the query, but its long prefixes are dominated by
    # matching positions; rollout 1 (reward 0) is moderately close at the query's own length
    pool = [torch.tensor([[5.0]] * 2 + [[0.0]] * 8), torch.tensor([[2.0], [2.0]])]
    rewards = torch.tensor([1.0, 0.0])
    kw = {"alpha": 0.0, "mean_window": 1, "min_interval": 1, "min_distance": 1e-3, "k": 1}
    assert HistaEstimator(**kw).estimate(q, pool, rewards) == 1.0  # length 10 at distance 1.0
    assert HistaEstimator(**kw, distance="symmetric").estimate(q, pool, rewards) == 1.0
    assert HistaEstimator(**kw, length_window=0).estimate(q, pool, rewards) == 0.0
    assert HistaEstimator(**kw, length_window=3).estimate(q, pool, rewards) == 0.0  # 10 / 5 = 2
    assert HistaEstimator(**kw, length_window=4).estimate(q, pool, rewards) == 1.0  # 10 / 6 < 2
    with pytest.raises(ValueError, match="length_window"):
        HistaEstimator(length_window=-1)
