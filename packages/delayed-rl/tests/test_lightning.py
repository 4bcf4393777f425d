"""The Lightning shell: shared contract, checkpointed learner state, logged regret."""

from pathlib import Path

import lightning.pytorch as pl
import pytest
import torch
from delayed_rl.lightning import EpisodeDataModule, TabularAgentModule
from icml26_shared.contract import check_contract

# the learner updates counts, not parameters: Lightning's "no optimizer" notice is expected
pytestmark = pytest.mark.filterwarnings("ignore:.*configure_optimizers.*returned .None.")

CONFIGS = Path(__file__).resolve().parent.parent / "configs"


def _model():
    return TabularAgentModule(env="chain", delay="uniform:1", horizon=4)


def _data():
    return EpisodeDataModule(episodes=3, eval_episodes=2)


def test_shared_contract(tmp_path):
    res = check_contract(_model, _data, tmp_path, backward=False)
    assert res.output.shape == (1,)  # (B,) realised returns for a batch of one seed


def test_fit_learns_and_checkpoint_restores_counts(tmp_path):
    model = _model()
    trainer = pl.Trainer(
        accelerator="cpu",
        max_epochs=1,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        num_sanity_val_steps=0,
        default_root_dir=tmp_path,
    )
    dm = EpisodeDataModule(episodes=20, eval_episodes=2)
    trainer.fit(model, datamodule=dm)
    assert float(model.agent_episodes) == 20
    assert float(model.agent_counts.sum()) == 20 * 3  # H - 1 revealed transitions per episode
    assert trainer.callback_metrics["train/cumulative_regret"] >= 0
    ckpt = tmp_path / "m.ckpt"
    trainer.save_checkpoint(ckpt)
    loaded = TabularAgentModule.load_from_checkpoint(ckpt, weights_only=False)
    assert torch.equal(loaded.agent_counts, model.agent_counts)
    assert loaded.pseudo_regret() == model.pseudo_regret()
    out = trainer.validate(model, datamodule=dm, verbose=False)
    assert out[0]["val/pseudo_regret"] >= 0


def test_every_config_builds():
    import yaml

    files = sorted(CONFIGS.glob("*.yaml"))
    assert len(files) == 5
    for f in files:
        cfg = yaml.safe_load(f.read_text())
        model = TabularAgentModule(**cfg["model"])
        assert model.optimum > 0
        EpisodeDataModule(**cfg["data"])
