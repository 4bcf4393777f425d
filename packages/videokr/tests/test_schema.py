"""Schema round trip, normalisation, and one clear error per bad-input case of the issue."""

import json

import pytest
from icml26_shared.contract import assert_one_line_error
from videokr.cli import main
from videokr.corpus import load_local, to_dataset, write_jsonl
from videokr.manifest import Manifest
from videokr.schema import (
    SCHEMA_VERSION,
    SchemaError,
    features,
    normalise_example,
    resolve_video,
    validate_corpus,
)

GOOD = {
    "id": "q1",
    "video_path": "videos/a.npy",
    "question": "  Which way does it move? ",
    "options": ["(A) left", "B: right", "C. up"],
    "problem_type": "Multiple_Choice",
    "solution": "<answer> b </answer>",
    "think": "it moves right",
    "skill": "VidR",
    "subject": "Kinematics",
    "dataset": "SynthKR",
}


def test_normalisation():
    ex = normalise_example(GOOD)
    assert ex["question"] == "Which way does it move?"
    assert ex["options"] == ["A. left", "B. right", "C. up"]
    assert ex["problem_type"] == "multiple choice"
    assert ex["solution"] == "<answer>B</answer>"
    assert normalise_example({**GOOD, "solution": "right"})["solution"] == "<answer>B</answer>"
    assert normalise_example(ex) == ex  # idempotent
    oe = normalise_example({**GOOD, "problem_type": "open ended", "options": [], "solution": "x y"})
    assert oe["problem_type"] == "open-ended" and oe["options"] == []


def test_round_trip_through_datasets(tmp_path):
    ds = to_dataset([GOOD, {**GOOD, "id": "q2"}])
    assert set(ds.features) == set(features()) and SCHEMA_VERSION == "1.0"
    assert str(ds.info.version) == "1.0.0" and "schema 1.0" in ds.info.description
    path = write_jsonl(tmp_path / "c.jsonl", list(ds))
    back = load_local(path)
    assert back == [normalise_example(GOOD), normalise_example({**GOOD, "id": "q2"})]


@pytest.mark.parametrize(
    ("change", "match"),
    [
        ({"options": [f"opt{i}" for i in range(11)]}, "option letters stop at J"),
        ({"options": ["A. x", "K. y"]}, "beyond the supported range"),
        ({"problem_type": "essay"}, "unknown problem type 'essay'"),
        ({"solution": "<answer>D</answer>"}, "answer 'D' is not among the options"),
        ({"question": "   "}, "field 'question' is empty"),
        ({"solution": "<answer> </answer>"}, "the answer is empty"),
        ({"skill": "Cooking"}, "unknown skill"),
    ],
)
def test_bad_records_name_record_and_field(change, match):
    with pytest.raises(SchemaError, match=match) as err:
        normalise_example({**GOOD, **change})
    assert "record 'q1'" in str(err.value) and "\n" not in str(err.value)


def test_duplicate_ids():
    with pytest.raises(SchemaError, match="record 'q1': field 'id': duplicate id"):
        validate_corpus([GOOD, GOOD])


def test_missing_video_names_path_and_root(tmp_path, monkeypatch):
    monkeypatch.delenv("VIDEOKR_VIDEO_ROOT", raising=False)
    with pytest.raises(FileNotFoundError, match="no video root set.*VIDEOKR_VIDEO_ROOT"):
        resolve_video(GOOD)
    monkeypatch.setenv("VIDEOKR_VIDEO_ROOT", str(tmp_path))
    with pytest.raises(FileNotFoundError) as err:
        resolve_video(GOOD)
    assert str(tmp_path / "videos/a.npy") in str(err.value) and "VIDEOKR_VIDEO_ROOT" in str(
        err.value
    )
    (tmp_path / "videos").mkdir()
    (tmp_path / "videos/a.npy").write_bytes(b"")
    assert resolve_video(GOOD) == tmp_path / "videos/a.npy"


def test_manifest_entry_without_license():
    with pytest.raises(ValueError, match="manifest entry 'v1': field 'license' is missing"):
        Manifest.from_records([{"video_id": "v1", "path": "v1.npy"}])


@pytest.mark.parametrize(
    ("record", "match"),
    [
        ({**GOOD, "problem_type": "essay"}, "unknown problem type"),
        ({**GOOD, "options": ["A. x", "K. y"]}, "beyond the supported range"),
        ({**GOOD, "solution": "Z"}, "not among the options"),
        ({**GOOD, "question": ""}, "'question' is empty"),
    ],
)
def test_cli_validate_one_line(tmp_path, capsys, record, match):
    path = tmp_path / "c.jsonl"
    path.write_text(json.dumps(record) + "\n")
    code = main(["check-corpus", "--corpus", str(path), "--check_videos", "false"])
    assert_one_line_error(capsys.readouterr().err, match, code)


def test_cli_validate_duplicate_and_missing_video(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("VIDEOKR_VIDEO_ROOT", raising=False)
    path = tmp_path / "c.jsonl"
    path.write_text(json.dumps(GOOD) + "\n" + json.dumps(GOOD) + "\n")
    code = main(["check-corpus", "--corpus", str(path), "--check_videos", "false"])
    assert_one_line_error(capsys.readouterr().err, "duplicate id", code)
    path.write_text(json.dumps(GOOD) + "\n")
    code = main(["check-corpus", "--corpus", str(path), "--video_root", str(tmp_path)])
    assert_one_line_error(capsys.readouterr().err, "videos/a.npy", code)
