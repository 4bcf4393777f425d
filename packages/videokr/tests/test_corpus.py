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


def test_local_datamodule_reads_clips_under_the_video_root(tmp_path, monkeypatch):
    from videokr.corpus import write_jsonl
    from videokr.lightning import VideoKRDataModule

    w = make_microworld(6, seed=0, root=tmp_path)
    train = write_jsonl(tmp_path / "train.jsonl", w.train)
    test = write_jsonl(tmp_path / "eval.jsonl", w.eval)
    dm = VideoKRDataModule(str(train), str(test), video_root=str(tmp_path), batch_size=3)
    dm.setup("fit")
    b = next(iter(dm.train_dataloader()))
    assert b["video"].shape == (3, 1, 7, 16, 16)  # (B, 1, T, H, W)
    assert b["input_ids"].shape == b["labels"].shape == b["attention_mask"].shape
    assert len(dm.splits["train"]) + len(dm.splits["val"]) == len(w.train)
    (tmp_path / w.eval[0]["video_path"]).unlink()
    monkeypatch.delenv("VIDEOKR_VIDEO_ROOT", raising=False)
    with pytest.raises(FileNotFoundError, match="VIDEOKR_VIDEO_ROOT") as err:
        VideoKRDataModule(str(train), str(test), video_root=str(tmp_path)).setup("fit")
    assert w.eval[0]["video_path"] in str(err.value)
