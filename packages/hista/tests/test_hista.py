"""Hista: EMA closed form, prefix Chamfer distance, k-NN value, the self-reward leak."""

import itertools

import pytest
import torch
from hista.hista_knn import (
    HistaEstimator,
    downsample,
    ema_embed,
    k_schedule,
    knn_value,
    prefix_chamfer,
)


def _brute(a, b, i, j):
    d = lambda x, y: float(torch.linalg.norm(x - y))  # noqa: E731
    ab = sum(min(d(a[p], b[q]) for q in range(j)) for p in range(i)) / i
    ba = sum(min(d(a[p], b[q]) for p in range(i)) for q in range(j)) / j
    return ab if i > j else ba if i < j else (ab + ba) / 2


def test_prefix_chamfer_equals_a_brute_force_double_loop():
    g = torch.Generator().manual_seed(0)
    a, b = torch.randn(5, 3, generator=g), torch.randn(4, 3, generator=g)
    mat = prefix_chamfer(a, b)
    for i, j in itertools.product(range(1, 6), range(1, 5)):
        assert float(mat[i - 1, j - 1]) == pytest.approx(_brute(a, b, i, j), abs=1e-5)


def test_prefix_chamfer_is_symmetric_and_zero_on_identical_prefixes():
    g = torch.Generator().manual_seed(1)
    a, b = torch.randn(6, 4, generator=g), torch.randn(3, 4, generator=g)
    assert torch.allclose(prefix_chamfer(a, b), prefix_chamfer(b, a).T, atol=1e-6)
    assert torch.allclose(torch.diagonal(prefix_chamfer(a, a)), torch.zeros(6), atol=1e-5)
    with pytest.raises(ValueError, match="embeddings"):
        prefix_chamfer(a, torch.randn(3, 5))


@pytest.mark.parametrize("init", ["standard", "reference"])
def test_ema_matches_its_closed_form(init):
    g = torch.Generator().manual_seed(2)
    h, alpha = torch.randn(6, 3, generator=g), 0.7
    out = ema_embed(h, alpha, init)
    for t in range(6):
        m = sum((1 - alpha) * alpha ** (t - s) * h[s] for s in range(t + 1))
        if init == "reference":  # m_0 = h_0 instead of (1 - alpha) h_0
            m = m + alpha**t * alpha * h[0]
        assert torch.allclose(out[t], m / (1 - alpha ** (t + 1)), atol=1e-5)
    if init == "reference":
        assert torch.allclose(out[0], h[0] / (1 - alpha))


def test_downsample_means_windows():
    h = torch.arange(5.0)[:, None]
    assert downsample(h, 2).flatten().tolist() == [0.5, 2.5, 4.0]


def test_knn_value_is_a_convex_combination_and_exact_on_planted_cases():
    g = torch.Generator().manual_seed(3)
    d, r = torch.rand(30, generator=g) * 5, torch.rand(30, generator=g)
    for k in (1, 5, 30):
        v = knn_value(d, r, k, min_distance=0.01)
        assert float(r.min()) - 1e-6 <= v <= float(r.max()) + 1e-6
    assert knn_value(d, torch.full((30,), 0.7), 10) == pytest.approx(0.7)
    assert knn_value(d, r, 1, min_distance=1e-6) == pytest.approx(float(r[d.argmin()]))
    perm = torch.randperm(30, generator=g)
    assert knn_value(d[perm], r[perm], 7) == pytest.approx(knn_value(d, r, 7))


def test_knn_recovers_planted_values_from_clustered_states():
    """Two clusters of prefixes with value 0.9 and 0.1: queries near each get its value."""
    g = torch.Generator().manual_seed(4)
    est = HistaEstimator(alpha=0.0, mean_window=1, min_interval=100, min_distance=0.01, k=20)
    centres = {0.9: torch.full((3, 4), 3.0), 0.1: torch.full((3, 4), -3.0)}
    pool, rewards = [], []
    for v, c in centres.items():
        for _ in range(200):
            pool.append(c + 0.3 * torch.randn(3, 4, generator=g))
            rewards.append(float(torch.rand(1, generator=g) < v))
    for v, c in centres.items():
        got = est.estimate(c + 0.1 * torch.randn(3, 4, generator=g), pool, torch.tensor(rewards))
        assert got == pytest.approx(v, abs=0.2)


