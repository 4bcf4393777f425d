"""The reproduce comparison: every variant trains through the LightningModule, run order, sections."""

import pytest
import torch
from eostok import comparison as c
from eostok.digits_data import load_digits_images
from eostok.feature_net import train_feature_net

TINY = c.ModelSize(batch_size=4, codebook_size=8, num_latent_tokens=4, width=16)


def test_every_variant_trains_one_step():
    xtr, ytr, _, _ = load_digits_images()
    teacher = train_feature_net(xtr[:32], ytr[:32], seed=1, steps=1)
    for name in c.VARIANTS:
        module, wall = c.train_variant(name, xtr, ytr, teacher, seed=0, steps=1, size=TINY)
        assert wall >= 0 and module.hparams.codebook_size == 8
    m, _ = c.train_variant("e2e + APR + align, tokenizer lr x0.1", xtr, ytr, teacher, 0, 1, TINY)
    assert [g["lr"] for g in m.configure_optimizers().param_groups] == [1e-3, 1e-4]


def test_training_goes_through_lightning_and_is_seeded():
    """Two runs with the same seed give the same weights; the Trainer counted every step."""
    xtr, ytr, _, _ = load_digits_images()
    states = []
    for _ in range(2):
        m, _ = c.train_variant("e2e + APR", xtr, ytr, None, seed=3, steps=3, size=TINY)
        assert m.trainer.global_step == 3
        states.append(m.state_dict())
    assert all(torch.equal(states[0][k], states[1][k]) for k in states[0])


def test_run_order_longest_first_results_in_run_order(monkeypatch):
    ran = []
    monkeypatch.setattr(
        c, "run_variant", lambda r: (ran.append(r.variant) or {"v": r.variant}, None)
    )
    runs = [
        c.Run(name, 0, False, steps, 20, TINY, None, None, None)
        for name, steps in (("e2e CE-only", 5), ("two-stage", 5), ("e2e + APR", 9))
    ]
    out = c.run_all(runs, workers=1)
    assert ran == ["two-stage", "e2e + APR", "e2e CE-only"]  # two-stage first, then most steps
    assert [row["v"] for row, _ in out] == ["e2e CE-only", "two-stage", "e2e + APR"]


def test_unknown_variant_is_a_setting_error(tmp_path):
    from eostok.reproduce import EXPERIMENT
    from icml26_shared.experiment import SettingError

    bad = tmp_path / "bad.yaml"
    bad.write_text("sections:\n  shapes:\n    variants: [three-stage]\n")
    with pytest.raises(SettingError, match="three-stage"):
        EXPERIMENT.validate("quick", [bad])


def test_sections_run_on_a_tiny_setting(tmp_path):
    from eostok.reproduce import EXPERIMENT

    tiny = tmp_path / "tiny.yaml"
    tiny.write_text(
        "workers: 1\nbatch_size: 4\ncodebook_size: 8\nnum_latent_tokens: 4\nwidth: 16\n"
        "sections:\n"
        "  digits: {steps: 1, variants: [two-stage, e2e CE-only], seeds: 2, n_samples: 20,"
        " feature_steps: 1}\n"
        "  sweep: {steps: 1, variants: ['e2e + APR + align, CE x0.1, codebook only'], seeds: 1,"
        " n_samples: 20, feature_steps: 1}\n"
        "  shapes: {steps: 1, variants: [e2e + APR], n_train: 36, n_samples: 20,"
        " feature_steps: 1}\n"
    )
    report = EXPERIMENT.run(tmp_path / "out", preset="quick", overrides=[tiny], log=False)
    digits = report.sections["digits"]
    assert [(r["variant"], r["seed"]) for r in digits.tables[0].rows] == [
        ("two-stage", 0), ("e2e CE-only", 0), ("two-stage", 1),
        ("e2e + APR + align, CE stops at prior", 1),
    ]  # fmt: skip
    assert digits.tables[1].rows[0]["n"] == 2  # the key cells over seeds 0 and 1
    assert digits.figures == ["samples_digits.png"]
    assert report.sections["shapes"].tables[0].rows[0]["variant"] == "e2e + APR"
    assert (tmp_path / "out" / "samples_shapes.png").is_file()
    assert report.sections["sweep"].figures == ["samples_sweep.png"]
