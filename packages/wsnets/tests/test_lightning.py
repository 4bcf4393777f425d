"""Lightning parts: the shared contract for every task, and that training really learns."""

import pytest
import torch
from icml26_shared.contract import check_contract
from wsnets.lightning import (
    DigitsINRDataModule,
    INRClassifier,
    INREditor,
    MLPZooDataModule,
    WeightRegressor,
)
from wsnets.training import fit_and_test


def _forward(model, batch):
    return model(batch["weights"], batch["biases"])


def _digits(task, cache):
    return DigitsINRDataModule(
        task, n_images=24, image_size=8, hidden=4, fit_steps=3, batch_size=8, cache_dir=str(cache)
    )


@pytest.mark.parametrize("F", [1, 2])
def test_contract_editor(tmp_path, F):
    arch = [2, 4, 4, 1]
    result = check_contract(
        lambda: INREditor(arch, "dws", 3, 1, F=F, image_size=8, offset=0.5),
        lambda: _digits("edit", tmp_path / "cache"),
        tmp_path,
        forward_fn=_forward,
    )
    assert result.output.shape == (8, 64)


def test_contract_classifier_gmn(tmp_path):
    check_contract(
        lambda: INRClassifier([2, 4, 4, 1], "gmn", 4, 1, n_classes=10),
        lambda: _digits("classify", tmp_path / "cache"),
        tmp_path,
        forward_fn=_forward,
    )


def test_contract_regressor(tmp_path):
    check_contract(
        lambda: WeightRegressor([2, 8, 8, 2], "np_pe", 3, 1),
        lambda: MLPZooDataModule(n=20, points=30, batch_size=8, cache_dir=str(tmp_path / "c")),
        tmp_path,
        forward_fn=_forward,
    )


def test_training_recovers_a_planted_invariant(tmp_path):
    """Planted ground truth: target = output bias + mean hidden bias (G_A-invariant)."""
    from wsnets.inr_zoo import Zoo
    from wsnets.lightning import PrefitINRDataModule
    from wsnets.weight_space import WeightSpace

    torch.manual_seed(0)
    v = WeightSpace.random([1, 6, 6, 1], batch=200)
    y = v.biases[-1][:, 0, 0] + v.biases[0][:, :, 0].mean(1)
    Zoo(v, {"y": y}, {"kind": "planted", "variant": "sitzmann"}).save(tmp_path / "z")
    dm = PrefitINRDataModule(str(tmp_path / "z"), target="y", batch_size=16)
    res = fit_and_test(WeightRegressor([1, 6, 6, 1], "dws", 4, 1, lr=3e-3), dm, 10)
    assert res["test/r2"] > 0.7, res


def test_editor_rejects_a_zoo_with_another_offset(tmp_path):
    import lightning.pytorch as pl

    dm = _digits("edit", tmp_path / "cache")  # dwsnets variant: offset 0.5
    trainer = pl.Trainer(
        fast_dev_run=True, logger=False, enable_progress_bar=False, enable_model_summary=False
    )
    with pytest.raises(ValueError, match="offset"):
        trainer.fit(INREditor([2, 4, 4, 1], "dws", 3, 1, image_size=8, offset=0.0), datamodule=dm)


def test_classifier_checkpoint_is_the_best_validation_accuracy_epoch(tmp_path, monkeypatch):
    """Classifiers are selected by validation accuracy (DWSNets' protocol), the other tasks by
    validation loss; the selected epoch is the one with the highest logged val/acc."""
    import wsnets.training as training

    seen = []

    class Spy(training.ModelCheckpoint):
        def __init__(self, **kw):
            super().__init__(**kw)
            seen.append((kw["monitor"], kw["mode"]))

        def on_validation_end(self, trainer, module):
            if not trainer.sanity_checking:
                self.accs = getattr(self, "accs", []) + [float(trainer.callback_metrics["val/acc"])]
            super().on_validation_end(trainer, module)
            seen.append(self)

    monkeypatch.setattr(training, "ModelCheckpoint", Spy)
    torch.manual_seed(0)
    dm = _digits("classify", tmp_path / "cache")
    res = fit_and_test(INRClassifier([2, 4, 4, 1], "gmn", 4, 1, n_classes=10, lr=1e-2), dm, 4)
    assert seen[0] == ("val/acc", "max")
    accs = seen[-1].accs
    assert res["best_epoch"] == accs.index(max(accs))
    assert len(accs) == 4
    assert getattr(WeightRegressor, "selection", ("val/loss", "min")) == ("val/loss", "min")
    assert getattr(INREditor, "selection", ("val/loss", "min")) == ("val/loss", "min")