def test_include_self_leaks_the_query_reward():
    own = torch.zeros(4, 2)
    pool = [torch.full((4, 2), 10.0)]
    est = HistaEstimator(alpha=0.0, mean_window=1, min_interval=1, min_distance=0.1, k=2)
    q = own[:2]
    assert est.estimate(q, pool, torch.tensor([0.0])) == 0.0  # disjoint: only the pool
    leak = HistaEstimator(
        alpha=0.0, mean_window=1, min_interval=1, min_distance=0.1, k=2, include_self=True
    )
    assert leak.estimate(q, pool, torch.tensor([0.0]), own, 1.0) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="include_self"):
        leak.estimate(q, pool, torch.tensor([0.0]))


def test_nodes_and_k_schedule():
    est = HistaEstimator(mean_window=5, min_interval=50)
    assert est.nodes(25) == [10, 20, 25]
    assert k_schedule(4, 66, 6) == [66, 51, 36, 21]


def test_bad_inputs():
    with pytest.raises(ValueError, match="min_distance"):
        HistaEstimator(min_distance=0)
    with pytest.raises(ValueError, match="min_distance and temperature"):
        knn_value(torch.ones(2), torch.ones(2), 1, temperature=0)
    with pytest.raises(ValueError, match="distances for"):
        knn_value(torch.ones(2), torch.ones(3), 1)
    with pytest.raises(ValueError, match="min_k <= max_k"):
        k_schedule(3, 2, 6)
    with pytest.raises(ValueError, match="pool rollouts for"):
        HistaEstimator().estimate(torch.ones(1, 2), [torch.ones(2, 2)], torch.tensor([1.0, 0.0]))
    with pytest.raises(ValueError, match="alpha"):
        ema_embed(torch.ones(2, 2), 1.0)
    with pytest.raises(ValueError, match="response_start"):
        HistaEstimator().embed(torch.ones(3, 2), 3)


def test_prompt_in_prefix_equals_the_chamfer_distance_of_prompt_plus_response_prefixes():
    # the reference's prefixes start at the first prompt token; pool nodes sit in the response
    g = torch.Generator().manual_seed(7)
    prompt = torch.randn(3, 2, generator=g)  # shared by every rollout of the group
    hid = [torch.cat([prompt, torch.randn(n, 2, generator=g)]) for n in (4, 5, 3)]
    est = HistaEstimator(alpha=0.0, mean_window=1, min_interval=2, min_distance=1e-3, k=3,
                         prompt_in_prefix=True)  # fmt: skip
    embs = [est.embed(h, 3) for h in hid]
    assert [e.shape[0] for e in embs] == [7, 8, 6] and est.prompt_units(3) == 3
    query, pool, rewards = embs[0][:5], embs[1:], torch.tensor([1.0, 0.0])
    # by hand: every response node of the pool, distance over prompt + response prefixes
    cand = []
    for e, r in zip(pool, rewards, strict=True):
        for n in est.nodes(e.shape[0] - 3):
            cand.append((_brute(query, e, 5, 3 + n), float(r)))
    near = sorted(cand)[:3]
    want = sum(r / d for d, r in near) / sum(1 / d for d, _ in near)
    got = est.estimate(query, pool, rewards, prompt_units=3)
    assert got == pytest.approx(want, abs=1e-5)
    with pytest.raises(ValueError, match="SVEB option"):
        est.group_values(embs, rewards.tolist() + [1.0])


def test_the_shared_prompt_is_not_a_rescale_of_the_response_only_distance():
    # the README once said prompt positions "only rescale" the distance: they do not, the
    # ratio depends on the pair's lengths, so neighbours can rank differently
    g = torch.Generator().manual_seed(8)
    prompt = torch.randn(4, 2, generator=g)
    a, b = torch.randn(6, 2, generator=g), torch.randn(6, 2, generator=g)
    pa, pb = torch.cat([prompt, a]), torch.cat([prompt, b])
    ratios = {
        (i, j): _brute(pa, pb, 4 + i, 4 + j) / _brute(a, b, i, j)
        for i, j in itertools.product((2, 5), (1, 3, 6))
    }
    assert max(ratios.values()) - min(ratios.values()) > 0.05
