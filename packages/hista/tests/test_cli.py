"""The hista command line: package commands, configs, and one clear line for bad input."""

from hista.cli import main


def test_sveb_generate_then_evaluate(tmp_path, capsys):
    path = tmp_path / "cases.json"
    assert main(["sveb-generate", "--out", str(path), "--problems", "6", "--group_size", "4"]) == 0
    assert main(["sveb-evaluate", "--cases", str(path)]) == 0
    out = capsys.readouterr().out
    assert "Numca" in out and "oracle" in out


def test_bad_inputs_give_one_line_and_exit_2(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    cases = [
        ["sveb-evaluate", "--cases", str(tmp_path / "missing.json")],
        ["sveb-evaluate", "--cases", str(bad)],
        ["sveb-generate", "--out", str(tmp_path / "x.json"), "--group_size", "1"],
        ["sveb-evaluate", "--cases", str(bad), "--method", "nope"],
    ]
    for args in cases:
        assert main(args) == 2, args
        err = capsys.readouterr().err
        assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err


def test_fit_smoke_config(tmp_path):
    from pathlib import Path

    cfg = Path(__file__).parents[1] / "configs" / "smoke.yaml"
    assert main(["fit", "--config", str(cfg), "--trainer.default_root_dir", str(tmp_path)]) == 0


def test_fit_rl_row_through_lightning_cli(tmp_path):
    from pathlib import Path

    cfg = Path(__file__).parents[1] / "configs" / "rl-smoke.yaml"
    assert main(["fit", "--config", str(cfg), "--trainer.default_root_dir", str(tmp_path)]) == 0


def test_every_training_row_has_a_config():
    from pathlib import Path

    import yaml

    root = Path(__file__).parents[1] / "configs"
    for loss in ("grpo", "dapo", "cispo"):
        for adv in ("group", "numca", "hista"):
            cfg = yaml.safe_load((root / f"rl-{loss}-{adv}.yaml").read_text())
            args = cfg["model"]["init_args"]
            assert cfg["model"]["class_path"] == "hista.lightning.PolicyRLModule"
            assert (args["loss_type"], args["advantage"]) == (loss, adv)
    assert yaml.safe_load((root / "sft.yaml").read_text())["model"]["class_path"].endswith(
        "SFTModule"
    )


def test_fit_bad_loss_type_is_one_line(tmp_path, capsys):
    from pathlib import Path

    from icml26_shared.contract import assert_one_line_error

    cfg = Path(__file__).parents[1] / "configs" / "rl-smoke.yaml"
    code = main(
        [
            "fit",
            "--config",
            str(cfg),
            "--model.init_args.loss_type",
            "ppo2",
            "--trainer.default_root_dir",
            str(tmp_path),
        ]
    )
    assert_one_line_error(capsys.readouterr().err, "unknown loss type", code)
