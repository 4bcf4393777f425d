"""The paper's pretraining text (C4, and WikiText / TinyStories) through the offline-aware loader.

Paper setup (POET-X, Qiu et al., ICML 2026, arXiv 2603.05500): ``allenai/c4`` "en", streamed,
tokenised with the ``google-t5/t5-base`` tokenizer, packed into sequences of 256 tokens.

* :data:`CORPORA`: the named corpora -> (Hub id, config, train split, validation split).
* :func:`pack_documents`: documents -> token ids (``encode``) joined by an end-of-document
  id, cut into windows of ``length`` tokens (``seq_len + 1``: inputs and shifted targets);
  the remainder shorter than a window is dropped. Windows never overlap.
* :class:`ByteTokenizer`: UTF-8 bytes as tokens (vocabulary 256, end-of-document 0 = NUL,
  a byte that text does not contain); needs no download.
* :class:`HFTextDataModule`: a Hub corpus (or a local ``.txt`` file / folder) through
  :func:`icml26_shared.hub.load_dataset`; training windows are packed on the fly from the
  (streamed) train split, validation windows are the first ``val_sequences`` of the
  validation split. Offline and not cached, it fails at once with one line naming the
  dataset and the offline alternative (``TextDataModule``, CPython's stdlib text).

Needs ``datasets`` (``pip install 'poet-x[hub]'``); the Hub tokenizer needs the Hub or its cache.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

import lightning.pytorch as pl
import torch
from torch.utils.data import DataLoader, IterableDataset, TensorDataset

CORPORA: dict[str, tuple[str, str | None, str, str]] = {
    "c4": ("allenai/c4", "en", "train", "validation"),
    "wikitext": ("Salesforce/wikitext", "wikitext-103-raw-v1", "train", "validation"),
    "tinystories": ("roneneldan/TinyStories", None, "train", "validation"),
}
OFFLINE_HINT = (
    "the offline data, --data poet_x.text_data.TextDataModule (CPython stdlib bytes or the "
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


class _PackedStream(IterableDataset):
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


class HFTextDataModule(pl.LightningDataModule):
    """C4 / WikiText / TinyStories (or a local text file) packed into LM windows.

    Parameters
    ----------
    dataset: ``"c4"``, ``"wikitext"``, ``"tinystories"`` (:data:`CORPORA`), another Hub id,
        or a local ``.txt`` file or folder of them (one document per line; offline; a line goes
        to validation by :func:`is_validation`).
    config: Hub configuration (default: the one in :data:`CORPORA`).
    tokenizer: ``"bytes"`` (vocabulary 256, no download) or a Hub tokenizer id; the paper
        uses ``google-t5/t5-base``. The model's ``vocab_size`` must cover it.
    seq_len: Tokens per example (windows hold ``seq_len + 1``).
    batch_size: Examples per batch.
    train_sequences: Training windows per epoch (``None``: until the split ends).
    val_sequences: Validation windows (the first ones of the validation split).
    streaming: Stream from the Hub instead of downloading the whole split.
    text_field: Column holding the text.
    shuffle_buffer, seed: Streaming shuffle of the training documents.
    num_workers: DataLoader workers.

    Examples
    --------
    >>> dm = HFTextDataModule("c4", seq_len=256)
    >>> dm.vocab_size, dm.hub_id
    (256, 'allenai/c4')
    """

    def __init__(
        self,
        dataset: str = "c4",
        config: str | None = None,
        tokenizer: str = "bytes",
        seq_len: int = 256,
        batch_size: int = 16,
        train_sequences: int | None = None,
        val_sequences: int = 256,
        streaming: bool = True,
        text_field: str = "text",
        shuffle_buffer: int = 10_000,
        seed: int = 0,
        num_workers: int = 0,
    ) -> None:
        super().__init__()
        if seq_len < 2 or batch_size < 1 or val_sequences < 1:
            raise ValueError("seq_len must be >= 2, batch_size >= 1 and val_sequences >= 1")
        if train_sequences is not None and train_sequences < 1:
            raise ValueError(f"train_sequences must be >= 1 or null, got {train_sequences}")
        self.save_hyperparameters()
        self.local = Path(dataset).expanduser().exists()
        if dataset in CORPORA:
            hub_id, default_cfg, self.train_split, self.val_split = CORPORA[dataset]
            self.hub_id, self.config = hub_id, config or default_cfg
        else:
            self.hub_id, self.config = dataset, config
            self.train_split, self.val_split = "train", "validation"
        self._tokenizer = ByteTokenizer() if tokenizer == "bytes" else None
        self.train_set = self.val_set = None

    @property
    def tokenizer(self):
        """The tokenizer (a Hub tokenizer is loaded on first use)."""
        if self._tokenizer is None:
            self._tokenizer = HubTokenizer(self.hparams.tokenizer)
        return self._tokenizer

    @property
    def vocab_size(self) -> int:
        """Vocabulary of the tokenizer (256 for bytes)."""
        return self.tokenizer.vocab_size

    def _load(self, split: str, streaming: bool):
        from icml26_shared.hub import load_dataset

        if self.local:
            path = Path(self.hparams.dataset).expanduser()
            files = sorted(str(p) for p in path.rglob("*.txt")) if path.is_dir() else [str(path)]
            if not files:
                raise ValueError(f"no .txt files under {str(path)!r}")
            docs = load_dataset("text", data_files={"data": files}, split="data",
                                streaming=streaming)  # fmt: skip
            want_val = split == self.val_split
            field = self.hparams.text_field
            return docs.filter(lambda row: is_validation(row[field]) == want_val)
        try:
            return load_dataset(self.hub_id, self.config, split=split, streaming=streaming,
                                offline_hint=OFFLINE_HINT)  # fmt: skip
        except RuntimeError as err:  # HubUnavailableError: one line through the CLI
            raise ConnectionError(str(err)) from None

    def setup(self, stage: str | None = None) -> None:  # noqa: D102
        if self.train_set is not None:
            return
        hp = self.hparams
        length = hp.seq_len + 1
        tok = self.tokenizer
        val_docs = self._load(self.val_split, hp.streaming)
        val = []
        for (w,) in _PackedStream(val_docs, hp.text_field, tok, length, hp.val_sequences):
            val.append(w)
        if not val:
            raise ValueError(f"validation split of {self.hub_id!r} is shorter than one window")
        self.val_set = TensorDataset(torch.stack(val))
        train_docs = self._load(self.train_split, hp.streaming)
        if hp.streaming and hasattr(train_docs, "shuffle") and not self.local:
            train_docs = train_docs.shuffle(seed=hp.seed, buffer_size=hp.shuffle_buffer)
        trainer = getattr(self, "trainer", None)
        if trainer is not None and trainer.world_size > 1:  # DDP / FSDP: one shard per rank
            from datasets.distributed import split_dataset_by_node

            train_docs = split_dataset_by_node(train_docs, trainer.global_rank, trainer.world_size)
        self.train_set = _PackedStream(train_docs, hp.text_field, tok, length, hp.train_sequences)

    def train_dataloader(self) -> DataLoader:  # noqa: D102
        return DataLoader(self.train_set, self.hparams.batch_size,
                          num_workers=self.hparams.num_workers)  # fmt: skip

    def val_dataloader(self) -> DataLoader:  # noqa: D102
        return DataLoader(self.val_set, self.hparams.batch_size)

    def test_dataloader(self) -> DataLoader:  # noqa: D102
        return self.val_dataloader()

    def predict_dataloader(self) -> DataLoader:  # noqa: D102
        return self.val_dataloader()
