"""The eostok command line: help, and one clear line for bad input."""

from eostok.cli import main
from eostok.paper import PAPER


def test_help_lists_commands(capsys):
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    assert "reproduce" in out
    assert PAPER.title in out


def test_unknown_command_exits_2(capsys):
    assert main(["no-such-command"]) == 2
    err = capsys.readouterr().err
    assert "unknown command" in err
    assert "Traceback" not in err


def test_every_config_parses_and_fast_dev_runs(tmp_path):
    from pathlib import Path

    configs = sorted((Path(__file__).parents[1] / "configs").glob("*.yaml"))
    assert len(configs) >= 5
    for cfg in configs:
        if cfg.stem == "prior-stage":
            continue  # needs a stage-1 checkpoint; covered by test_lightning
        code = main(
            ["fit", "--config", str(cfg), "--trainer.fast_dev_run=1",
             f"--trainer.default_root_dir={tmp_path}", "--trainer.logger=false",
             "--trainer.enable_checkpointing=false", "--model.width=16", "--model.depth=1",
             "--model.prior_depth=1", "--model.codebook_size=8"]
        )  # fmt: skip
        assert code in (0, None), cfg.name


def test_sample_missing_checkpoint_is_one_line(capsys, tmp_path):
    from icml26_shared.contract import assert_one_line_error

    code = main(
        ["sample", "--checkpoint", str(tmp_path / "none.ckpt"), "--out", str(tmp_path / "x.png")]
    )
    assert code != 0
    assert_one_line_error(capsys.readouterr().err, "does not exist")
