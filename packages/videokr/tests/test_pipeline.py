"""The pipeline is resumable and idempotent, and honours review-sheet decisions."""

import csv
import json

from videokr.corpus import read_jsonl
from videokr.pipeline import build_corpus
from videokr.review import export_review


def _ids(path):
    return [r["id"] for r in read_jsonl(path)]


def test_rerun_is_idempotent_and_resumes(tmp_path):
    out = tmp_path / "c"
    build_corpus(out, n_videos=24, seed=0)
    first = {p.name: p.read_bytes() for p in (out / "stages").iterdir()}
    train = _ids(out / "train.jsonl")
    assert len(train) == len(set(train)) and train
    mtimes = {p.name: p.stat().st_mtime_ns for p in (out / "stages").iterdir()}
    build_corpus(out, n_videos=24, seed=0)  # finished stages are skipped, nothing appended
    assert {p.name: p.stat().st_mtime_ns for p in (out / "stages").iterdir()} == mtimes
    assert _ids(out / "train.jsonl") == train
    # an interrupted run: a lost stage file is recomputed, identically
    lost = sorted((out / "stages").glob("train_0[4-7]_*.jsonl"))[0]
    lost.unlink()
    build_corpus(out, n_videos=24, seed=0)
    assert {p.name: p.read_bytes() for p in (out / "stages").iterdir()} == first
    log = json.loads((out / "pipeline.json").read_text())
    assert any("removed" in e and e["removed"] for e in log.values() if isinstance(e, dict))


def test_review_decisions_are_honoured(tmp_path):
    out = tmp_path / "c"
    build_corpus(out, n_videos=20, seed=1)
    items = read_jsonl(out / "eval.jsonl")
    sheet = tmp_path / "sheet.csv"
    export_review(sheet, items)
    rows = list(csv.DictReader(sheet.open()))
    rows[0]["decision"] = "reject"
    rows[1].update(decision="edit", new_question="edited question ?")
    rows[2]["decision"] = "accept"
    with sheet.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    build_corpus(out, n_videos=20, seed=1, review=sheet)
    after = {r["id"]: r for r in read_jsonl(out / "eval.jsonl")}
    assert rows[0]["id"] not in after
    assert after[rows[1]["id"]]["question"] == "edited question ?"
    assert len(after) == len(items) - 1
