"""Train a task module, select the best-validation epoch, and test it (the reported protocol).

:func:`fit_and_test` runs ``Trainer.fit`` with a checkpoint on the best validation score and then
``Trainer.test`` on that checkpoint, so every reported test number is *at the best
validation epoch* (not the minimum test loss over epochs, which is optimistic). The score is
the module's ``selection`` (metric, mode): the lowest ``val/loss`` by default, the highest
``val/acc`` for classifiers (DWSNets' protocol; the validation cross-entropy of small
classifiers swings by 5x between epochs and picked early, near-chance epochs).
"""

from __future__ import annotations

import tempfile
import warnings
from pathlib import Path

import lightning.pytorch as pl
from icml26_shared.trainer import quiet_trainer
from lightning.pytorch.callbacks import ModelCheckpoint


def fit_and_test(
    module: pl.LightningModule, datamodule: pl.LightningDataModule, epochs: int
) -> dict:
    """Fit for ``epochs``, test the best-validation checkpoint; return its metrics + timing."""
    with tempfile.TemporaryDirectory() as tmp, warnings.catch_warnings():
        warnings.filterwarnings("ignore", ".*does not have many workers.*")
        warnings.filterwarnings("ignore", ".*number of training batches.*")
        monitor, mode = getattr(module, "selection", ("val/loss", "min"))
        ckpt = ModelCheckpoint(dirpath=tmp, monitor=monitor, mode=mode, save_top_k=1)
        trainer = quiet_trainer(
            max_epochs=epochs,
            callbacks=[ckpt],
            enable_checkpointing=True,
            default_root_dir=Path(tmp),
        )
        trainer.fit(module, datamodule=datamodule)
        seconds = list(getattr(module, "epoch_seconds", []))
        best = type(module).load_from_checkpoint(
            ckpt.best_model_path, map_location="cpu", weights_only=False
        )
        tester = quiet_trainer(default_root_dir=Path(tmp))
        metrics = tester.test(best, datamodule=datamodule, verbose=False)[0]
    out = {k: float(v) for k, v in metrics.items()}
    out["s_per_epoch"] = sum(seconds) / max(1, len(seconds))
    out["best_epoch"] = int(Path(ckpt.best_model_path).stem.split("epoch=")[1].split("-")[0])
    return out
