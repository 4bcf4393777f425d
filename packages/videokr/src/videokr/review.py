"""Human-in-the-loop review: export review sheets, import accept / reject / edit decisions.

The paper validates generated examples with people at each pipeline step. A review sheet is a
CSV with one row per item (``id, question, options, answer, think, decision, new_question,
new_answer, new_think``); reviewers fill ``decision`` with ``accept``, ``reject`` or ``edit``.
:func:`apply_review` honours the decisions: rejected items are dropped, edited fields replace
the originals (re-validated by the schema), items the sheet does not mention are kept as they are.

>>> import tempfile, pathlib
>>> recs = [{"id": "a", "video_path": "v", "question": "q?", "options": ["A. x", "B. y"],
...          "problem_type": "multiple choice", "solution": "<answer>A</answer>", "think": "x"}]
>>> p = export_review(pathlib.Path(tempfile.mkdtemp()) / "s.csv", recs)
>>> apply_review(recs, {"a": {"decision": "edit", "new_answer": "B"}})[0]["solution"]
'<answer>B</answer>'
>>> apply_review(recs, {"a": {"decision": "reject"}})
[]
"""

from __future__ import annotations

import csv
import io
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from icml26_shared.results import atomic_write_text

from .schema import SchemaError, answer_of, normalise_example

COLUMNS = (
    "id",
    "question",
    "options",
    "answer",
    "think",
    "decision",
    "new_question",
    "new_answer",
    "new_think",
)
DECISIONS = ("accept", "reject", "edit", "")


def export_review(path: str | os.PathLike, records: Sequence[Mapping[str, Any]]) -> Path:
    """Write a review sheet (``decision`` left empty for the reviewer)."""
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=COLUMNS)
    w.writeheader()
    for r in records:
        w.writerow(
            {
                "id": r["id"],
                "question": r["question"],
                "options": " | ".join(r.get("options", [])),
                "answer": answer_of(r["solution"]),
                "think": r.get("think", ""),
            }
        )
    return atomic_write_text(path, buf.getvalue())


def read_review(path: str | os.PathLike) -> dict[str, dict[str, str]]:
    """Decisions by id; an unknown decision is an error naming the row."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"review sheet {str(path)!r} not found")
    out = {}
    with path.open(newline="", encoding="utf-8") as fh:
        for n, row in enumerate(csv.DictReader(fh), 2):
            decision = (row.get("decision") or "").strip().lower()
            if decision not in DECISIONS:
                raise SchemaError(
                    f"review sheet {path.name} line {n}: decision {decision!r} is not one of accept, reject, edit"
                )
            out[row["id"]] = {**row, "decision": decision}
    return out


def apply_review(
    records: Sequence[Mapping[str, Any]], decisions: Mapping[str, Mapping[str, str]]
) -> list[dict[str, Any]]:
    """Drop rejected items, apply edits (re-validated), keep the rest."""
    out = []
    for r in records:
        d = decisions.get(r["id"], {})
        decision = d.get("decision", "")
        if decision == "reject":
            continue
        rec = dict(r)
        if decision == "edit":
            if d.get("new_question"):
                rec["question"] = d["new_question"]
            if d.get("new_answer"):
                rec["solution"] = f"<answer>{d['new_answer']}</answer>"
            if d.get("new_think"):
                rec["think"] = d["new_think"]
            rec = normalise_example(rec)
        out.append(rec)
    return out
