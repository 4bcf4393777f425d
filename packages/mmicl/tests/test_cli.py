"""The mmicl command line: help, LightningCLI from configs, package commands, bad input."""

from pathlib import Path

import lightning.pytorch as pl
import numpy as np
import pytest
import torch
from icml26_shared.contract import assert_one_line_error
from mmicl.cli import main
from mmicl.lightning import Stage1Module, UnimodalICLDataModule

CONFIGS = Path(__file__).resolve().parent.parent / "configs"


def _one_line_error(capsys, match):
    assert_one_line_error(capsys.readouterr().err, match)


@pytest.fixture(scope="module")
def ckpt(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("ck")
    pl.seed_everything(0, verbose=False)
    dm = UnimodalICLDataModule(K=32, L=4, D=8, N=4, B=2, batch_size=8, train_batches=2)
    module = Stage1Module(8, 4, d_model=16, n_heads=2)
    trainer = pl.Trainer(
        max_steps=2, logger=False, enable_checkpointing=False, enable_progress_bar=False,
        enable_model_summary=False, limit_val_batches=0, default_root_dir=tmp,
    )  # fmt: skip
    trainer.fit(module, datamodule=dm)
    path = tmp / "s1.ckpt"
    trainer.save_checkpoint(path)
    return path


@pytest.mark.parametrize(
    "name",
    [
        "stage1-rope.yaml",
        "stage1-paper-ape.yaml",
        "stage2-gmm-K2-4-m1random.yaml",
        "stage3-digits-cnn.yaml",
    ],
)
def test_configs_of_each_stage_parse(capsys, name):
    assert main(["fit", "--config", str(CONFIGS / name), "--print_config"]) == 0
    assert "class_path: mmicl.lightning." in capsys.readouterr().out


@pytest.mark.slow
def test_every_config_parses(capsys):
    for cfg in sorted(CONFIGS.glob("*.yaml")):
        assert main(["fit", "--config", str(cfg), "--print_config"]) == 0, cfg.name
    capsys.readouterr()


def test_fit_and_test_from_config(tmp_path, capsys):
    args = ["--config", str(CONFIGS / "smoke.yaml"), "--trainer.default_root_dir", str(tmp_path)]
    assert main(["fit", *args]) == 0
    assert main(["test", *args]) == 0
    assert "test_IC_acc" in capsys.readouterr().out


@pytest.mark.parametrize(
    "override, match",
    [
        (["--data.init_args.K", "30"], "multiple of the label count"),
        (["--data.init_args.B", "3"], "multiple of the burst size"),
        (["--data.init_args.p_B", "1.5"], "probability"),
        (["--model.init_args.d_in", "5"], "does not match the model"),
        (["--model.init_args.max_positions", "5"], "position capacity"),
    ],
)
def test_bad_config_values_give_one_line(tmp_path, capsys, override, match):
    args = ["fit", "--config", str(CONFIGS / "smoke.yaml"), *override]
    assert main([*args, "--trainer.default_root_dir", str(tmp_path)]) == 2
    _one_line_error(capsys, match)


def test_stage2_with_mismatched_checkpoint_is_a_usage_error(ckpt, tmp_path, capsys):
    """Exit 2 with the reason and no traceback. jsonargparse wraps errors raised while the
    model is built (subclass mode) in a multi-line Union message that the shared PaperCLI
    does not condense yet, so this is not one line (the package's own condensing is gone)."""
    args = ["fit", "--config", str(CONFIGS / "stage2-gmm-K2-4.yaml"),
            "--model.init_args.decoder_checkpoint", str(ckpt),
            "--trainer.default_root_dir", str(tmp_path)]  # fmt: skip
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "the config says d1=32" in err and "Traceback" not in err


def test_circuits_and_knockout(ckpt, capsys):
    assert main(["circuits", "--ckpts", f"[{ckpt}, {ckpt}, {ckpt}]", "--eval_sequences", "16"]) == 0
    out = capsys.readouterr().out
    assert "s1.ckpt" in out and "spearman rho(ih, IC acc)" in out
    assert main(["knockout", "--checkpoint", str(ckpt), "--eval_sequences", "16"]) == 0
    out = capsys.readouterr().out
    assert "top induction head" in out and "all heads" in out


def test_checkpoint_errors_give_one_line(ckpt, tmp_path, capsys):
    assert main(["knockout", "--checkpoint", str(tmp_path / "missing.ckpt")]) == 2
    _one_line_error(capsys, "does not exist")
    bad = tmp_path / "bad.ckpt"
    bad.write_text("not a checkpoint")
    assert main(["circuits", "--ckpts", f"[{bad}]"]) == 2
    _one_line_error(capsys, "cannot read stage-1 checkpoint")
    assert main(["knockout", "--checkpoint", str(ckpt), "--D", "16"]) == 2
    _one_line_error(capsys, "the data has D=16")


def test_benchmark_and_sweep(capsys):
    assert main(["benchmark", "--K", "64", "--L", "8", "--D", "8", "--sequences", "50"]) == 0
    out = capsys.readouterr().out
    assert "nearest context item" in out and "sequences/s" in out
    args = ["sweep", "--Ks", "[32]", "--positions", "[rope]", "--steps", "2", "--L", "8",
            "--D", "8", "--N", "4", "--eval_sequences", "16"]  # fmt: skip
    assert main(args) == 0
    assert "rope" in capsys.readouterr().out
    assert main([*args, "--positions", "[ape]", "--embedding", "concat"]) == 0  # authors' layout
    assert "ape" in capsys.readouterr().out
    assert main(["sweep", "--Ks", "[30]", "--L", "8", "--steps", "2"]) == 2
    _one_line_error(capsys, "multiple of the label count")
    assert main([*args, "--embedding", "concat", "--positions", "[ape]", "--d_model", "16"]) == 2
    _one_line_error(capsys, "needs a width of at least")


DATA = Path(__file__).resolve().parent / "data"


def _own_data_commands(bank: Path, runs: Path) -> list[list[str]]:
    """The README's "On your own data" commands, at test size (the README's sizes are the
    config defaults; only the size overrides differ)."""
    tiny1 = ["--config", "mmicl:smoke.yaml", "--trainer.default_root_dir", str(runs / "stage1"),
             "--trainer.callbacks+=ModelCheckpoint", "--trainer.callbacks.dirpath",
             str(runs), "--trainer.callbacks.filename", "decoder"]  # fmt: skip
    stage2 = ["--config", "mmicl:stage2-features.yaml", "--data.init_args.features", str(bank),
              "--model.init_args.d2", "16",
              "--model.init_args.decoder_checkpoint", str(runs / "decoder.ckpt"),
              "--trainer.default_root_dir", str(runs / "stage2"),
              # test size: the smoke decoder (D=8, L=4), tiny batches
              "--model.init_args.d1", "8", "--model.init_args.n_labels", "4",
              "--data.init_args.K1", "32", "--data.init_args.L1", "4", "--data.init_args.D1", "8",
              "--data.init_args.N", "4", "--data.init_args.batch_size", "8",
              "--data.init_args.train_batches", "6", "--data.init_args.eval_sequences", "32",
              "--trainer.max_steps", "6", "--trainer.val_check_interval", "3",
              "--trainer.accelerator", "cpu"]  # fmt: skip
    fit2 = [*stage2, "--trainer.callbacks+=ModelCheckpoint", "--trainer.callbacks.dirpath",
            str(runs), "--trainer.callbacks.filename", "projector"]  # fmt: skip
    test2 = [*stage2, "--ckpt_path", str(runs / "projector.ckpt")]
    return [["fit", *tiny1], ["fit", *fit2], ["test", *test2]]


def test_own_feature_bank_runs_through_fit_and_multimodal_evaluation(tmp_path, capsys):
    """A user's .npz feature bank (the shipped example: digits, PCA-16) through stage-1 fit,
    stage-2 fit (frozen decoder, projector only) and the multimodal test splits."""
    bank = tmp_path / "my_features.npz"
    assert main(["digits-features", "--out", str(bank)]) == 0
    shipped = np.load(DATA / "digits_features.npz")
    made = np.load(bank)
    assert np.allclose(made["features"], shipped["features"], atol=1e-5)
    assert np.array_equal(made["labels"], shipped["labels"])
    capsys.readouterr()
    fit1, fit2, test2 = _own_data_commands(bank, tmp_path / "runs")
    assert main(fit1) == 0 and (tmp_path / "runs" / "decoder.ckpt").is_file()
    assert main(fit2) == 0 and (tmp_path / "runs" / "projector.ckpt").is_file()
    capsys.readouterr()
    assert main(test2) == 0
    out = capsys.readouterr().out
    for split in ("test", "IC", "IC2", "IW", "IW0"):
        assert f"test_{split}_acc" in out
    metrics = list((tmp_path / "runs" / "stage2").rglob("metrics.csv"))
    assert metrics and "val_IW0_acc" in metrics[0].read_text().splitlines()[0]
    # the projector is the only trained part: the decoder weights equal the stage-1 ones
    s1 = torch.load(tmp_path / "runs" / "decoder.ckpt", weights_only=False)
    s2 = torch.load(tmp_path / "runs" / "projector.ckpt", weights_only=False)
    w = "model.blocks.0.attn.qkv.weight"
    assert torch.equal(
        s1["state_dict"][w], s2["state_dict"]["model.decoder.blocks.0.attn.qkv.weight"]
    )


@pytest.mark.parametrize(
    "content, match",
    [
        (None, "does not exist"),
        (b"not an npz", "cannot read feature bank"),
        ({"x": np.zeros((4, 2))}, "needs arrays 'features'"),
        ({"features": np.zeros((4, 2)), "labels": np.zeros(3, dtype=int)}, "must be (n, d)"),
        ({"features": np.zeros((40, 2)), "labels": np.arange(40) % 5}, "novel classes"),
    ],
)
def test_bad_feature_bank_gives_one_line(tmp_path, capsys, content, match):
    bank = tmp_path / "bank.npz"
    if isinstance(content, bytes):
        bank.write_bytes(content)
    elif content is not None:
        np.savez(bank, **content)
    _, fit2, _ = _own_data_commands(bank, tmp_path / "runs")
    fit2 = [a for a in fit2 if a != "--model.init_args.decoder_checkpoint"]
    i = fit2.index(str(tmp_path / "runs" / "decoder.ckpt"))
    fit2 = fit2[:i] + ["--model.init_args.freeze_decoder", "false"] + fit2[i + 1 :]
    assert main(fit2) == 2
    _one_line_error(capsys, match)
