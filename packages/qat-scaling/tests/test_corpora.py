"""Offline corpora: exact Markov entropy rate, fixed stdlib split."""

import numpy as np
import pytest
import torch
from qat_scaling.corpora import MarkovCorpus, StdlibCorpus


def test_markov_empirical_entropy_matches_exact_rate():
    m = MarkovCorpus(order=2, vocab=16, alpha=0.5, seed=3, train_tokens=1_000_000, val_tokens=1000)
    h = m.entropy_rate()
    assert 0 < h < np.log(16)
    assert abs(m.nll(m.train.numpy()) - h) / h < 0.01
    # the stationary distribution is stationary
    assert np.isclose(m.stationary.sum(), 1.0)


def test_stdlib_split_is_fixed_and_disjoint():
    a, b = StdlibCorpus(max_bytes=1_000_000), StdlibCorpus(max_bytes=1_000_000)
    assert a.sha256 == b.sha256
    assert len(a.val) > 0 and len(a.train) > 5 * len(a.val)
    assert int(a.train.max()) < 256


def test_bpe_is_trained_on_train_only_round_trips_and_compresses():
    from qat_scaling.bpe import decode, encode, train_bpe
    from qat_scaling.corpora import StdlibCorpus

    c = StdlibCorpus(max_bytes=1_000_000, tokenizer="bpe", bpe_vocab=512)
    raw = StdlibCorpus(max_bytes=1_000_000)
    assert c.vocab_size == 512 and c.sha256 == raw.sha256
    assert int(c.train.max()) < 512 and c.train.dtype == torch.int64
    assert len(c.train) < 0.7 * len(raw.train)  # merges compress Python source
    tok = train_bpe(bytes(raw.train.to(torch.uint8).numpy()), 512)
    text = bytes(raw.val[:2000].to(torch.uint8).numpy())
    assert decode(tok, encode(tok, text)) == text.decode("utf-8", "replace").encode()
    assert "BPE tokens (vocab 512)" in c.describe()
    with pytest.raises(ValueError, match="tokenizer"):
        StdlibCorpus(max_bytes=1_000_000, tokenizer="wordpiece")
    with pytest.raises(ValueError, match="vocab_size > 256"):
        train_bpe(b"abc", 100)
