"""Loading and writing VideoKR corpora: released JSONL files (Hub) and local corpora.

* :data:`HUB_FILES` -- the released files: ``minuzero/VideoKR-Train`` (COT-201K for SFT,
  RL-114K for GRPO) and ``minuzero/VideoKR-Eval``.
* :func:`load_hub` -- one released split through ``datasets`` (offline-aware, via
  :func:`icml26_shared.hub.load_dataset`), validated and normalised.
* :func:`load_local` -- a local ``.jsonl`` corpus, validated (:func:`to_dataset` makes it a
  ``datasets.Dataset``).
* :func:`to_dataset` / :func:`write_jsonl` -- records -> ``datasets.Dataset`` with
  :func:`videokr.schema.features`, or a JSONL file (atomically).

>>> import tempfile, pathlib
>>> p = pathlib.Path(tempfile.mkdtemp()) / "c.jsonl"
>>> _ = write_jsonl(p, [{"id": "a", "video_path": "v.npy", "question": "Q?",
...     "options": ["x", "y"], "problem_type": "mc", "solution": "A"}])
>>> load_local(p)[0]["solution"]
'<answer>A</answer>'
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from icml26_shared.hub import load_dataset
from icml26_shared.results import atomic_write_text

from .schema import FIELDS, SCHEMA_VERSION, SchemaError, features, validate_corpus

HUB_FILES = {
    "cot": ("minuzero/VideoKR-Train", "VideoKR-COT-201K.jsonl"),
    "rl": ("minuzero/VideoKR-Train", "VideoKR-RL-114K.jsonl"),
    "eval": ("minuzero/VideoKR-Eval", "VideoKR_eval.jsonl"),
}
OFFLINE_HINT = "use a local corpus (videokr synth --out DIR, then --data DIR/eval.jsonl)"


def _records(ds: Any) -> list[dict[str, Any]]:
    return [dict(row) for row in ds]


def load_hub(
    split: str = "eval",
    video_root: str | os.PathLike | None = None,
    check_videos: bool = False,
    limit: int | None = None,
) -> list[dict[str, Any]]:
    """Load one released split (``cot``, ``rl`` or ``eval``) from the Hub, validated.

    Offline and not cached: :class:`icml26_shared.hub.HubUnavailableError` naming the
    dataset and the local alternative, within seconds.
    """
    if split not in HUB_FILES:
        raise ValueError(f"unknown split {split!r}; choose from {', '.join(HUB_FILES)}")
    repo, filename = HUB_FILES[split]
    ds = load_dataset(repo, data_files=filename, split="train", offline_hint=OFFLINE_HINT)
    rows = _records(ds if limit is None else ds.select(range(min(limit, len(ds)))))
    return validate_corpus(rows, video_root=video_root, check_videos=check_videos)


def load_local(
    path: str | os.PathLike,
    video_root: str | os.PathLike | None = None,
    check_videos: bool = False,
) -> list[dict[str, Any]]:
    """Load a local JSONL corpus and validate it (a bad line is named by its number)."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"corpus file {str(path)!r} not found")
    return validate_corpus(read_jsonl(path), video_root=video_root, check_videos=check_videos)


def to_dataset(records: Iterable[Mapping[str, Any]]) -> Any:
    """Validated records as a ``datasets.Dataset`` with the versioned features."""
    from datasets import Dataset, DatasetInfo

    rows = validate_corpus(records)
    feats = features()
    info = DatasetInfo(
        description=f"VideoKR records, videokr schema {SCHEMA_VERSION}",
        version=f"{SCHEMA_VERSION}.0",  # datasets wants MAJOR.MINOR.PATCH
        features=feats,
    )
    return Dataset.from_list([{k: r[k] for k in FIELDS} for r in rows], features=feats, info=info)


def write_jsonl(path: str | os.PathLike, records: Iterable[Mapping[str, Any]]) -> Path:
    """Write records as JSON lines (atomically); returns the path."""
    text = "".join(json.dumps(dict(r), sort_keys=True) + "\n" for r in records)
    return atomic_write_text(path, text)


def read_jsonl(path: str | os.PathLike) -> list[dict[str, Any]]:
    """Read JSON lines written by :func:`write_jsonl` (no validation: pipeline stages)."""
    path = Path(path)
    out = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise SchemaError(f"{path}: line {n} is not JSON ({exc.msg})") from None
    return out
