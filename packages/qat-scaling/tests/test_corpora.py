"""Offline corpora: exact Markov entropy rate, fixed stdlib split."""

import numpy as np
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
