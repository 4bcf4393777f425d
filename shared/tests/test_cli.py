"""PaperCLI: LightningCLI subcommands, typed extra commands and reproduce in one --help."""

from __future__ import annotations

from pathlib import Path

import pytest
from icml26_shared.cli import PaperCLI, UsageError
from icml26_shared.paper import Paper

PAPER = Paper(
    name="tiny",
    title="A tiny paper",
    cli="tiny",
    import_name="tiny",
    summary="tiny things",
    reproduce="tiny:reproduce",
)


def scale(
    factor: float = 2.0, values: list[int] | None = None, out: Path | None = None, neg: bool = False
) -> None:
    """Multiply values by a factor (an extra command).

    Args:
        factor: Multiplier; must be positive.
        values: Numbers to scale.
        out: File to write the result to.
        neg: Negate the result.
    """
    if factor <= 0:
        raise UsageError(f"factor must be positive, got {factor}")
    result = [(-factor if neg else factor) * v for v in values or []]
    if out is not None:
        out.write_text(repr(result))
    print("scaled:", result)


@pytest.fixture
def cli(tiny):
    model_cls, data_cls = tiny
    return PaperCLI(
        PAPER, model_class=model_cls, datamodule_class=data_cls, commands={"scale": scale}
    )


def test_help_lists_every_command(cli, capsys):
    assert cli.main(["--help"]) == 0
    out = capsys.readouterr().out
    for name in ["fit", "validate", "test", "predict", "reproduce", "scale"]:
        assert f"  {name}" in out
    assert "Multiply values by a factor" in out and "A tiny paper" in out


def test_no_arguments_prints_help_and_exits_2(cli, capsys):
    assert cli.main([]) == 2
    assert "usage: tiny" in capsys.readouterr().out


