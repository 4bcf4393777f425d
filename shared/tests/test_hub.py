import time

import pytest
from icml26_shared import hub
from icml26_shared.hub import HubUnavailableError, from_pretrained, hub_reachable


class FakeModel:
    calls: list[dict] = []

    @classmethod
    def from_pretrained(cls, model_id, **kwargs):
        cls.calls.append({"id": model_id, **kwargs})
        if kwargs.get("local_files_only"):
            raise OSError(f"{model_id} is not in the cache")
        return cls()


@pytest.fixture
def offline(monkeypatch):
    monkeypatch.setattr(hub, "hub_reachable", lambda timeout=3.0: False)
    FakeModel.calls = []


def test_offline_error_names_model_and_alternative(offline):
    start = time.perf_counter()
    with pytest.raises(HubUnavailableError) as err:
        from_pretrained(FakeModel, "org/some-model", offline_hint="use --model tiny")
    assert time.perf_counter() - start < 1.0  # fails fast, no network timeout
    msg = str(err.value)
    assert "'org/some-model'" in msg and "use --model tiny" in msg
    assert FakeModel.calls == [{"id": "org/some-model", "local_files_only": True}]


def test_local_path_bypasses_hub(offline, tmp_path):
    assert isinstance(from_pretrained(FakeModel, str(tmp_path)), FakeModel)
    assert FakeModel.calls == [{"id": str(tmp_path)}]


def test_online_path_is_the_real_call(monkeypatch):
    monkeypatch.setattr(hub, "hub_reachable", lambda timeout=3.0: True)
    FakeModel.calls = []
    assert isinstance(from_pretrained(FakeModel, "org/m", revision="main"), FakeModel)
    assert FakeModel.calls == [{"id": "org/m", "revision": "main"}]


def test_hf_hub_offline_env_means_unreachable(monkeypatch):
    hub_reachable.cache_clear()
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    try:
        assert hub_reachable() is False
    finally:
        hub_reachable.cache_clear()


def test_load_dataset_offline(offline):
    pytest.importorskip("datasets")
    with pytest.raises(HubUnavailableError, match="no-such-org/no-such-dataset"):
        hub.load_dataset("no-such-org/no-such-dataset", offline_hint="--data synthetic")


def test_offline_error_is_one_cli_line(offline, capsys):
    """An offline miss inside a package command is one line and exit 2, not a stack trace."""
    from icml26_shared.cli import PaperCLI
    from icml26_shared.paper import Paper

    def load(model: str = "org/some-model") -> None:
        """Load a model from the Hub."""
        from_pretrained(FakeModel, model, offline_hint="use --model tiny")

    assert issubclass(HubUnavailableError, ConnectionError)
    assert issubclass(HubUnavailableError, RuntimeError)  # 0.1.0 callers still catch it
    paper = Paper(name="demo", title="Demo", cli="demo", import_name="demo")
    code = PaperCLI(paper, commands={"load": load}).main(["load"])
    err = capsys.readouterr().err.strip()
    assert code == 2, err
    assert len(err.splitlines()) == 1 and "'org/some-model'" in err and "Traceback" not in err


def test_offline_call_runs_with_hub_offline_mode(offline):
    """The cache-only attempt runs with huggingface_hub offline (no retried requests)."""
    hf_constants = pytest.importorskip("huggingface_hub.constants")
    seen = []

    class Recorder:
        @classmethod
        def from_pretrained(cls, model_id, **kwargs):
            seen.append(hf_constants.HF_HUB_OFFLINE)
            raise OSError("not cached")

    before = hf_constants.HF_HUB_OFFLINE
    with pytest.raises(HubUnavailableError):
        from_pretrained(Recorder, "org/some-model")
    assert seen == [True]
    after = hf_constants.HF_HUB_OFFLINE
    assert after == before  # restored afterwards
