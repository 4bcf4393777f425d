"""The VideoKR example schema: a versioned ``datasets.Features``, validation and normalisation.

Paper Sec. 3 (corpus) and the released JSONL files define one record per question about one video:

* :data:`FEATURES` -- the ``datasets.Features`` of a record (:data:`SCHEMA_VERSION`).
* :func:`normalise_problem_type` -- ``"multiple_choice"``, ``"MC"``, ... -> one of :data:`PROBLEM_TYPES`.
* :func:`normalise_options` -- option strings -> ``"A. text"`` with letters A..J (:data:`OPTION_LETTERS`).
* :func:`normalise_example` -- one record -> the canonical record (raises :class:`SchemaError`).
* :func:`validate_corpus` -- every record plus corpus-level checks (duplicate ids, video files).
* :func:`resolve_video` -- a record's ``video_path`` under the video root (``VIDEOKR_VIDEO_ROOT``).

Every error names the record id and the field, in one line.

>>> ex = normalise_example({"id": "q1", "video_path": "v/1.npy", "question": " Which way? ",
...     "options": ["left", "right"], "problem_type": "multiple_choice", "solution": "B"})
>>> ex["options"], ex["problem_type"], ex["solution"], ex["question"]
(['A. left', 'B. right'], 'multiple choice', '<answer>B</answer>', 'Which way?')
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

SCHEMA_VERSION = "1.0"
VIDEO_ROOT_ENV = "VIDEOKR_VIDEO_ROOT"
OPTION_LETTERS = "ABCDEFGHIJ"  # the released data uses at most ten options (A-J)
PROBLEM_TYPES = ("multiple choice", "open-ended", "numerical")
SKILLS = ("VidR", "KnowVid", "KnowVidR")

_PROBLEM_ALIASES = {
    "multiple choice": "multiple choice",
    "multiple_choice": "multiple choice",
    "multiple-choice": "multiple choice",
    "multiplechoice": "multiple choice",
    "mc": "multiple choice",
    "mcq": "multiple choice",
    "open-ended": "open-ended",
    "open ended": "open-ended",
    "open_ended": "open-ended",
    "openended": "open-ended",
    "free-form": "open-ended",
    "free form": "open-ended",
    "numerical": "numerical",
    "numeric": "numerical",
    "number": "numerical",
}
_OPTION_PREFIX = re.compile(r"^\s*\(?([A-Za-z])\s*[.):]\s*(.*)$", re.DOTALL)
_ANSWER = re.compile(r"<answer>(.*?)</answer>", re.DOTALL)
_REQUIRED = ("id", "video_path", "question", "problem_type", "solution")
_TEXT_FIELDS = ("think", "skill", "subject", "dataset")


class SchemaError(ValueError):
    """A record that does not fit the schema; the message names the record and the field."""


def features() -> Any:
    """The ``datasets.Features`` of a VideoKR record (schema :data:`SCHEMA_VERSION`).

    >>> sorted(features())[:3]
    ['dataset', 'id', 'options']
    """
    from datasets import Features, Sequence, Value

    return Features(
        {
            "id": Value("string"),
            "video_path": Value("string"),
            "question": Value("string"),
            "options": Sequence(Value("string")),
            "problem_type": Value("string"),
            "solution": Value("string"),
            "think": Value("string"),
            "skill": Value("string"),
            "subject": Value("string"),
            "dataset": Value("string"),
        }
    )


FIELDS = ("id", "video_path", "question", "options", "problem_type", "solution", *_TEXT_FIELDS)


def _where(rec: Mapping[str, Any]) -> str:
    rid = rec.get("id") if isinstance(rec, Mapping) else None
    return f"record {rid!r}" if rid not in (None, "") else "record without id"


def normalise_problem_type(value: Any, where: str = "record") -> str:
    """Map the spellings found in the released files onto :data:`PROBLEM_TYPES`.

    >>> normalise_problem_type("Multiple_Choice"), normalise_problem_type("open ended")
    ('multiple choice', 'open-ended')
    """
    key = " ".join(str(value).strip().lower().split())
    if key not in _PROBLEM_ALIASES:
        raise SchemaError(
            f"{where}: field 'problem_type': unknown problem type {value!r}; "
            f"expected one of {', '.join(PROBLEM_TYPES)}"
        )
    return _PROBLEM_ALIASES[key]


def normalise_options(options: Any, where: str = "record") -> list[str]:
    """``["x", "y"]`` or ``["A. x", "B) y"]`` -> ``["A. x", "B. y"]``; letters must run A, B, ... <= J.

    >>> normalise_options(["(A) red", "B: blue"])
    ['A. red', 'B. blue']
    """
    if isinstance(options, str) or not isinstance(options, Iterable):
        raise SchemaError(f"{where}: field 'options': expected a list of strings, got {options!r}")
    options = list(options)
    if len(options) > len(OPTION_LETTERS):
        raise SchemaError(
            f"{where}: field 'options': {len(options)} options, but option letters stop at "
            f"{OPTION_LETTERS[-1]} ({len(OPTION_LETTERS)} options at most)"
        )
    out = []
    for i, opt in enumerate(options):
        if not isinstance(opt, str) or not opt.strip():
            raise SchemaError(f"{where}: field 'options': option {i} is empty or not a string")
        m = _OPTION_PREFIX.match(opt)
        expected = OPTION_LETTERS[i]
        if m and len(opt.strip()) > 1:
            letter, text = m.group(1).upper(), m.group(2).strip()
            if letter not in OPTION_LETTERS:
                raise SchemaError(
                    f"{where}: field 'options': option letter {letter!r} is beyond the supported "
                    f"range A-{OPTION_LETTERS[-1]}"
                )
            if letter != expected:
                raise SchemaError(
                    f"{where}: field 'options': option {i} has letter {letter!r}, expected {expected!r}"
                )
        else:
            text = opt.strip()
        if not text:
            raise SchemaError(f"{where}: field 'options': option {expected} has no text")
        out.append(f"{expected}. {text}")
    return out


def answer_of(solution: str) -> str:
    """Content of the ``<answer>`` block of a solution (stripped), else the whole text."""
    m = _ANSWER.search(solution)
    return (m.group(1) if m else solution).strip()


def normalise_example(record: Mapping[str, Any]) -> dict[str, Any]:
    """Check one record and return it in canonical form (all :data:`FIELDS`, normalised).

    Normalisation: whitespace stripped, ``problem_type`` canonical, options lettered ``A. ``,
    the solution wrapped in ``<answer>`` tags (a multiple-choice answer upper-cased to its
    letter), missing optional text fields set to ``""``.
    """
    if not isinstance(record, Mapping):
        raise SchemaError(f"record {record!r}: expected a mapping of fields")
    where = _where(record)
    for key in _REQUIRED:
        if key not in record or record[key] is None:
            raise SchemaError(f"{where}: field {key!r} is missing")
    rid = str(record["id"]).strip()
    if not rid:
        raise SchemaError(f"{where}: field 'id' is empty")
    question = str(record["question"]).strip()
    if not question:
        raise SchemaError(f"{where}: field 'question' is empty")
    video = str(record["video_path"]).strip()
    if not video:
        raise SchemaError(f"{where}: field 'video_path' is empty")
    ptype = normalise_problem_type(record["problem_type"], where)
    options = normalise_options(record.get("options") or [], where)
    answer = answer_of(str(record["solution"]))
    if not answer:
        raise SchemaError(f"{where}: field 'solution': the answer is empty")
    if ptype == "multiple choice":
        if len(options) < 2:
            raise SchemaError(
                f"{where}: field 'options': a multiple-choice question needs at least 2 options"
            )
        letter = answer.upper().rstrip(".").strip()
        letters = OPTION_LETTERS[: len(options)]
        if letter not in letters:
            texts = [o[3:] for o in options]
            if answer in texts:  # answer given as the option text
                letter = letters[texts.index(answer)]
            else:
                raise SchemaError(
                    f"{where}: field 'solution': answer {answer!r} is not among the options "
                    f"{', '.join(letters)}"
                )
        answer = letter
    elif ptype == "numerical":
        try:
            float(answer.replace(",", ""))
        except ValueError:
            raise SchemaError(
                f"{where}: field 'solution': numerical answer {answer!r} is not a number"
            ) from None
    out = {
        "id": rid,
        "video_path": video,
        "question": question,
        "options": options,
        "problem_type": ptype,
        "solution": f"<answer>{answer}</answer>",
    }
    for key in _TEXT_FIELDS:
        value = record.get(key)
        out[key] = "" if value is None else str(value).strip()
    if out["skill"] and out["skill"] not in SKILLS:
        raise SchemaError(
            f"{where}: field 'skill': unknown skill {out['skill']!r}; expected one of {', '.join(SKILLS)}"
        )
    return out


def video_root(root: str | os.PathLike | None = None) -> Path | None:
    """The video root: ``root`` if given, else ``$VIDEOKR_VIDEO_ROOT``, else ``None``."""
    if root is not None:
        return Path(root)
    env = os.environ.get(VIDEO_ROOT_ENV)
    return Path(env) if env else None


def resolve_video(record: Mapping[str, Any], root: str | os.PathLike | None = None) -> Path:
    """Path of ``record``'s video; a missing file raises ``FileNotFoundError`` naming the root."""
    base = video_root(root)
    rel = Path(str(record["video_path"]))
    path = rel if rel.is_absolute() or base is None else base / rel
    if not path.is_file():
        setting = (
            f"video root {str(base)!r} (from --video_root or ${VIDEO_ROOT_ENV})"
            if base is not None
            else f"no video root set (pass --video_root or set ${VIDEO_ROOT_ENV})"
        )
        raise FileNotFoundError(f"{_where(record)}: video file {str(path)!r} not found; {setting}")
    return path


def validate_corpus(
    records: Iterable[Mapping[str, Any]],
    video_root: str | os.PathLike | None = None,
    check_videos: bool = False,
) -> list[dict[str, Any]]:
    """Normalise every record; reject duplicate ids and (with ``check_videos``) missing videos."""
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    for rec in records:
        ex = normalise_example(rec)
        if ex["id"] in seen:
            raise SchemaError(f"record {ex['id']!r}: field 'id': duplicate id in the corpus")
        seen.add(ex["id"])
        if check_videos:
            resolve_video(ex, video_root)
        out.append(ex)
    return out
