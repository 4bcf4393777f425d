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


def test_hf_corpus_reads_a_local_text_folder_with_a_local_tokenizer(tmp_path):
    pytest.importorskip("datasets")
    from qat_scaling.bpe import train_bpe
    from qat_scaling.corpora import HFTextCorpus
    from transformers import PreTrainedTokenizerFast

    text = "def add(a, b):\n    return a + b\n" * 400
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "part.txt").write_text(text)
    PreTrainedTokenizerFast(tokenizer_object=train_bpe(text.encode(), 300)).save_pretrained(
        tmp_path / "tok"
    )
    as_bytes = HFTextCorpus(str(tmp_path / "data"), max_bytes=10_000, val_fraction=0.1)
    assert as_bytes.vocab_size == 256 and len(as_bytes.train) > len(as_bytes.val) > 0
    bpe = HFTextCorpus(
        str(tmp_path / "data"), max_bytes=10_000, val_fraction=0.1, tokenizer=str(tmp_path / "tok")
    )
    n_vocab = train_bpe(text.encode(), 300).get_vocab_size()  # <= 300: few merges exist here
    assert bpe.vocab_size == n_vocab > 256 and int(bpe.train.max()) < n_vocab
    assert len(bpe.train) < len(as_bytes.train) / 2  # the merges compress the repeated text
    assert "tokens" in bpe.describe()


def test_hf_corpus_offline_is_one_clear_connection_error(monkeypatch):
    pytest.importorskip("datasets")
    import icml26_shared.hub as hub
    from qat_scaling.corpora import HFTextCorpus

    monkeypatch.setattr(hub, "hub_reachable", lambda timeout=3.0: False)
    with pytest.raises(ConnectionError, match="corpus=stdlib"):
        HFTextCorpus("no-such-owner/no-such-dataset-xyz")
