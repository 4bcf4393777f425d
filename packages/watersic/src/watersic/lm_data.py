"""Calibration and evaluation text for real causal LMs (the paper's data path).

Paper: Lifar, Savkin, Ordentlich, Polyanskiy, "WaterSIC", ICML 2026 (arXiv:2603.04956). The
paper calibrates on a RedPajama sample (sequence length 2048, seed 42; C4 and WikiText-2 are
alternatives) and reports WikiText-2 test / C4 validation perplexity and the token-mean
KL(FP || Q) in bits. This module maps those data sets to token windows for any ``transformers``
model:

* ``DATASETS`` -- the named corpora and where they live on the Hugging Face Hub, loaded
  through the workspace's offline-aware ``icml26_shared.hub.load_dataset`` (offline and not
  cached: one clear error naming the offline alternative);
* ``corpus_text`` -- the text of one split (``stdlib`` is CPython's own docstrings/sources,
  always offline), or of the user's own text: a ``.txt`` file, a ``.jsonl`` file with a
  ``text`` field per line, or a folder (a ``datasets.Dataset.save_to_disk`` folder, else its
  ``*.txt`` files) -- :func:`read_text`;
* ``token_windows`` -- the text tokenized by the model's own tokenizer and cut into
  ``(n, seq_len)`` windows: random windows for calibration (GPTQ's recipe, seeded), consecutive
  non-overlapping windows for evaluation (the standard perplexity protocol).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path

import torch

#: name -> (hub id, config, calibration split, evaluation split, text field, data_files)
DATASETS: dict[str, tuple[str, str | None, str, str, str, dict | None]] = {
    "wikitext2": ("Salesforce/wikitext", "wikitext-2-raw-v1", "train", "test", "text", None),
    "c4": (
        "allenai/c4",
        None,
        "train",
        "validation",
        "text",
        {
            "train": "en/c4-train.00000-of-01024.json.gz",
            "validation": "en/c4-validation.00000-of-00008.json.gz",
        },
    ),
    "redpajama": ("ZengXiangyu/RedPajama-Data-1T-Sample", None, "train", "train", "text", None),
}

#: Corpora ``corpus_text`` accepts: the hub ones and the offline ``stdlib``.
CORPORA = ("stdlib", *DATASETS)


def check_corpus(name: str) -> str:
    """Return ``name`` if it is a known corpus or an existing text file/folder, else raise
    ``ValueError``."""
    if name not in CORPORA and not Path(name).exists():
        raise ValueError(
            f"unknown calibration/evaluation corpus {name!r}: neither one of {CORPORA} nor an "
            "existing .txt/.jsonl file or folder"
        )
    return name


def read_text(path: str | Path, max_chars: int = 20_000_000) -> str:
    """The user's own text: a ``.txt`` file, a ``.jsonl`` file (one JSON object with a ``text``
    field per line), or a folder -- a ``datasets`` ``save_to_disk`` folder (its ``text``
    column) or else every ``*.txt`` file in it, sorted by name. Documents are joined by a blank
    line; at most ``max_chars`` characters. Raises ``ValueError`` naming the problem.
    """
    path = Path(path)
    if path.is_dir():
        if (path / "dataset_info.json").exists() or (path / "state.json").exists():
            try:
                from datasets import load_from_disk
            except ImportError:
                raise ValueError(
                    f"{path} is a saved dataset; reading it needs `pip install 'watersic[hub]'`"
                ) from None
            ds = load_from_disk(str(path))
            if "text" not in ds.column_names:
                raise ValueError(f"{path}: the saved dataset has no 'text' column")
            docs = (row["text"] for row in ds)
        else:
            files = sorted(path.glob("*.txt"))
            if not files:
                raise ValueError(f"{path}: a folder with no *.txt files (and not a saved dataset)")
            docs = (f.read_text(encoding="utf-8", errors="replace") for f in files)
    elif path.suffix == ".jsonl":
        docs = _jsonl_texts(path)
    elif path.is_file():
        docs = iter([path.read_text(encoding="utf-8", errors="replace")])
    else:
        raise ValueError(f"{path}: no such file or folder")
    pieces, total = [], 0
    for doc in docs:
        pieces.append(doc)
        total += len(doc)
        if total >= max_chars:
            break
    text = "\n\n".join(pieces)[:max_chars]
    if not text.strip():
        raise ValueError(f"{path}: no text")
    return text


def _jsonl_texts(path: Path):
    with path.open(encoding="utf-8") as fh:
        for i, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                raise ValueError(f"{path}, line {i}: not valid JSON") from None
            if not isinstance(row, dict) or not isinstance(row.get("text"), str):
                raise ValueError(f"{path}, line {i}: expected an object with a 'text' string")
            yield row["text"]


def corpus_text(name: str, purpose: str = "calibration", max_chars: int = 20_000_000) -> str:
    """Text of corpus ``name`` for ``purpose`` (``calibration`` or ``evaluation``).

    Hub corpora go through the offline-aware loader; ``stdlib`` uses CPython's training /
    held-out source files (:mod:`watersic.text_corpus`); a path is the user's own text
    (:func:`read_text`, the same text for either purpose).
    """
    check_corpus(name)
    if purpose not in ("calibration", "evaluation"):
        raise ValueError(f"purpose must be 'calibration' or 'evaluation', got {purpose!r}")
    if name not in CORPORA:
        return read_text(name, max_chars)
    if name == "stdlib":
        from watersic.text_corpus import stdlib_text

        raw = stdlib_text("train" if purpose == "calibration" else "heldout", max_chars)
        return raw.decode("utf-8", errors="replace")[:max_chars]
    from icml26_shared.hub import load_dataset

    path, config, cal_split, eval_split, field, files = DATASETS[name]
    split = cal_split if purpose == "calibration" else eval_split
    kwargs = {"data_files": {split: files[split]}} if files else {}
    args = (config,) if config else ()
    ds = load_dataset(
        path, *args, split=split, offline_hint="use --calibration stdlib (offline)", **kwargs
    )
    pieces, total = [], 0
    for row in ds:
        pieces.append(row[field])
        total += len(row[field])
        if total >= max_chars:
            break
    return "\n\n".join(pieces)[:max_chars]


def token_windows(
    encode: Callable[[str], Sequence[int]],
    text: str,
    seq_len: int,
    n: int,
    random: bool = True,
    seed: int = 42,
) -> torch.Tensor:
    """``(n, seq_len)`` token windows of ``text`` under the tokenizer function ``encode``.

    ``random``: windows at seeded random offsets (calibration, the GPTQ/WaterSIC recipe; seed
    42 as in the authors' code); otherwise consecutive non-overlapping windows from the start
    (evaluation), at most ``n``.

    >>> ids = token_windows(lambda s: list(s.encode()), "abcdefghij" * 10, 8, 3, random=False)
    >>> ids.shape, ids[1, 0].item() == ord("i")
    (torch.Size([3, 8]), True)
    """
    if seq_len < 2 or n < 1:
        raise ValueError(f"need seq_len >= 2 and n >= 1, got seq_len={seq_len}, n={n}")
    ids = torch.as_tensor(list(encode(text)), dtype=torch.long)  # (N,)
    if ids.numel() < seq_len + 1:
        raise ValueError(
            f"the text has only {ids.numel()} tokens, fewer than one window of {seq_len}"
        )
    if not random:
        k = min(n, ids.numel() // seq_len)
        return ids[: k * seq_len].reshape(k, seq_len)
    g = torch.Generator().manual_seed(seed)
    starts = torch.randint(0, ids.numel() - seq_len, (n,), generator=g)
    return torch.stack([ids[s : s + seq_len] for s in starts.tolist()])
