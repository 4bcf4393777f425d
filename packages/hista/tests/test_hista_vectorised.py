"""Vectorised Hista: batched prefix distances, batched EMA, group k-NN against naive loops."""

import pytest
import torch
from hista.estimators import InformativeEncoder
from hista.hista_knn import (
    HistaEstimator,
    ema_embed,
    k_schedule,
    knn_value,
    pad_embeddings,
    prefix_chamfer,
    prefix_chamfer_batch,
)


def test_batched_prefix_chamfer_equals_pairwise_and_ignores_padding():
    g = torch.Generator().manual_seed(0)
    embs = [torch.randn(n, 3, generator=g) for n in (4, 7, 2, 5)]
    padded, lens = pad_embeddings(embs)
    assert padded.shape == (4, 7, 3) and lens.tolist() == [4, 7, 2, 5]
    d = prefix_chamfer_batch(padded, padded)
    assert d.shape == (4, 4, 7, 7)
    for x, a in enumerate(embs):
        for y, b in enumerate(embs):
            want = prefix_chamfer(a, b)
            assert torch.allclose(d[x, y, : len(a), : len(b)], want, atol=1e-5)
    with pytest.raises(ValueError, match="embeddings"):
        prefix_chamfer_batch(padded, torch.randn(2, 3, 4))


def test_symmetric_prefix_chamfer_is_the_two_sided_mean_of_a_double_loop():
    g = torch.Generator().manual_seed(3)
    a, b = torch.randn(4, 2, generator=g), torch.randn(6, 2, generator=g)
    d = prefix_chamfer(a, b, "symmetric")
    for i in range(1, 5):
        for j in range(1, 7):
            pair = torch.cdist(a[:i], b[:j])
            want = 0.5 * (pair.min(1).values.mean() + pair.min(0).values.mean())
            assert float(d[i - 1, j - 1]) == pytest.approx(float(want), abs=1e-5)
    assert torch.allclose(d, prefix_chamfer(b, a, "symmetric").T, atol=1e-6)
    # a query prefix with a position far from everything: the reference's one-sided distance
    # over the longer pool prefix ignores it, the symmetric one does not
    q = torch.tensor([[0.0, 0.0], [9.0, 9.0]])
    pool = torch.zeros(5, 2)
    assert float(prefix_chamfer(q, pool)[1, 4]) == 0.0
    assert float(prefix_chamfer(q, pool, "symmetric")[1, 4]) > 3.0
    with pytest.raises(ValueError, match="distance"):
        prefix_chamfer(a, b, "cosine")


def test_batched_ema_equals_the_per_row_recursion():
    g = torch.Generator().manual_seed(1)
    h = torch.randn(3, 6, 4, generator=g)
    for init in ("standard", "reference"):
        out = ema_embed(h, 0.7, init)
        assert out.shape == (3, 6, 4)
        for b in range(3):
            assert torch.allclose(out[b], ema_embed(h[b], 0.7, init), atol=1e-6)
    est = HistaEstimator(alpha=0.7, mean_window=2, min_interval=2)
    rows = est.embed_batch(h, [1, 2, 0], [6, 4, 5])
    assert [tuple(r.shape) for r in rows] == [(3, 4), (1, 4), (3, 4)]
    assert torch.allclose(rows[0], est.embed(h[0], 1), atol=1e-6)
    assert torch.allclose(rows[2], est.embed(h[2, :5], 0), atol=1e-6)
    with pytest.raises(ValueError, match="mismatched lengths"):
        est.embed_batch(h, [0, 0], [1, 1])
    with pytest.raises(ValueError, match="response span"):
        est.embed_batch(h, [0, 3, 0], [1, 3, 1])


def _naive_group_values(est, embs, rewards):
    """The definition: for each query node, k-NN over the other rollouts' nodes, pair by pair
    (nodes within ``length_window`` of the query only; with ``per_rollout`` each rollout's
    nearest node), shrunk toward the other rollouts' mean reward with ``baseline_weight``."""
    out = []
    rewards = [float(r) for r in rewards]
    for i, q in enumerate(embs):
        qn = est.query_nodes(q.shape[0])
        ks = [est.k] * len(qn) if est.min_k is None else k_schedule(len(qn), est.k, est.min_k)
        others = [r for j, r in enumerate(rewards) if j != i or est.include_self]
        base = sum(others) / len(others)
        vals = []
        for n, k in zip(qn, ks, strict=True):
            dists, labels = [], []
            for j, e in enumerate(embs):
                nodes = est.nodes(e.shape[0])
                if j == i:
                    if not est.include_self:
                        continue
                    nodes = [m for m in nodes if m <= n]
                if est.length_window is not None:
                    nodes = [m for m in nodes if abs(m - n) <= est.length_window]
                if not nodes:
                    continue
                row = prefix_chamfer(q, e, est.distance)[n - 1]
                d = [float(row[m - 1]) for m in nodes]
                d = [min(d)] if est.per_rollout else d
                dists += d
                labels += [rewards[j]] * len(d)
            vals.append(
                knn_value(
                    torch.tensor(dists),
                    torch.tensor(labels),
                    k,
                    est.min_distance,
                    est.temperature,
                    base,
                    est.baseline_weight,
                )  # fmt: skip
            )
        out.append(vals)
    return out


