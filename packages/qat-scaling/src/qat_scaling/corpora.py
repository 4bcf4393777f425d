"""Offline text for QAT runs: CPython's own sources, and a Markov chain with a known entropy.

Paper: "Scaling Law for Quantization-Aware Training", Chen et al., arXiv 2505.14302 (the
paper trains on web text; this package needs text that is on every machine).

1. Real text: the ``.py`` files of the running interpreter's standard library (tests
   excluded), byte tokens (vocabulary 256) or a BPE trained locally on the training split
   (:mod:`qat_scaling.bpe`), split into train / validation by a hash of each file's relative
   path; the Python version and a sha256 of the text are recorded -> :class:`StdlibCorpus`.
2. Synthetic text with a known floor: an order-k Markov chain whose next-token rows are
   Dirichlet draws with Zipf-shaped concentrations; its entropy rate
   ``H = -sum_s pi_s sum_a P(a|s) log P(a|s)`` is exact -> :class:`MarkovCorpus`.
3. Real path for users with internet: a Hugging Face text data set (FineWeb-Edu, DCLM,
   TinyStories, WikiText) as bytes or hub-tokenizer ids, through the workspace's
   offline-aware loaders -> :class:`HFTextCorpus`.
"""

from __future__ import annotations

import functools
import hashlib
import platform
import sysconfig
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

_EXCLUDED_DIRS = {"test", "tests", "idle_test", "site-packages", "dist-packages", "__pycache__"}


@functools.cache
def _stdlib_text(max_bytes: int, val_every: int) -> tuple[bytes, bytes, int]:
    root = Path(sysconfig.get_paths()["stdlib"])
    train, val = [], []
    n_files = 0
    size = 0
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root)
        if set(rel.parts[:-1]) & _EXCLUDED_DIRS:
            continue
        try:
            data = path.read_bytes()
        except OSError:
            continue
        digest = hashlib.sha256(str(rel.as_posix()).encode()).digest()
        (val if digest[0] % val_every == 0 else train).append(data)
        n_files += 1
        size += len(data)
        if size >= max_bytes:
            break
    return b"\n".join(train), b"\n".join(val), n_files


@dataclass
class StdlibCorpus:
    """Byte tokens of the running Python's standard-library sources (tests excluded).

    Files are visited in sorted order; a file goes to validation when the first byte of the
    sha256 of its relative path is divisible by ``val_every`` (a fixed split by file hash).

    Args:
        max_bytes: Stop reading files after this many bytes (the whole corpus is ~13 MB).
        val_every: About one file in ``val_every`` is held out.
        tokenizer: ``bytes`` (vocabulary 256) or ``bpe`` (a byte-level BPE trained on the
            training split only, :func:`qat_scaling.bpe.train_bpe`).
        bpe_vocab: Vocabulary size of the BPE.

    Examples:
        >>> c = StdlibCorpus(max_bytes=1_000_000)
        >>> c.vocab_size, c.train.dtype, len(c.val) > 1000
        (256, torch.int64, True)
    """

    max_bytes: int = 4_000_000
    val_every: int = 10
    vocab_size: int = 256
    tokenizer: str = "bytes"
    bpe_vocab: int = 1024

    def __post_init__(self) -> None:
        if self.tokenizer not in ("bytes", "bpe"):
            raise ValueError(f"tokenizer must be 'bytes' or 'bpe', got {self.tokenizer!r}")
        train, val, self.n_files = _stdlib_text(self.max_bytes, self.val_every)
        if not train or not val:
            raise ValueError(
                f"max_bytes={self.max_bytes} gives an empty train or validation split; raise it"
            )
        self.sha256 = hashlib.sha256(train + b"\0" + val).hexdigest()
        if self.tokenizer == "bpe":
            from .bpe import encode, train_bpe

            tok = train_bpe(train, self.bpe_vocab)
            self.vocab_size = tok.get_vocab_size()
            self.train, self.val = encode(tok, train), encode(tok, val)
            return
        self.train = torch.from_numpy(np.frombuffer(train, dtype=np.uint8).astype(np.int64))
        self.val = torch.from_numpy(np.frombuffer(val, dtype=np.uint8).astype(np.int64))

    def describe(self) -> str:
        """One line naming the source, its size and hash."""
        unit = "bytes" if self.tokenizer == "bytes" else f"BPE tokens (vocab {self.vocab_size})"
        return (
            f"CPython {platform.python_version()} stdlib sources, {self.n_files} files, "
            f"{len(self.train)} train / {len(self.val)} validation {unit}, "
            f"sha256 {self.sha256[:12]}"
        )


