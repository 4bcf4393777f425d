"""The eostok command line: every config trains a step, one clear line for bad input."""

import pytest
from eostok.cli import main


def test_every_config_parses_and_fast_dev_runs(tmp_path):
    from pathlib import Path

    configs = sorted((Path(__file__).parents[1] / "configs").glob("*.yaml"))
    assert len(configs) >= 8
    for cfg in configs:
        if cfg.stem == "prior-stage":
            continue  # needs a stage-1 checkpoint; covered by test_lightning
        extra = []
        if cfg.stem.startswith("shapes"):
            extra = ["--data.init_args.n_train=36", "--data.init_args.n_test=18",
                     "--data.init_args.batch_size=8"]  # fmt: skip
        code = main(
            ["fit", "--config", str(cfg), "--trainer.fast_dev_run=1",
             f"--trainer.default_root_dir={tmp_path}", "--trainer.logger=false",
             "--trainer.enable_checkpointing=false", "--model.width=16", "--model.depth=1",
             "--model.prior_depth=1", "--model.codebook_size=8", "--model.teacher=random", *extra]
        )  # fmt: skip
        assert code in (0, None), cfg.name


def test_offline_real_path_is_one_line(capsys, tmp_path, monkeypatch):
    """ImageNet through `datasets` offline: one line naming the dataset, exit 2."""
    from pathlib import Path

    from icml26_shared.contract import assert_one_line_error
    from icml26_shared.hub import hub_reachable

    pytest.importorskip("datasets")
    hub_reachable.cache_clear()  # let HF_HUB_OFFLINE decide
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    cfg = Path(__file__).parents[1] / "configs" / "real" / "imagenet-e2e-apr-align.yaml"
    code = main(
        ["fit", "--config", str(cfg), f"--trainer.default_root_dir={tmp_path}",
         "--trainer.logger=false", "--model.width=16", "--model.depth=1", "--model.prior_depth=1",
         "--model.codebook_size=8", "--model.num_latent_tokens=4", "--trainer.precision=32"]
    )  # fmt: skip
    assert code == 2
    assert_one_line_error(capsys.readouterr().err, "ILSVRC/imagenet-1k")


def test_sample_missing_checkpoint_is_one_line(capsys, tmp_path):
    from icml26_shared.contract import assert_one_line_error

    code = main(
        ["sample", "--checkpoint", str(tmp_path / "none.ckpt"), "--out", str(tmp_path / "x.png")]
    )
    assert code != 0
    assert_one_line_error(capsys.readouterr().err, "does not exist")


def test_evaluate_bad_data_is_one_line(capsys, tmp_path):
    from icml26_shared.contract import assert_one_line_error

    code = main(["evaluate", "--checkpoint", str(tmp_path / "x.ckpt"), "--data", "imagenet"])
    assert code == 2
    assert_one_line_error(capsys.readouterr().err, "data must be")