@pytest.mark.parametrize(
    "kw",
    [
        {"k": 5},
        {"k": 40},
        {"k": 9, "min_k": 2},
        {"k": 6, "include_self": True},
        {"k": 3, "temperature": 2.0, "min_interval": 2},
        {"k": 5, "distance": "symmetric"},
        {"k": 5, "length_window": 1},
        {"k": 3, "per_rollout": True},
        {"k": 6, "baseline_weight": 2.0, "distance": "symmetric"},
        {"k": 4, "length_window": 0, "per_rollout": True, "baseline_weight": 0.5},
        {"k": 6, "include_self": True, "length_window": 2, "baseline_weight": 1.0},
    ],
)
def test_group_values_equal_the_naive_loop(kw):
    g = torch.Generator().manual_seed(2)
    embs = [torch.randn(n, 4, generator=g) for n in (5, 8, 3, 6, 1)]
    rewards = torch.tensor([1.0, 0.0, 1.0, 0.0, 1.0])
    est = HistaEstimator(**{"alpha": 0.5, "mean_window": 1, "min_interval": 1, **kw})
    est.min_distance = 0.2
    got = est.group_values(embs, rewards)
    want = _naive_group_values(est, embs, rewards)
    assert [len(v) for v in got] == [len(v) for v in want]
    for a, b in zip(got, want, strict=True):
        assert a.tolist() == pytest.approx(b, abs=1e-5)
        assert all(0.0 <= v <= 1.0 for v in a.tolist())  # convex combination of rewards


def test_group_values_are_permutation_equivariant_and_exact_for_constant_rewards():
    g = torch.Generator().manual_seed(3)
    embs = [torch.randn(n, 3, generator=g) for n in (4, 6, 5)]
    est = HistaEstimator(alpha=0.0, mean_window=1, min_interval=1, min_distance=0.1, k=4)
    base = est.group_values(embs, [1.0, 0.0, 0.0])
    perm = [2, 0, 1]
    moved = est.group_values([embs[p] for p in perm], [[1.0, 0.0, 0.0][p] for p in perm])
    for new, old in enumerate(perm):
        assert torch.allclose(moved[new], base[old], atol=1e-6)
    for v in est.group_values(embs, [0.25, 0.25, 0.25]):
        assert torch.allclose(v, torch.full_like(v, 0.25))
    with pytest.raises(ValueError, match="rewards"):
        est.group_values(embs[:1], [1.0])
    with pytest.raises(ValueError, match="min_k"):
        HistaEstimator(k=4, min_k=5)


def test_rl_step_reuses_the_log_prob_forward_for_hidden_states(monkeypatch):
    """Hista reads the hidden states of the old-log-prob pass: no separate hidden forward."""
    from hista.lightning import ArithProblemsDataModule, PolicyRLModule, train_rl

    torch.manual_seed(0)
    m = PolicyRLModule(advantage="hista", group_size=3, hidden=16, layers=1, heads=2, max_new=6)

    def no_extra_forward(*a, **k):
        raise AssertionError("Hista ran a separate hidden-state forward pass")

    monkeypatch.setattr(m.policy, "hidden", no_extra_forward)
    train_rl(m, 2, ArithProblemsDataModule(n_problems=8, n_held_out=2, batch_size=2))
    assert len(m.adv_seconds) == len(m.step_seconds) == 2
    assert all(0 <= a <= s for a, s in zip(m.adv_seconds, m.step_seconds, strict=True))


def test_informative_encoder_flags_wrong_partial_sums():
    flags = InformativeEncoder.wrong_flags
    assert flags("3+4+5=7 12 ") == [0.0] * 11
    assert flags("3+4+5=8 13 ")[-4:] == [1.0, 1.0, 1.0, 1.0]  # "8" is wrong from its space on
    assert flags("3+4+5=8")[-1] == 0.0  # an incomplete number is not judged yet
    assert flags("3+4=7 8;")[-1] == 1.0  # a number past the last partial sum is wrong
    with pytest.raises(ValueError, match="ArithChain"):
        flags("12 3")
