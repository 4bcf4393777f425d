"""Generator statistics: bursts, query in context, Zipf law (KS), splits, label maps, bad input."""

import math

import pytest
import torch
from mmicl.gmm_data import BurstySampler, GMMBank, eval_splits, zipf_probs
from mmicl.multimodal_data import DigitsModality, MultimodalSampler, multimodal_eval_splits


def _g(seed=0):
    return torch.Generator().manual_seed(seed)


def test_bursty_counts_and_query_in_context():
    bank = GMMBank(256, 16, 8, seed=0)
    s = BurstySampler(bank, N=8, B=2, p_B=1.0)
    d = s.draw_classes(500, _g())
    ctx, q = d.classes[:, :8], d.classes[:, 8]
    for row in ctx:
        counts = torch.unique(row, return_counts=True)[1]
        assert counts.tolist() == [2, 2, 2, 2]
    assert bool((ctx == q[:, None]).any(1).all())
    # labels are k mod L for training classes; the target is the query's label
    assert torch.equal(d.labels, d.classes % 16)


def test_bursty_fraction_and_non_bursty_iid():
    s = BurstySampler(GMMBank(4096, 16, 8), N=8, B=4, p_B=0.3)
    d = s.draw_classes(4000, _g(1))
    assert abs(d.bursty.float().mean().item() - 0.3) < 0.03
    nb = d.classes[~d.bursty]
    # i.i.d. uniform over 4096 classes: repeats within 9 draws are rare
    repeats = sum(len(torch.unique(r)) < 9 for r in nb)
    assert repeats / len(nb) < 0.05


def test_no_repeats_gives_distinct_labels():
    s = BurstySampler(GMMBank(64, 32, 8), N=8, B=2, no_repeats=True)
    d = s.draw_classes(300, _g(2))
    for cls, lab in zip(d.classes, d.labels, strict=True):
        pairs = {(int(c), int(y)) for c, y in zip(cls, lab, strict=True)}
        assert len({y for _, y in pairs}) == len({c for c, _ in pairs}) == 4


def _ks_statistic(samples: torch.Tensor, probs: torch.Tensor) -> float:
    emp = torch.bincount(samples, minlength=len(probs)).double().cumsum(0) / len(samples)
    return float((emp - probs.cumsum(0)).abs().max())


def test_zipf_exponent_by_ks_test():
    K, alpha = 64, 1.2
    s = BurstySampler(GMMBank(K, 8, 4), N=4, B=2, p_B=0.0, alpha=alpha)
    classes = s.draw_classes(5000, _g(3)).classes.flatten()
    n = len(classes)
    crit = 1.63 / math.sqrt(n)  # KS critical value at the 1% level
    assert _ks_statistic(classes, zipf_probs(K, alpha)) < crit
    # the test has power: a wrong exponent is rejected
    assert _ks_statistic(classes, zipf_probs(K, 0.8)) > crit
    # and a log-log fit recovers the exponent
    freq = torch.bincount(classes, minlength=K).double()[:16]
    x, y = torch.log(torch.arange(1, 17).double()), torch.log(freq)
    slope = ((x - x.mean()) * (y - y.mean())).sum() / ((x - x.mean()) ** 2).sum()
    assert abs(-slope.item() - alpha) < 0.1


def test_class_balance_at_alpha_zero():
    K = 32
    s = BurstySampler(GMMBank(K, 8, 4), N=4, B=2, p_B=0.0, alpha=0.0)
    classes = s.draw_classes(8000, _g(4)).classes.flatten()
    counts = torch.bincount(classes, minlength=K).double()
    expected = len(classes) / K
    chi2 = float(((counts - expected) ** 2 / expected).sum())
    assert chi2 < 62.0  # chi-square, 31 dof, 99.9% quantile ~ 61.1 + slack


def test_items_are_noisy_class_means():
    bank = GMMBank(8, 4, 64, seed=1)
    eps = 0.5
    x = bank.items(torch.zeros(20000, dtype=torch.long), eps, _g(5), None)
    mean = x.mean(0)
    assert torch.allclose(mean, bank.means[0] / math.sqrt(1 + eps**2), atol=0.01)
    var = x.var(0).mean().item()
    assert abs(var - eps**2 / (1 + eps**2) / 64) < 1e-3


def test_eval_splits():
    bank = GMMBank(256, 16, 8, n_novel=64, seed=0)
    s = BurstySampler(bank, N=8, B=2, p_B=0.5, p_C=0.1)
    sets = eval_splits(s, n=400)
    ic = sets["IC"]
    assert bool(ic["novel"].all()) and bool(ic["bursty"].all())
    assert int(ic["classes"].max()) < 64  # novel class ids index the 64 novel means
    # novel items are the novel means, not training means
    assert bool(ic["match_label"].any(1).all())
    ic2 = sets["IC2"]
    assert not bool(ic2["novel"].any())
    assert torch.equal(ic2["labels"], (ic2["classes"] % 16 + 1) % 16)
    assert torch.equal(ic2["target"], ic2["labels"][:, -1])
    iw = sets["IW"]
    assert not bool(iw["bursty"].any()) and not bool(iw["novel"].any())
    # tokens: items at even positions, label embeddings at odd ones
    t = sets["test"]
    assert torch.allclose(t["tokens"][:, 1::2][:, :8], bank.label_emb[t["labels"][:, :8]])
    # the masks mark all N label tokens
    assert int(t["label_mask"].sum(1).unique()) == 8


