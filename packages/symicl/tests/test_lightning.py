"""Lightning parts: the shared contract, the data module, a short training run."""

import pytest
import torch
from icml26_shared.contract import check_contract
from symicl.episodes import LinearTaskSampler
from symicl.evaluation import anchor_accuracies, model_accuracy
from symicl.lightning import ICLClassifierModule, LinearTaskDataModule, train_classifier


def _forward(model, batch):
    return model(batch["x"], batch["y"], batch["xq"])


def _data():
    return LinearTaskDataModule(
        4, 2, 8, batch_size=8, train_batches=2, val_episodes=16, test_episodes=16
    )


@pytest.mark.parametrize("symmetry", ["tied", "augment"])
def test_shared_contract(tmp_path, symmetry):
    result = check_contract(
        lambda: ICLClassifierModule(4, 2, n_layers=1, n_heads=1, symmetry=symmetry),
        _data,
        tmp_path,
        forward_fn=_forward,
    )
    assert result.output.shape == (8, 2)


def test_datamodule_banks_are_fixed_and_shifted():
    dm = LinearTaskDataModule(
        4,
        2,
        8,
        batch_size=8,
        train_batches=3,
        val_episodes=20,
        test_episodes=12,
        test_n_context=16,
        test_noise=0.5,
    )
    dm.setup("fit")
    dm.setup("test")
    val = next(iter(dm.val_dataloader()))
    assert torch.equal(val["x"], next(iter(dm.val_dataloader()))["x"])
    fresh = LinearTaskDataModule(4, 2, 8, batch_size=8, val_episodes=20)
    fresh.setup("fit")
    assert torch.equal(val["x"], next(iter(fresh.val_dataloader()))["x"])  # seeded bank
    assert val["x"].shape == (8, 8, 4)
    test = next(iter(dm.test_dataloader()))
    assert test["x"].shape == (8, 16, 4)
    assert len(dm.train_dataloader()) == 3
    with pytest.raises(ValueError, match="batch_size"):
        LinearTaskDataModule(batch_size=0)


def test_short_training_beats_chance_and_prototype_is_in_reach():
    module = train_classifier(
        4, 2, 16, n_layers=1, n_heads=2, symmetry="tied", steps=150, batch_size=32
    )
    bank = LinearTaskSampler(4, 2, 16, seed=99).sample(400)
    acc = model_accuracy(module.model, bank)
    proto = anchor_accuracies(bank, 2, sklearn=())["prototype"]
    assert acc > 0.7 and proto > 0.7  # chance is about 0.5


def test_augment_is_projected_at_the_end_of_fit():
    module = train_classifier(
        4, 2, 8, n_layers=1, n_heads=1, symmetry="augment", steps=5, batch_size=8
    )
    assert bool(module.model.projected)
    assert module.defect_before_projection["max"] > 1e-3
    assert module.model.symmetry_defects().max() < 1e-6


def test_every_experiment_config_builds_and_matches_the_full_reproduce():
    from pathlib import Path

    import yaml
    from symicl.reproduce import EXPERIMENT

    full = EXPERIMENT.validate("full")["comparison"]

    configs = sorted((Path(__file__).resolve().parent.parent / "configs").glob("*-L*.yaml"))
    assert len(configs) == 15  # 3 modes x (3 depths + 2 larger tasks)
    for path in configs:
        cfg = yaml.safe_load(path.read_text())
        module = ICLClassifierModule(**cfg["model"])
        LinearTaskDataModule(**cfg["data"])
        task = (cfg["data"]["d"], cfg["data"]["n_classes"], cfg["data"]["n_context"])
        assert list(task) in full.tasks and cfg["data"]["train_batches"] == full.steps, path.name
        assert module.model.symmetry == path.name.split("-")[0], path.name
