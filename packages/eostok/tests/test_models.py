"""Tokenizer shapes and nested dropout, AR causality and sampling, APR, alignment, FID."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from eostok.apr import APRLoss
from eostok.ar_prior import ARPrior, sample
from eostok.frechet import feature_moments, frechet_distance, proxy_fid
from eostok.tokenizer import OneDTokenizer


def tok(**kw):
    torch.manual_seed(0)
    args = dict(num_latent_tokens=6, token_dim=4, codebook_size=16, width=32)
    args.update(kw)
    return OneDTokenizer(16, 4, **args).eval()


def test_token_shapes_and_decode_from_codes_embeddings_probs_agree():
    t = tok()
    x = torch.rand(3, 1, 16, 16)
    z_q, codes, _ = t.encode(x)
    assert z_q.shape == (3, 6, 4) and codes.shape == (3, 6)
    assert codes.dtype == torch.long
    a, mid = t.decode(codes=codes)
    b, _ = t.decode(embeddings=z_q)
    c, _ = t.decode(probs=F.one_hot(codes, 16).float())
    assert a.shape == x.shape and mid.shape == (3, 16, 32)
    assert torch.allclose(a, b, atol=1e-5) and torch.allclose(a, c, atol=1e-5)


def test_nested_dropout_tokens_after_k_do_not_affect_decode():
    t = tok()
    codes = torch.randint(0, 16, (2, 6))
    other = codes.clone()
    other[:, 3:] = torch.randint(0, 16, (2, 3))
    keep = torch.tensor([3, 3])
    a, _ = t.decode(codes=codes, keep=keep)
    b, _ = t.decode(codes=other, keep=keep)
    assert torch.allclose(a, b, atol=1e-6)
    c, _ = t.decode(codes=other, keep=torch.tensor([6, 6]))
    assert not torch.allclose(a, c, atol=1e-4)


def test_causality_changing_token_j_leaves_earlier_logits_unchanged():
    torch.manual_seed(0)
    prior = ARPrior(num_tokens=6, codebook_size=16, token_dim=4, num_classes=3, width=32).eval()
    emb = torch.randn(2, 6, 4)
    y = torch.tensor([0, 2])
    base = prior(emb, y)
    for j in range(6):
        pert = emb.clone()
        pert[:, j] += 3.0
        out = prior(pert, y)
        # logits at position i predict token i from tokens < i: positions <= j are unchanged
        assert torch.allclose(out[:, : j + 1], base[:, : j + 1], atol=1e-5)
        if j < 5:
            assert not torch.allclose(out[:, j + 1 :], base[:, j + 1 :], atol=1e-4)


def test_sampling_bad_inputs():
    prior = ARPrior(num_tokens=3, codebook_size=8, token_dim=4, num_classes=2, width=16)
    cb = torch.randn(8, 4)
    with pytest.raises(ValueError, match="temperature"):
        sample(prior, cb, torch.tensor([0]), temperature=0.0)
    with pytest.raises(ValueError, match="top_k"):
        sample(prior, cb, torch.tensor([0]), top_k=9)
    with pytest.raises(ValueError, match="class labels"):
        sample(prior, cb, torch.tensor([2]))


def test_top1_sampling_is_greedy():
    torch.manual_seed(0)
    prior = ARPrior(num_tokens=4, codebook_size=8, token_dim=4, num_classes=2, width=16).eval()
    cb = torch.randn(8, 4)
    y = torch.tensor([0, 1])
    codes = sample(prior, cb, y, top_k=1)
    logits = prior(cb[codes], y)
    assert torch.equal(logits.argmax(-1), codes)


def test_tokenizer_bad_inputs():
    with pytest.raises(ValueError, match="not divisible"):
        OneDTokenizer(15, 4)
    with pytest.raises(ValueError, match="at least 1"):
        OneDTokenizer(16, 4, num_latent_tokens=0)
    with pytest.raises(ValueError, match="codebook_size"):
        OneDTokenizer(16, 4, codebook_size=1)


def test_apr_at_low_temperature_equals_hard_decode():
    t = tok()
    x = torch.rand(2, 1, 16, 16)
    logits = torch.randn(2, 6, 16) * 5
    hard = t.decode(codes=logits.argmax(-1))[0]
    expected = F.mse_loss(hard, x)
    assert torch.allclose(APRLoss(tau=1e-4)(t, logits, x), expected, atol=1e-5)
    with pytest.raises(ValueError, match="tau"):
        APRLoss(tau=0.0)


def test_apr_gradient_reaches_prior_logits_and_codebook():
    t = tok()
    logits = torch.randn(2, 6, 16, requires_grad=True)
    APRLoss(tau=1.0)(t, logits, torch.rand(2, 1, 16, 16)).backward()
    assert logits.grad.abs().sum() > 0
    assert t.quantizer.embedding.grad.abs().sum() > 0


def test_frechet_closed_form_for_gaussians():
    rng = np.random.default_rng(0)
    a = rng.normal(size=(3, 3))
    s1 = a @ a.T + np.eye(3)
    s2 = np.diag([1.0, 2.0, 3.0])
    mu1, mu2 = np.array([1.0, 0, 0]), np.zeros(3)
    # commuting case: diagonal covariances give sum (sqrt(a) - sqrt(b))^2
    d1, d2 = np.diag([1.0, 4.0, 9.0]), np.diag([4.0, 4.0, 1.0])
    assert frechet_distance(mu1, d1, mu2, d2) == pytest.approx(1 + 1 + 0 + 4)
    assert frechet_distance(mu1, s1, mu2, s2) == pytest.approx(frechet_distance(mu2, s2, mu1, s1))
    assert frechet_distance(mu1, s1, mu1, s1) == pytest.approx(0.0, abs=1e-6)


def test_proxy_fid_identical_sets_and_sample_size_check():
    torch.manual_seed(0)
    f = torch.randn(200, 5)
    assert proxy_fid(f, f) == pytest.approx(0.0, abs=1e-6)
    g = torch.randn(4000, 5) + 1.0
    h = torch.randn(4000, 5)
    assert proxy_fid(g, h) == pytest.approx(5.0, rel=0.1)
    with pytest.raises(ValueError, match="more samples"):
        feature_moments(torch.randn(5, 8))
