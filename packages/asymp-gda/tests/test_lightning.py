"""The LightningModule / DataModule: workspace contract and convergence under Trainer.fit."""

import lightning.pytorch as pl
import pytest
from asymp_gda.lightning import GameDataModule, SaddlePointModule
from icml26_shared.contract import check_contract


def test_contract(tmp_path):
    check_contract(
        lambda: SaddlePointModule("brps", n_trials=2, steps_per_batch=5),
        lambda: GameDataModule("brps", batches_per_epoch=2),
        tmp_path,
        backward=True,
    )


def test_fit_converges_to_equilibrium(tmp_path):
    model = SaddlePointModule("brps", mu=1.0, eta=0.1, steps_per_batch=200, n_trials=3)
    trainer = pl.Trainer(
        max_epochs=1,
        accelerator="cpu",
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        default_root_dir=tmp_path,
    )
    trainer.fit(model, GameDataModule("brps", batches_per_epoch=10))
    assert float(model._expl(GameDataModule("brps").game.A).max()) < 1e-9


def test_shape_mismatch_between_model_and_data():
    import torch

    model = SaddlePointModule("brps")
    with pytest.raises(ValueError, match="same game"):
        model(torch.zeros(1, 2, 2, dtype=torch.float64))
