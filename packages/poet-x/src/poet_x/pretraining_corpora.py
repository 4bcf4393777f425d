"""The paper's pretraining text (C4, and WikiText / TinyStories) through the offline-aware loader.

Paper setup (POET-X, Qiu et al., ICML 2026, arXiv 2603.05500): ``allenai/c4`` "en", streamed,
tokenised with the ``google-t5/t5-base`` tokenizer, packed into sequences of 256 tokens.

* :data:`CORPORA`: the named corpora -> (Hub id, config, train split, validation split).
* :class:`PackedStream`: packed windows streamed from a dataset (an ``IterableDataset``).
* :func:`pack_documents`: documents -> token ids (``encode``) joined by an end-of-document
  id, cut into windows of ``length`` tokens (``seq_len + 1``: inputs and shifted targets);
  the remainder shorter than a window is dropped. Windows never overlap.
* :class:`ByteTokenizer`: UTF-8 bytes as tokens (vocabulary 256, end-of-document 0 = NUL,
  a byte that text does not contain); needs no download.
* :class:`~poet_x.lightning.HFTextDataModule`: a Hub corpus (or a local ``.txt`` file / folder) through
  :func:`icml26_shared.hub.load_dataset`; training windows are packed on the fly from the
  (streamed) train split, validation windows are the first ``val_sequences`` of the
  validation split. Offline and not cached, it fails at once with one line naming the
  dataset and the offline alternative (``TextDataModule``, CPython's stdlib text).

Needs ``datasets`` (``pip install 'poet-x[hub]'``); the Hub tokenizer needs the Hub or its cache.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Iterable, Iterator

import torch
from torch.utils.data import IterableDataset

CORPORA: dict[str, tuple[str, str | None, str, str]] = {
    "c4": ("allenai/c4", "en", "train", "validation"),
    "wikitext": ("Salesforce/wikitext", "wikitext-103-raw-v1", "train", "validation"),
    "tinystories": ("roneneldan/TinyStories", None, "train", "validation"),
}
OFFLINE_HINT = (
    "the offline data, --data poet_x.lightning.TextDataModule (CPython stdlib bytes or the "
    "Markov chain), or a local .txt file: --data.init_args.dataset path/to/text.txt"
)

TOKENIZER_HINT = "byte-level tokens need no download: --data.init_args.tokenizer bytes"


class ByteTokenizer:
    """UTF-8 bytes as token ids (vocabulary 256, end-of-document id 0).

    Examples
    --------
    >>> tok = ByteTokenizer()
    >>> tok.encode("hé"), tok.vocab_size, tok.eos_id
    ([104, 195, 169], 256, 0)
    """

    vocab_size = 256
    eos_id = 0

    def encode(self, text: str) -> list[int]:
        """The UTF-8 bytes of ``text``."""
        return list(text.encode("utf-8"))


class HubTokenizer:
    """A ``transformers`` tokenizer from the Hub (offline: its cache), e.g. ``google-t5/t5-base``."""

    def __init__(self, name: str) -> None:
        from icml26_shared.hub import from_pretrained
        from transformers import AutoTokenizer

        self.name = name
        try:
            self.tok = from_pretrained(AutoTokenizer, name, offline_hint=TOKENIZER_HINT)
        except RuntimeError as err:  # HubUnavailableError: one line through the CLI
            raise ConnectionError(str(err)) from None
        eos = self.tok.eos_token_id
        self.eos_id = int(eos if eos is not None else self.tok.sep_token_id or 0)
        self.vocab_size = len(self.tok)

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text`` without special tokens."""
        return self.tok(text, add_special_tokens=False)["input_ids"]


def pack_documents(
    texts: Iterable[str], encode: Callable[[str], list[int]], eos_id: int, length: int
) -> Iterator[torch.Tensor]:
    """Yield windows of ``length`` token ids packed from ``texts`` (documents joined by ``eos_id``).

    Examples
    --------
    >>> out = list(pack_documents(["ab", "cde"], ByteTokenizer().encode, 0, 3))
    >>> [w.tolist() for w in out]
    [[97, 98, 0], [99, 100, 101]]
    """
    if length < 2:
        raise ValueError(f"window length must be >= 2, got {length}")
    buf: list[int] = []
    for text in texts:
        if not text:
            continue
        buf.extend(encode(text))
        buf.append(eos_id)
        while len(buf) >= length:
            yield torch.tensor(buf[:length], dtype=torch.long)
            del buf[:length]


def is_validation(text: str) -> bool:
    """Fixed split of a local corpus by content hash: about one line in ten is validation.

    Examples
    --------
    >>> sum(is_validation(f"line {i}") for i in range(1000)) in range(60, 140)
    True
    """
    return zlib.crc32(text.encode("utf-8")) % 10 == 0


class PackedStream(IterableDataset):
    """Packed windows streamed from a (Hugging Face) dataset, split over DataLoader workers."""

    def __init__(self, dataset, field: str, tokenizer, length: int, limit: int | None) -> None:
        self.dataset, self.field, self.tokenizer = dataset, field, tokenizer
        self.length, self.limit = length, limit

    def __iter__(self) -> Iterator[tuple[torch.Tensor]]:
        info = torch.utils.data.get_worker_info()
        docs = (row[self.field] for row in self.dataset)
        if info is not None and info.num_workers > 1:
            docs = (d for i, d in enumerate(docs) if i % info.num_workers == info.id)
        tok = self.tokenizer
        for i, window in enumerate(pack_documents(docs, tok.encode, tok.eos_id, self.length)):
            if self.limit is not None and i >= self.limit:
                return
            yield (window,)
