"""Real-data paths (CIFAR-10 via datasets, Atari via ale-py): clear offline / missing errors, smoke."""

import sys
from pathlib import Path

import pytest
import torch
from icml26_shared import hub
from icml26_shared.contract import assert_one_line_error
from sigreg.cli import main
from sigreg.encoder import NatureCNN, make_trunk
from sigreg.lightning import DigitsShuffleDataModule
from sigreg.nonstationary_env import build_env, make_vector_env
from sigreg.shuffled_labels import load_cifar10_tensors

CONFIGS = Path(__file__).resolve().parents[1] / "configs"


@pytest.fixture
def offline(monkeypatch, tmp_path):
    """No Hub and an empty Hugging Face cache: the real CIFAR path must fail at once."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf" / "datasets"))
    hub.hub_reachable.cache_clear()
    yield
    hub.hub_reachable.cache_clear()


def test_cifar10_offline_is_one_clear_error(offline):
    pytest.importorskip("datasets")
    with pytest.raises(ValueError, match="offline alternative: --data.dataset digits") as err:
        load_cifar10_tensors(16)
    assert len(str(err.value).splitlines()) == 1


def test_cifar10_config_offline_gives_one_line_on_the_cli(offline, capsys):
    pytest.importorskip("datasets")
    code = main(
        [
            "fit",
            "--config",
            str(CONFIGS / "real" / "cifar10-shuffle-sigreg.yaml"),
            "--trainer.fast_dev_run",
            "true",
            "--trainer.logger",
            "false",
        ]
    )
    assert_one_line_error(capsys.readouterr().err, "CIFAR-10", code)


def test_dataset_choice_is_checked():
    with pytest.raises(ValueError, match="unknown dataset"):
        DigitsShuffleDataModule(dataset="imagenet")
    with pytest.raises(ValueError, match="n_samples"):
        load_cifar10_tensors(0)


def test_nature_cnn_shapes_and_bad_input():
    t = make_trunk("nature-cnn", (4, 84, 84), 32, 2, True, "pre-relu")
    assert isinstance(t, NatureCNN)
    phi = t(torch.full((3, 4 * 84 * 84), 128.0))
    assert phi.shape == (3, 32) and torch.isfinite(phi).all()
    assert len(t.linear_layers()) == 1
    with pytest.raises(ValueError, match="image observations"):
        NatureCNN((4,), 8)
    with pytest.raises(ValueError, match="unknown encoder"):
        make_trunk("resnet", (4,), 8, 1, False, "post-relu")


def test_atari_without_ale_py_is_one_clear_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "ale_py", None)  # import ale_py -> ImportError
    with pytest.raises(ValueError, match="needs the optional package 'ale-py'"):
        make_vector_env("ALE/Breakout-v5", 1)


def test_atari_pqn_with_nature_cnn_runs_an_update():
    pytest.importorskip("ale_py")
    from sigreg.lightning import PQNModule
    from sigreg.rl_benchmark import run_agent

    env = build_env("ALE/Breakout-v5", 1)
    assert env.raw_obs_shape == (4, 84, 84) and env.obs_dim == 4 * 84 * 84
    env.close()
    with pytest.raises(ValueError, match="unknown environment id"):
        PQNModule(env_id="ALE/NoSuchGame-v5", num_envs=1)
    res = run_agent(
        "pqn",
        env_id="ALE/Breakout-v5",
        iterations=1,
        num_envs=2,
        num_steps=8,
        num_minibatches=2,
        hidden=32,
        encoder="nature-cnn",
        sigreg_lambda=1.0,
    )
    assert res["total_steps"] == 16 and res["reg_s"] > 0