class MarkovCorpus:
    """An order-``k`` Markov chain over ``vocab`` tokens with an exact entropy rate.

    Each context's next-token distribution is a Dirichlet draw with concentration
    ``alpha * vocab * z / sum(z)`` where ``z_r = r^-zipf`` is a Zipf profile over a random
    permutation of the vocabulary.

    Args:
        order: k (the context length of the chain).
        vocab: Vocabulary size.
        alpha: Mean Dirichlet concentration per token (smaller = more peaked rows).
        zipf: Zipf exponent of the concentration profile.
        seed: Seed of the transition table.
        train_tokens, val_tokens: Lengths of the sampled train / validation streams.

    Examples:
        >>> m = MarkovCorpus(order=1, vocab=8, alpha=0.5, seed=0, train_tokens=2000, val_tokens=500)
        >>> bool(0 < m.entropy_rate() < np.log(8))
        True
        >>> m.train.shape, int(m.train.max()) < 8
        (torch.Size([2000]), True)
    """

    def __init__(
        self,
        order: int = 1,
        vocab: int = 64,
        alpha: float = 0.5,
        zipf: float = 1.0,
        seed: int = 0,
        train_tokens: int = 1_000_000,
        val_tokens: int = 100_000,
    ) -> None:
        if order < 1 or vocab < 2:
            raise ValueError(f"need order >= 1 and vocab >= 2, got order={order}, vocab={vocab}")
        self.order, self.vocab_size = order, vocab
        rng = np.random.default_rng(seed)
        n_states = vocab**order
        z = np.arange(1, vocab + 1, dtype=float) ** (-zipf)
        conc = alpha * vocab * z / z.sum()
        self.transitions = np.stack(
            [rng.dirichlet(conc[rng.permutation(vocab)]) for _ in range(n_states)]
        )
        self.stationary = self._stationary()
        self.train = torch.from_numpy(self.sample(train_tokens, seed + 1)).long()
        self.val = torch.from_numpy(self.sample(val_tokens, seed + 2)).long()

    def _next_state(self, state: np.ndarray, token: np.ndarray) -> np.ndarray:
        return (state * self.vocab_size + token) % (self.vocab_size**self.order)

    def _stationary(self, iters: int = 5000, tol: float = 1e-13) -> np.ndarray:
        n = len(self.transitions)
        pi = np.full(n, 1.0 / n)
        states = np.repeat(np.arange(n), self.vocab_size)
        nxt = self._next_state(states, np.tile(np.arange(self.vocab_size), n))
        for _ in range(iters):
            new = np.bincount(nxt, weights=(pi[:, None] * self.transitions).ravel(), minlength=n)
            if np.abs(new - pi).sum() < tol:
                return new
            pi = new
        return pi

    def entropy_rate(self) -> float:
        """Exact entropy rate in nats per token (the loss floor of a perfect model)."""
        p = self.transitions
        with np.errstate(divide="ignore", invalid="ignore"):
            h_rows = -np.where(p > 0, p * np.log(p), 0.0).sum(axis=1)
        return float(self.stationary @ h_rows)

    def sample(self, n_tokens: int, seed: int, chains: int = 256) -> np.ndarray:
        """``n_tokens`` tokens from ``chains`` independent stationary chains, concatenated."""
        rng = np.random.default_rng(seed)
        chains = max(1, min(chains, n_tokens))
        length = -(-n_tokens // chains)
        cdf = np.cumsum(self.transitions, axis=1)
        cdf[:, -1] = 1.0
        state = rng.choice(len(self.stationary), size=chains, p=self.stationary)
        out = np.empty((chains, length), dtype=np.int64)
        for t in range(length):
            u = rng.random(chains)[:, None]
            token = (u > cdf[state]).sum(axis=1)
            out[:, t] = token
            state = self._next_state(state, token)
        return out.reshape(-1)[:n_tokens]

    def nll(self, tokens: np.ndarray, chains: int = 256) -> float:
        """Mean -log P(x_t | x_{t-k..t-1}) under the true chain (for a stream from :meth:`sample`)."""
        tokens = np.asarray(tokens)
        length = len(tokens) // chains
        seq = tokens[: chains * length].reshape(chains, length)
        k = self.order
        state = np.zeros(chains, dtype=np.int64)
        for j in range(k):
            state = self._next_state(state, seq[:, j])
        total, count = 0.0, 0
        for t in range(k, length):
            total -= np.log(self.transitions[state, seq[:, t]]).sum()
            count += chains
            state = self._next_state(state, seq[:, t])
        return total / count

    def describe(self) -> str:
        """One line naming the chain and its entropy floor."""
        return (
            f"order-{self.order} Markov chain, vocab {self.vocab_size}, "
            f"entropy rate {self.entropy_rate():.4f} nats/token"
        )


class HFTextCorpus:
    """A Hugging Face text data set as bytes or hub-tokenizer ids (the real-scale path).

    Needs ``datasets`` (the ``bench`` extra). The data set and the tokenizer go through the
    workspace's offline-aware loaders: offline, only the local cache (or a local path) is
    tried, and a miss is one clear ``ConnectionError`` naming the offline alternative.

    Args:
        dataset: Hub id (``roneneldan/TinyStories``, ``HuggingFaceFW/fineweb-edu``,
            ``mlfoundations/dclm-baseline-1.0``, ``Salesforce/wikitext``) or a local folder
            of text files.
        config: Data-set config (``sample-10BT``, ``wikitext-103-raw-v1``, ...).
        field: Text column.
        max_bytes: Bytes to read (streamed).
        val_fraction: Tail fraction of the text held out for validation.
        tokenizer: ``bytes`` (vocabulary 256) or a hub tokenizer id / local folder
            (``gpt2``, ``EleutherAI/gpt-neox-20b``), loaded with ``AutoTokenizer``.

    Examples:
        >>> HFTextCorpus.__name__
        'HFTextCorpus'
    """

    def __init__(
        self,
        dataset: str = "roneneldan/TinyStories",
        config: str | None = None,
        field: str = "text",
        max_bytes: int = 20_000_000,
        val_fraction: float = 0.05,
        tokenizer: str = "bytes",
    ) -> None:
        from icml26_shared.hub import HubUnavailableError, from_pretrained, load_dataset

        if not 0 < val_fraction < 1:
            raise ValueError(f"val_fraction must be in (0, 1), got {val_fraction}")
        try:
            data = load_dataset(
                dataset, config, split="train", streaming=True, offline_hint="use corpus=stdlib"
            )
            tok = None
            if tokenizer != "bytes":
                from transformers import AutoTokenizer

                tok = from_pretrained(
                    AutoTokenizer, tokenizer, offline_hint="use tokenizer='bytes'"
                )
        except HubUnavailableError as err:
            raise ConnectionError(str(err)) from None
        chunks, size = [], 0
        for row in data:
            text = row[field].encode("utf-8")
            chunks.append(text)
            size += len(text)
            if size >= max_bytes:
                break
        raw = b"\n".join(chunks)
        cut = int(len(raw) * (1 - val_fraction))
        if tok is None:
            self.vocab_size = 256
            self.train = torch.from_numpy(np.frombuffer(raw[:cut], np.uint8).astype(np.int64))
            self.val = torch.from_numpy(np.frombuffer(raw[cut:], np.uint8).astype(np.int64))
        else:
            self.vocab_size = len(tok)
            self.train, self.val = (
                torch.tensor(
                    tok(part.decode("utf-8", "replace"), add_special_tokens=False)["input_ids"],
                    dtype=torch.int64,
                )
                for part in (raw[:cut], raw[cut:])
            )
        self.name, self.tokenizer = dataset, tokenizer

    def describe(self) -> str:
        """One line naming the data set and the tokens."""
        unit = "bytes" if self.tokenizer == "bytes" else f"{self.tokenizer} tokens"
        return f"{self.name} ({unit}), {len(self.train)} train / {len(self.val)} validation"


class TextFileCorpus:
    """Your own text, read as bytes (vocabulary 256): one file, or every file of a folder.

    The tail ``val_fraction`` of the text (files in sorted name order, joined by newlines) is
    held out for validation. No network and no extra dependency.

    Args:
        path: A text file or a folder (read recursively; hidden files skipped).
        max_bytes: Read at most this many bytes.
        val_fraction: Tail fraction held out for validation.

    Examples:
        >>> import tempfile, pathlib
        >>> f = pathlib.Path(tempfile.mkdtemp()) / "a.txt"
        >>> _ = f.write_text("hello world\\n" * 100)
        >>> c = TextFileCorpus(str(f), val_fraction=0.1)
        >>> c.vocab_size, len(c.train) + len(c.val)
        (256, 1200)
    """

    def __init__(self, path: str, max_bytes: int = 50_000_000, val_fraction: float = 0.1) -> None:
        root = Path(path)
        if not root.exists():
            raise FileNotFoundError(f"corpus path {str(path)!r} does not exist")
        if not 0 < val_fraction < 1:
            raise ValueError(f"val_fraction must be in (0, 1), got {val_fraction}")
        files = (
            [root]
            if root.is_file()
            else sorted(
                p
                for p in root.rglob("*")
                if p.is_file() and not any(part.startswith(".") for part in p.parts)
            )
        )
        chunks, size = [], 0
        for f in files:
            data = f.read_bytes()
            chunks.append(data)
            size += len(data) + 1
            if size >= max_bytes:
                break
        raw = b"\n".join(chunks)[:max_bytes]
        if len(raw) < 100:
            raise ValueError(f"corpus path {str(path)!r} holds {len(raw)} bytes; need >= 100")
        cut = int(len(raw) * (1 - val_fraction))
        self.vocab_size = 256
        self.train = torch.from_numpy(np.frombuffer(raw[:cut], np.uint8).astype(np.int64))
        self.val = torch.from_numpy(np.frombuffer(raw[cut:], np.uint8).astype(np.int64))
        self.sha256 = hashlib.sha256(raw).hexdigest()
        self.name, self.n_files = root.name, len(files)

    def describe(self) -> str:
        """One line naming the text and its split."""
        return (
            f"text {self.name} ({self.n_files} file(s), bytes), {len(self.train)} train / "
            f"{len(self.val)} validation bytes, sha256 {self.sha256[:12]}"
        )


def build_corpus(name: str, **kwargs):
    """``stdlib``, ``markov``, ``text`` or ``hf`` (keyword arguments go to the corpus class)."""
    if name == "stdlib":
        return StdlibCorpus(**kwargs)
    if name == "markov":
        return MarkovCorpus(**kwargs)
    if name == "text":
        if "path" not in kwargs:
            raise ValueError("corpus 'text' needs corpus_kwargs: {path: FILE_OR_FOLDER}")
        return TextFileCorpus(**kwargs)
    if name == "hf":
        return HFTextCorpus(**kwargs)
    raise ValueError(f"unknown corpus {name!r}; choose from stdlib, markov, text, hf")