def test_unknown_command(cli, capsys):
    assert cli.main(["frobnicate"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("tiny: error: unknown command 'frobnicate'")


def test_extra_command_typed_options_and_yaml(cli, tmp_path, capsys):
    assert cli.main(["scale", "--factor", "3", "--values", "[1, 2]"]) == 0
    assert "scaled: [3.0, 6.0]" in capsys.readouterr().out
    cfg = tmp_path / "scale.yaml"
    cfg.write_text("factor: 0.5\nvalues: [4]\n")
    assert cli.main(["scale", "--config", str(cfg)]) == 0
    assert "scaled: [2.0]" in capsys.readouterr().out
    assert cli.main(["scale", "--neg", "--values", "[1]"]) == 0  # bare boolean flag
    assert "scaled: [-2.0]" in capsys.readouterr().out
    assert cli.main(["scale", "--values", "[1]", "--neg"]) == 0
    assert "scaled: [-2.0]" in capsys.readouterr().out


def test_extra_command_bad_input_is_one_line(cli, capsys):
    assert cli.main(["scale", "--factor", "-1"]) == 2
    err = capsys.readouterr().err
    assert err.strip() == "tiny: error: factor must be positive, got -1.0"
    for bad in (["--factor", "abc"], ["--nope", "1"]):  # jsonargparse type check, unknown option
        assert cli.main(["scale", *bad]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1, err
        assert err.startswith("tiny: error: scale: ") and err.endswith("(see: tiny scale --help)")


def test_malformed_yaml_config(cli, tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text("factor: [1, 2\n  values: {")
    assert cli.main(["scale", "--config", str(bad)]) == 2
    assert "Traceback" not in capsys.readouterr().err
    assert cli.main(["fit", "--config", str(bad)]) == 2
    assert "Traceback" not in capsys.readouterr().err


def test_fit_runs_through_lightning(cli, tmp_path):
    code = cli.main(
        [
            "fit",
            "--trainer.fast_dev_run",
            "true",
            "--trainer.accelerator",
            "cpu",
            "--trainer.logger",
            "false",
            "--trainer.default_root_dir",
            str(tmp_path),
            "--model.lr",
            "0.05",
        ]
    )
    assert code == 0


def test_fit_print_config_is_seeded(cli, capsys):
    assert cli.main(["fit", "--print_config"]) == 0
    out = capsys.readouterr().out
    assert "seed_everything: 0" in out and "lr: 0.1" in out


def test_extra_commands_may_not_shadow_builtins():
    with pytest.raises(ValueError, match="may not be named"):
        PaperCLI(PAPER, commands={"reproduce": scale})


def test_version(cli, capsys):
    assert cli.main(["--version"]) == 0
    assert capsys.readouterr().out.startswith("tiny ")


def test_load_checkpoint_round_trip_and_bad_files(tiny, tmp_path):
    import lightning.pytorch as pl
    import torch
    from icml26_shared.cli import load_checkpoint

    model_cls, data_cls = tiny
    trainer = pl.Trainer(
        max_steps=1, logger=False, enable_progress_bar=False, default_root_dir=tmp_path
    )
    model = model_cls(in_features=3)
    trainer.fit(model, data_cls())
    ckpt = tmp_path / "tiny.ckpt"
    trainer.save_checkpoint(ckpt)

    loaded = load_checkpoint(model_cls, ckpt)
    assert not loaded.training
    x = torch.randn(4, 3)
    assert torch.equal(loaded(x), model.eval()(x))

    with pytest.raises(UsageError, match="does not exist"):
        load_checkpoint(model_cls, tmp_path / "missing.ckpt")
    garbage = tmp_path / "garbage.ckpt"
    garbage.write_bytes(b"not a checkpoint")
    with pytest.raises(UsageError, match="cannot read checkpoint"):
        load_checkpoint(model_cls, garbage)
    wrong = tmp_path / "wrong.ckpt"
    torch.save({"state_dict": {}, "hyper_parameters": {"in_features": 3}}, wrong)
    with pytest.raises(UsageError, match="cannot read stage-1 checkpoint"):
        load_checkpoint(model_cls, wrong, what="stage-1 checkpoint")


def test_fit_help_shows_every_trainer_and_model_option(cli, capsys):
    assert cli.main(["fit", "--help"]) == 0
    out = capsys.readouterr().out
    for option in ("--trainer.max_epochs", "--trainer.strategy", "--model.lr", "--data.n"):
        assert option in out


def test_string_targets_are_imported_only_when_their_command_runs(capsys):
    lazy = PaperCLI(
        PAPER,
        model_class="no_such_module:Model",
        commands={"scale": "tests_cli_targets:scale", "other": f"{__name__}:scale"},
    )
    with pytest.raises(ValueError, match="no module 'tests_cli_targets'"):
        lazy.command_help()  # a target whose module cannot be found fails loudly
    lazy = PaperCLI(
        PAPER, model_class="no_such_module:Model", commands={"scale": f"{__name__}:scale"}
    )
    assert lazy.main(["--help"]) == 0
    assert "Multiply values by a factor" in capsys.readouterr().out  # read with ast
    assert lazy.main(["scale", "--values", "[2]"]) == 0
    assert "scaled: [4.0]" in capsys.readouterr().out


def test_lightning_config_errors_are_one_line(cli, tmp_path, capsys):
    for args in (
        ["fit", "--config", str(tmp_path / "missing.yaml")],
        ["fit", "--model.lr", "abc"],
        ["fit", "--nope", "1"],
    ):
        assert cli.main(args) == 2, args
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and err.startswith("tiny: error: fit: "), err


@pytest.fixture
def shipped(tmp_path, monkeypatch):
    """A package folder with configs/ (as a wheel ships it), found by the CLI."""
    import icml26_shared.experiment as experiment

    root = tmp_path / "pkg"
    (root / "configs" / "reproduce").mkdir(parents=True)
    (root / "configs" / "fit-small.yaml").write_text(
        "# A small fit (test config).\nmodel:\n  lr: 0.05\ntrainer:\n  logger: false\n"
    )
    (root / "configs" / "reproduce" / "quick.yaml").write_text("# the quick preset\nn: 1\n")
    monkeypatch.setattr(experiment, "package_folder", lambda name: root)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    return root


def test_config_reference_resolves_shipped_configs_from_any_folder(cli, shipped, capsys):
    for ref in ["tiny:fit-small.yaml", "tiny:fit-small"]:
        assert cli.main(["fit", "--config", ref, "--print_config"]) == 0
        assert "lr: 0.05" in capsys.readouterr().out
    assert cli.main(["fit", "--config=tiny:fit-small", "--trainer.fast_dev_run", "true"]) == 0
    assert not list(Path.cwd().iterdir())  # no logger: no config.yaml written into the folder
    assert cli.main(["fit", "--config", "tiny:nope.yaml"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == "tiny: error: tiny ships no config 'nope.yaml' (list them: tiny configs)"
    (Path.cwd() / "tiny:fit-small").write_text("model:\n  lr: 0.5\n")  # a real file wins
    assert cli.main(["fit", "--config", "tiny:fit-small", "--print_config"]) == 0
    assert "lr: 0.5" in capsys.readouterr().out


def test_configs_command_lists_and_prints(cli, shipped, capsys):
    assert cli.main(["configs"]) == 0
    out = capsys.readouterr().out
    assert "fit-small.yaml" in out and "A small fit (test config)." in out
    assert "reproduce/quick.yaml" in out and "the quick preset" in out
    assert cli.main(["configs", "fit-small"]) == 0
    assert capsys.readouterr().out.startswith("# A small fit")
    assert cli.main(["configs", "--config", "x.yaml"]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


def test_ctrl_c_inside_fit_exits_130(tiny, tmp_path, capsys):
    import signal

    model_cls, data_cls = tiny

    class Interrupted(model_cls):
        def training_step(self, batch, batch_idx):
            signal.raise_signal(signal.SIGINT)  # what Ctrl-C delivers
            return super().training_step(batch, batch_idx)

    cli = PaperCLI(PAPER, model_class=Interrupted, datamodule_class=data_cls)
    before = signal.getsignal(signal.SIGINT)
    args = ["fit", "--trainer.max_epochs", "1", "--trainer.logger", "false"]
    assert cli.main([*args, "--trainer.default_root_dir", str(tmp_path)]) == 130
    assert capsys.readouterr().err.strip().endswith("tiny: interrupted")
    assert signal.getsignal(signal.SIGINT) is before


def test_fit_logs_metrics_to_csv_under_default_root_dir(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    root = tmp_path / "run"
    assert (
        cli.main(["fit", "--trainer.max_epochs", "2", "--trainer.default_root_dir", str(root)]) == 0
    )
    metrics = root / "lightning_logs" / "version_0" / "metrics.csv"
    assert metrics.is_file() and "val_loss" in metrics.read_text()
    assert (root / "lightning_logs" / "version_0" / "config.yaml").is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]  # nothing else in the cwd


def test_lightning_chatter_filter_keeps_errors_one_line(caplog):
    import logging

    from icml26_shared.trainer import silence_lightning_chatter

    silence_lightning_chatter()
    log = logging.getLogger("lightning.pytorch.utilities.rank_zero")
    with caplog.at_level(logging.INFO, logger=log.name):
        for line in ("GPU available: False, used: False", "TPU available: False, using: 0 TPU cores",
                     "💡 Tip: For seamless cloud uploads", "Seed set to 0",
                     "GPU available: True (cuda), used: True", "`Trainer.fit` stopped"):  # fmt: skip
            log.info(line)
    kept = [r.getMessage() for r in caplog.records]
    assert kept == ["GPU available: True (cuda), used: True", "`Trainer.fit` stopped"]
