"""The hista command line: package commands, configs, and one clear line for bad input."""

import pytest
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


def test_on_your_own_data_jsonl_exactly_as_in_the_readme(tmp_path, capsys, monkeypatch):
    """README "On your own data": `hista sveb-evaluate --cases tests/data/sveb_states.jsonl
    --out sveb-out` on states of word problems (no ArithChain fields)."""
    import json
    from pathlib import Path

    data = Path(__file__).parent / "data" / "sveb_states.jsonl"
    monkeypatch.chdir(tmp_path)
    assert main(["sveb-evaluate", "--cases", str(data), "--out", "sveb-out"]) == 0
    out = capsys.readouterr().out
    assert "6 states of 3 problems" in out and "nan" not in out
    rows = {
        r["estimator"]: r
        for r in json.loads((tmp_path / "sveb-out" / "result.json").read_text())["rows"]
    }
    assert (tmp_path / "sveb-out" / "results.md").is_file()
    states = [json.loads(line) for line in data.read_text().splitlines()]
    target = [sum(s["mc_rewards"]) / len(s["mc_rewards"]) for s in states]
    group = [sum(s["pool_rewards"]) / len(s["pool_rewards"]) for s in states]
    want = sum(abs(g - t) for g, t in zip(group, target, strict=True)) / len(states)
    assert rows["group mean (GRPO)"]["MAE vs V_MC"] == pytest.approx(want)
    # Numca by hand, first state "3 * 4 = 12, ": pool rollouts 1, 2, 4 pass through
    # {3, 4, 12} (rewards 1, 0, 1) -> 2/3; the group mean would say 1/2; target 6/8
    assert set(rows) == {"group mean (GRPO)", "VinePPO MC K=4", "Numca"}
    assert rows["Numca"]["MAE vs V_MC"] < rows["group mean (GRPO)"]["MAE vs V_MC"]
    # the README's second command: Numca with shrinkage toward the parent state
    args = ["--cases", str(data), "--numca_prior", "4", "--numca_unseen", "parent"]
    assert main(["sveb-evaluate", *args]) == 0
    out = capsys.readouterr().out
    assert "Numca" in out and "nan" not in out


def test_jsonl_bad_lines_name_the_line(tmp_path, capsys):
    bad = tmp_path / "bad.jsonl"
    bad.write_text(
        '{"problem": "q", "prefix": "1 ", "pool": ["1 2", "1 3"], "pool_rewards": [1, 0],'
        ' "mc_rewards": [1]}\n{"problem": "q", "prefix": "1 "}\n'
    )
    assert main(["sveb-evaluate", "--cases", str(bad)]) == 2
    err = capsys.readouterr().err
    assert (
        "line 2 lacks pool, pool_rewards, mc_rewards" in err and len(err.strip().splitlines()) == 1
    )
    bad.write_text(
        '{"problem": "q", "prefix": "1 ", "pool": ["1 2", "1 3"], "pool_rewards": [1, 7],'
        ' "mc_rewards": [1]}\n'
    )
    assert main(["sveb-evaluate", "--cases", str(bad)]) == 2
    assert "[0, 1]" in capsys.readouterr().err
    assert main(["sveb-evaluate", "--cases", str(bad.with_suffix(".x")), "--method", "oracle"]) == 2
