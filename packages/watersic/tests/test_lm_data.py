"""The real-LM data path: corpora, token windows, clear errors offline."""

import importlib.util

import pytest
import torch
from watersic import lm_data
from watersic.cli import main


def encode(text):  # a byte-level stand-in for a tokenizer
    return list(text.encode())


def test_calibration_windows_are_seeded_random_windows_of_the_text():
    text = "".join(chr(97 + i % 26) for i in range(5000))
    a = lm_data.token_windows(encode, text, 64, 8)
    b = lm_data.token_windows(encode, text, 64, 8)
    assert a.shape == (8, 64) and a.dtype == torch.long
    assert torch.equal(a, b)  # seed 42 by default
    ids = torch.tensor(encode(text))
    for row in a:  # every window is a contiguous piece of the token stream
        start = int(torch.nonzero(ids == row[0])[0])
        start = next(
            s for s in range(start, len(ids) - 63, 26) if torch.equal(ids[s : s + 64], row)
        )
        assert torch.equal(ids[start : start + 64], row)


def test_evaluation_windows_are_consecutive_and_capped():
    ev = lm_data.token_windows(encode, "x" * 100 + "y" * 100, 50, 10, random=False)
    assert ev.shape == (4, 50)
    assert ev.reshape(-1).tolist() == encode("x" * 100 + "y" * 100)


def test_short_text_and_unknown_corpus_are_rejected():
    with pytest.raises(ValueError, match="fewer than one window"):
        lm_data.token_windows(encode, "short", 64, 1)
    with pytest.raises(ValueError, match="unknown calibration/evaluation corpus"):
        lm_data.corpus_text("imagenet")


def test_stdlib_corpus_is_offline_text():
    text = lm_data.corpus_text("stdlib", "evaluation", max_chars=10_000)
    assert len(text) == 10_000 and "def " in text


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["quantize", "--calibration", "imagenet"], "unknown calibration/evaluation corpus"),
        (["quantize", "--evaluation", "nope"], "unknown calibration/evaluation corpus"),
        (["quantize", "--seq_len", "1"], "seq_len"),
    ],
)
def test_cli_rejects_bad_corpora(argv, message, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1


@pytest.mark.skipif(importlib.util.find_spec("datasets") is None, reason="datasets not installed")
def test_hub_corpus_offline_gives_the_offline_message(monkeypatch):
    from icml26_shared import hub

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    hub.hub_reachable.cache_clear()
    try:
        with pytest.raises(hub.HubUnavailableError, match="Salesforce/wikitext.*stdlib"):
            lm_data.corpus_text("wikitext2")
    finally:
        hub.hub_reachable.cache_clear()
