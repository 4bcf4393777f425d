"""Progress measures on hand-made attention patterns (including the TLA regression)."""

import pytest
import torch
from mmicl.gmm_data import BurstySampler, GMMBank
from mmicl.multimodal_data import MultimodalSampler
from mmicl.progress_measures import (
    TIIA,
    TILA,
    TLA,
    ContextLabelAccuracy,
    InductionStrength,
    PrevTokenStrength,
    induction_strength,
    previous_token_strength,
)


def _batch(N=8, seed=0):
    s = BurstySampler(GMMBank(256, 16, 8, seed=0), N=N, B=2)
    return s.sample(64, torch.Generator().manual_seed(seed))


def _pattern(batch, final_row):
    S, T = batch["label_mask"].shape
    A = torch.full((S, 1, T, T), 0.0)
    A[:, 0] = torch.tril(torch.ones(T, T)) / torch.arange(1, T + 1)[:, None]
    A[:, 0, -1] = final_row
    return A


def test_all_attention_on_matching_labels():
    b = _batch()
    match = b["match_label"].float()
    n_match = match.sum(1, keepdim=True)
    A = _pattern(b, match / n_match)
    ih = InductionStrength()
    ih.update(A, b)
    expected = (1.0 / n_match.squeeze(1)).mean()
    assert float(ih.compute()) == pytest.approx(float(expected), abs=1e-6)
    tila = TILA()
    tila.update(A, b)
    assert float(tila.compute()) == pytest.approx(1.0)
    tla = TLA()
    tla.update(A, b)
    assert float(tla.compute()) == pytest.approx(1.0)
    tiia = TIIA()
    tiia.update(A, b)
    assert float(tiia.compute()) == pytest.approx(0.0)


def test_uniform_attention_gives_zero_induction_strength():
    b = _batch()
    T = b["label_mask"].shape[1]
    A = _pattern(b, torch.full((64, T), 1.0 / T))
    ih = InductionStrength()
    ih.update(A, b)
    assert float(ih.compute()) == pytest.approx(0.0, abs=1e-7)


def test_attention_on_non_matching_labels_is_negative():
    b = _batch()
    other = (b["label_mask"] & ~b["match_label"]).float()
    A = _pattern(b, other / other.sum(1, keepdim=True))
    vals, valid = induction_strength(A[:, 0, -1], b["match_label"], b["label_mask"])
    assert bool((vals[valid] < 0).all())


def test_tla_sums_over_all_label_tokens():
    # regression: the reference sums only the first (T - 1) // 3 label tokens when unimodal
    N = 8
    b = _batch(N)
    T = 2 * N + 1
    row = torch.zeros(64, T)
    row[:, 1 : 2 * N : 2] = 1.0 / N  # uniform over the N label tokens
    tla = TLA()
    tla.update(_pattern(b, row), b)
    assert float(tla.compute()) == pytest.approx(1.0)
    buggy = row[:, 1 : 2 * ((T - 1) // 3) : 2].sum(1).mean()
    assert float(buggy) == pytest.approx(5 / 8)


def test_previous_token_strength_on_shifted_identity():
    T = 9
    A = torch.zeros(2, 1, T, T)
    A[:, 0, 0, 0] = 1.0
    for t in range(1, T):
        A[:, 0, t, t - 1] = 1.0
    m = PrevTokenStrength()
    m.update(A, {})
    assert float(m.compute()) == pytest.approx(1.0)
    assert float(previous_token_strength(A, offset=2).mean()) == 0.0
    with pytest.raises(ValueError, match="offset"):
        previous_token_strength(A, offset=T)


def test_per_head_measures():
    b = _batch()
    T = b["label_mask"].shape[1]
    A = torch.zeros(64, 2, T, T)
    A[:, 0, -1] = b["match_label"].float() / b["match_label"].float().sum(1, keepdim=True)
    A[:, 1, -1, -1] = 1.0  # head 1 looks at the query only
    h0, h1 = InductionStrength(head=0), InductionStrength(head=1)
    h0.update(A, b)
    h1.update(A, b)
    assert float(h0.compute()) > 0.4 and float(h1.compute()) == 0.0


def test_multimodal_tiia_per_modality():
    b1, b2 = GMMBank(64, 16, 8, seed=0), GMMBank(8, 4, 6, n_novel=16, seed=1)
    b = MultimodalSampler(b1, b2, N=4, B=2).sample(32, torch.Generator().manual_seed(0))
    T = 3 * 4 + 2
    A = torch.zeros(32, 1, T, T)
    A[:, 0, -1] = b["match_m2"].float() / b["match_m2"].float().sum(1, keepdim=True)
    m2, m1 = TIIA(key="match_m2"), TIIA(key="match_m1")
    m2.update(A, b)
    m1.update(A, b)
    assert float(m2.compute()) == pytest.approx(1.0) and float(m1.compute()) == 0.0
    # M1 and M2 items of the matching class sit at 3i and 3i + 1
    assert torch.equal(b["match_m1"][:, 0:12:3], b["match_m2"][:, 1:12:3])


def test_context_label_accuracy():
    labels = torch.tensor([[1, 2, 3], [4, 4, 0]])  # last column: the query's label
    logits = torch.nn.functional.one_hot(torch.tensor([2, 0]), 5).float()
    cla = ContextLabelAccuracy()
    cla.update(logits, {"labels": labels})
    assert float(cla.compute()) == 0.5