def test_multimodal_label_map_subset_and_layout():
    b1, b2 = GMMBank(64, 16, 8, seed=0), GMMBank(8, 4, 6, n_novel=16, seed=1)
    lm = torch.tensor([3, 7, 11, 15])
    s = MultimodalSampler(b1, b2, N=8, B=2, label_map=lm)
    batch = s.sample(200, _g(6))
    assert set(batch["labels"].unique().tolist()) <= set(lm.tolist())
    assert torch.equal(batch["label_tokens"], b1.label_emb[batch["labels"][:, :8]])
    assert s.seq_len == 26 and batch["label_mask"].shape == (200, 26)
    assert int(batch["label_mask"].sum(1).unique()) == 8
    # default pairing: the M1 query comes from the class paired with the target
    assert bool(batch["match_m1"].any(1).all())


def test_multimodal_controls():
    b1, b2 = GMMBank(64, 16, 8, seed=0), GMMBank(8, 4, 6, n_novel=16, seed=1)
    rnd = MultimodalSampler(b1, b2, N=8, B=2, control="m1_random").sample(200, _g(7))
    assert not bool(rnd["match_m1"].any())
    # the M1 query is closer to no context M1 item than the paired one would be
    base = MultimodalSampler(b1, b2, N=8, B=2).sample(200, _g(7))

    def best_sim(b):
        return (b["m1"][:, :8] * b["m1"][:, 8:]).sum(-1).max(1).values.mean()

    assert best_sim(base) > 0.5 > best_sim(rnd)
    zero = MultimodalSampler(b1, b2, N=8, B=2, control="m1_zero").sample(10, _g(8))
    assert float(zero["m1"][:, 8].abs().sum()) == 0.0
    sets = multimodal_eval_splits(MultimodalSampler(b1, b2, N=8, B=2), n=50)
    assert bool(sets["IC"]["novel"].all())


def test_digits_modality_novel_digits():
    m = DigitsModality((0, 1, 2))
    s = MultimodalSampler(GMMBank(64, 8, 8, seed=0), m, N=4, B=2, p_C=1.0)
    batch = s.sample(20, _g(9))
    assert batch["m2"].shape == (20, 5, 64)
    assert float(batch["m2"].min()) >= 0.0 and float(batch["m2"].max()) <= 1.0


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"K": 30, "L": 8}, "multiple of the label count"),
        ({"K": 4, "L": 8}, "at least the label count"),
    ],
)
def test_bank_rejects_bad_sizes(kwargs, match):
    with pytest.raises(ValueError, match=match):
        GMMBank(D=4, **kwargs)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"N": 9, "B": 2}, "multiple of the burst size"),
        ({"N": 4, "B": 4}, "smaller than the context length"),
        ({"p_B": 1.5}, "probability"),
        ({"p_C": -0.1}, "probability"),
        ({"p_B": float("nan")}, "probability"),
    ],
)
def test_sampler_rejects_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        BurstySampler(GMMBank(32, 8, 4), **kwargs)


def test_secondary_label_set_larger_than_primary_is_rejected():
    with pytest.raises(ValueError, match="larger than the primary"):
        MultimodalSampler(GMMBank(16, 4, 4), GMMBank(8, 8, 4, n_novel=8))


@pytest.mark.parametrize("alpha", [0.0, 1.5])
def test_query_free_iw_split_has_no_query_label_in_context(alpha):
    # K=8, L=8: without the option most 8-item contexts contain the query's class
    bank = GMMBank(K=8, L=8, D=8, seed=0)
    plain = BurstySampler(bank, N=8, B=2, p_B=0.0, alpha=alpha).sample(500, _g(11))
    hit = (plain["labels"][:, :8] == plain["target"][:, None]).any(1).float().mean()
    assert hit > 0.5  # the old IW split is mostly a copy task at small K
    qf = BurstySampler(bank, N=8, B=2, p_B=0.0, alpha=alpha, query_free=True)
    batch = qf.sample(500, _g(11))
    assert not bool((batch["labels"][:, :8] == batch["target"][:, None]).any())
    assert not bool(batch["match_label"].any()) and not bool(batch["match_item"].any())
    # the query's class still follows P (only the context is conditioned)
    assert torch.equal(batch["classes"][:, 8] % 8, batch["target"])
    # the multimodal IW0 split: no M2 context item of the query's label
    b1, b2 = GMMBank(64, 16, 8, seed=0), GMMBank(4, 4, 6, n_novel=16, seed=1)
    mm = multimodal_eval_splits(MultimodalSampler(b1, b2, N=8, B=2), n=300)
    assert not bool(mm["IW0"]["match_label"].any())
    assert mm["IW"]["match_label"].any(1).float().mean() > 0.8  # K2=4: the old IW copies
