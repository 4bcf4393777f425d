"""The Hub loader fails fast and clearly offline; the micro-world corpus validates."""

import pytest
from icml26_shared import hub
from videokr.corpus import HUB_FILES, load_hub
from videokr.microworld import make_microworld
from videokr.schema import validate_corpus


def test_offline_hub_error_names_dataset_and_alternative(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path))
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "datasets"))
    hub.hub_reachable.cache_clear()
    try:
        with pytest.raises(hub.HubUnavailableError) as err:
            load_hub("eval")
    finally:
        hub.hub_reachable.cache_clear()
    msg = str(err.value)
    assert HUB_FILES["eval"][0] in msg and "videokr synth" in msg


def test_unknown_split():
    with pytest.raises(ValueError, match="unknown split 'dev'"):
        load_hub("dev")


def test_microworld_records_fit_the_schema(tmp_path):
    w = make_microworld(10, seed=1, root=tmp_path)
    rows = validate_corpus(w.train + w.eval, video_root=tmp_path, check_videos=True)
    assert len(rows) == len(w.train) + len(w.eval)
    assert {r["skill"] for r in rows} == {"VidR", "KnowVid", "KnowVidR"}
