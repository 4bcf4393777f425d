"""A user's own data: CSV/ARFF files as ordered streams, and the saved-model file.

Paper: Amoukou, Mishra & Veloso, ICML 2026 (arXiv:2605.31239) evaluates on real streams
read row by row in file order; this module is the package's entry point for such files:

- :func:`read_table`: a CSV (header row) or ARFF file -> :class:`~.streams.Stream` in file
  order, the target column by name (default: the last), features numeric; ARFF nominal
  features become their integer codes (scipy's ARFF reader); empty cells are missing (NaN);
- :func:`save_model` / :func:`load_model`: a fitted learner with its feature names, target
  name and label names, pickled and written atomically (an interrupted save leaves the old
  file or none, never a truncated one).
"""

from __future__ import annotations

import csv
import math
import pickle
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .streams import Stream

__all__ = ["SavedModel", "load_model", "read_features", "read_table", "save_model"]

FORMAT = "anytime-hoeffding-model/1"


class TableError(ValueError):
    """A file that cannot be read as a table of features and labels (one-line message)."""


def _number(v: str, path: Path, line: int, col: str) -> float:
    v = v.strip()
    if v == "" or v == "?":
        return math.nan
    try:
        return float(v)
    except ValueError:
        raise TableError(
            f"{path}: line {line}, column {col!r}: non-numeric feature value {v!r} "
            "(features must be numbers; encode categories as integers)"
        ) from None


def _read_csv(path: Path) -> tuple[list[str], list[list[str]]]:
    try:
        with open(path, newline="") as fh:
            rows = [r for r in csv.reader(fh) if r]
    except FileNotFoundError:
        raise TableError(f"{path}: no such file") from None
    except (UnicodeDecodeError, csv.Error) as exc:
        raise TableError(f"{path}: not a readable CSV file ({exc})") from None
    if len(rows) < 2:
        raise TableError(f"{path}: expected a header row and at least one data row")
    header, body = [h.strip() for h in rows[0]], rows[1:]
    for i, r in enumerate(body, start=2):
        if len(r) != len(header):
            raise TableError(
                f"{path}: line {i} has {len(r)} fields but the header has {len(header)}"
            )
    return header, body


def _read_arff(path: Path) -> tuple[list[str], list[list[str]], dict[str, list[str]]]:
    from scipy.io import arff

    try:
        data, meta = arff.loadarff(str(path))
    except FileNotFoundError:
        raise TableError(f"{path}: no such file") from None
    except (ValueError, NotImplementedError, arff.ParseArffError) as exc:
        raise TableError(f"{path}: not a readable ARFF file ({exc})") from None
    header = list(meta.names())
    body = []
    for row in data:
        out = []
        for name, v in zip(header, row, strict=True):
            kind, values = meta[name]
            if kind == "nominal":
                s = v.decode() if isinstance(v, bytes) else str(v)
                out.append(s)
            else:
                out.append(repr(float(v)))
        body.append(out)
    if not body:
        raise TableError(f"{path}: the ARFF file has no data rows")
    nominal = {n: list(meta[n][1]) for n in header if meta[n][0] == "nominal"}
    return header, body, nominal


@dataclass
class Table:
    """Features ``X (n, d)``, labels as strings, and the column names."""

    X: np.ndarray
    labels: list[str] | None
    features: list[str]
    target: str | None
    categories: dict[str, list[str]] = field(default_factory=dict)


def _load(path: Path, target: str | None, need_target: bool, features: list[str] | None,
          categories: dict[str, list[str]] | None = None) -> Table:  # fmt: skip
    path = Path(path)
    suffix = path.suffix.lower()
    nominal: dict[str, list[str]] = {}
    if suffix == ".arff":
        header, body, nominal = _read_arff(path)
    else:
        header, body = _read_csv(path)
    nominal = {**nominal, **(categories or {})}
    if target is None and need_target:
        target = header[-1]
    if target is not None and target not in header:
        if need_target:
            raise TableError(f"{path}: no column named {target!r}; columns are {header}")
        target = None
    feats = features if features is not None else [h for h in header if h != target]
    missing = [f for f in feats if f not in header]
    if missing:
        raise TableError(
            f"{path}: missing feature columns {missing[:5]} (the model was fitted on {feats})"
        )
    if not feats:
        raise TableError(f"{path}: no feature columns besides the target {target!r}")
    idx = [header.index(f) for f in feats]
    X = np.empty((len(body), len(feats)), np.float64)
    for i, r in enumerate(body):
        for c, (j, name) in enumerate(zip(idx, feats, strict=True)):
            if name in nominal:
                v = r[j].strip()
                X[i, c] = nominal[name].index(v) if v in nominal[name] else math.nan
            else:
                X[i, c] = _number(r[j], path, i + 2, name)
    labels = None
    if target is not None:
        labels = [r[header.index(target)].strip() for r in body]
    return Table(X, labels, feats, target, {k: v for k, v in nominal.items() if k in feats})


def read_table(path: str | Path, target: str | None = None) -> tuple[Stream, Table]:
    """Read a CSV (header row) or ARFF file as a stream in file order.

    Args:
        path: The file; ``.arff`` is read as ARFF, anything else as CSV.
        target: Label column (default: the last column).

    Returns:
        ``(stream, table)``: labels are coded ``0..K-1`` in sorted order of their text
        (``table.labels`` keeps the text).

    >>> import tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "t.csv")
    >>> _ = open(p, "w").write("a,b,y\\n1,2,no\\n3,,yes\\n")
    >>> s, t = read_table(p)
    >>> s.X.tolist(), s.y.tolist(), t.features
    ([[1.0, 2.0], [3.0, nan]], [0, 1], ['a', 'b'])
    """
    t = _load(Path(path), target, True, None)
    names = sorted(set(t.labels))
    code = {v: k for k, v in enumerate(names)}
    y = np.array([code[v] for v in t.labels], np.int64)
    return Stream(Path(path).stem, t.X, y, len(names)), t


def read_features(path: str | Path, features: list[str], target: str | None,
                  categories: dict[str, list[str]] | None = None) -> Table:  # fmt: skip
    """Read the ``features`` columns of a file (and ``target`` when the file has it)."""
    return _load(Path(path), target, False, features, categories)


@dataclass
class SavedModel:
    """A fitted learner and what is needed to apply it to a new file."""

    model: Any
    features: list[str]
    target: str
    label_names: list[str]
    categories: dict[str, list[str]] = field(default_factory=dict)
    source: str = ""
    format: str = FORMAT


def save_model(path: str | Path, saved: SavedModel) -> Path:
    """Pickle ``saved`` to ``path`` atomically."""
    from icml26_shared.results import atomic_write_bytes

    return atomic_write_bytes(Path(path), pickle.dumps(saved, protocol=pickle.HIGHEST_PROTOCOL))


def load_model(path: str | Path) -> SavedModel:
    """Load a model saved by :func:`save_model` (a clear error for anything else)."""
    path = Path(path)
    try:
        with open(path, "rb") as fh:
            saved = pickle.load(fh)
    except FileNotFoundError:
        raise TableError(f"{path}: no such model file") from None
    except (pickle.UnpicklingError, EOFError, AttributeError, ImportError, ValueError) as exc:
        raise TableError(
            f"{path}: not a model saved by 'anytime-hoeffding evaluate --save' ({exc})"
        ) from None
    if not isinstance(saved, SavedModel) or saved.format != FORMAT:
        raise TableError(f"{path}: not a model saved by 'anytime-hoeffding evaluate --save'")
    return saved
