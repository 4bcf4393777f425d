"""The videokr command line: one help, LightningCLI fit from the configs, one-line errors."""

import json
from pathlib import Path

import pytest
from icml26_shared.contract import assert_one_line_error
from videokr.cli import main

CONFIGS = Path(__file__).resolve().parents[1] / "configs"


@pytest.mark.parametrize("config", ["sft_perception.yaml", "sft_full.yaml", "grpo.yaml"])
def test_fit_each_config_fast_dev_run(config, tmp_path):
    code = main([
        "fit", "--config", str(CONFIGS / config),
        "--data.init_args.n_videos", "8", "--data.init_args.filtered", "false",
        "--data.init_args.batch_size", "2", "--model.init_args.d_model", "32",
        "--model.init_args.layers", "1", "--model.init_args.heads", "2",
        "--model.init_args.max_new_tokens", "4",
        "--trainer.fast_dev_run", "true", "--trainer.accelerator", "cpu", "--trainer.devices", "1",
        "--trainer.logger", "false", "--trainer.enable_checkpointing", "false",
        "--trainer.default_root_dir", str(tmp_path),
    ] + (["--model.init_args.group_size", "2"] if config == "grpo.yaml" else []))  # fmt: skip
    assert code == 0


def test_synth_then_eval(tmp_path, capsys):
    assert main(["synth", "--out", str(tmp_path), "--n_videos", "6"]) == 0
    rows = [json.loads(x) for x in (tmp_path / "eval_raw.jsonl").read_text().splitlines()]
    preds = tmp_path / "p.jsonl"
    preds.write_text(
        "".join(
            json.dumps({"id": r["id"], "output": f"<think>x</think>{r['solution']}"}) + "\n"
            for r in rows
        )
    )
    capsys.readouterr()
    assert (
        main(["eval", "--corpus", str(tmp_path / "eval_raw.jsonl"), "--predictions", str(preds)])
        == 0
    )
    res = json.loads(capsys.readouterr().out)
    assert res["overall"] == 1.0 and set(res["skill"]) <= {"VidR", "KnowVid", "KnowVidR"}
    preds.write_text(json.dumps({"id": "nope", "output": "x"}) + "\n")
    code = main(["eval", "--corpus", str(tmp_path / "eval_raw.jsonl"), "--predictions", str(preds)])
    assert_one_line_error(capsys.readouterr().err, "not in the corpus", code)
    code = main(
        [
            "eval",
            "--corpus",
            str(tmp_path / "eval_raw.jsonl"),
            "--predictions",
            str(preds),
            "--judge",
            "gpt",
        ]
    )
    assert_one_line_error(capsys.readouterr().err, "unknown judge", code)


def test_export_lmms_eval(tmp_path):
    assert main(["export-lmms-eval", "--out", str(tmp_path)]) == 0
    assert (tmp_path / "videokr_eval.yaml").is_file()


def test_predict_writes_jsonl_that_eval_scores(tmp_path, capsys):
    """fit -> checkpoint -> predict (PredictionWriter) -> eval, on the command line."""
    small = ["--config", str(CONFIGS / "sft_full.yaml"), "--data.init_args.n_videos", "6",
             "--data.init_args.filtered", "false", "--data.init_args.batch_size", "4",
             "--model.init_args.d_model", "32", "--model.init_args.layers", "1",
             "--model.init_args.heads", "2", "--model.init_args.max_new_tokens", "4",
             "--trainer.accelerator", "cpu", "--trainer.devices", "1",
             "--trainer.logger", "false", "--trainer.enable_progress_bar", "false",
             "--trainer.default_root_dir", str(tmp_path)]  # fmt: skip
    fit = ["--trainer.max_epochs", "1", "--trainer.check_val_every_n_epoch", "1"]
    assert main(["fit", *small, *fit, "--trainer.limit_val_batches", "1"]) == 0
    ckpt = next(tmp_path.rglob("*.ckpt"))
    preds = tmp_path / "preds.jsonl"
    code = main(["predict", *small, "--ckpt_path", str(ckpt),
                 "--trainer.callbacks+=videokr.lightning.PredictionWriter",
                 "--trainer.callbacks.output", str(preds)])  # fmt: skip
    assert code == 0
    rows = [json.loads(x) for x in preds.read_text().splitlines()]
    assert rows and all(set(r) == {"id", "output"} for r in rows)
    assert main(["synth", "--out", str(tmp_path / "w"), "--n_videos", "6"]) == 0
    capsys.readouterr()
    corpus = tmp_path / "w" / "eval_raw.jsonl"
    assert main(["eval", "--corpus", str(corpus), "--predictions", str(preds)]) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["scored"] == len(corpus.read_text().splitlines()) and 0.0 <= res["overall"] <= 1.0
    code = main(["eval", "--corpus", str(corpus), "--predictions", str(preds), "--judge", "chat"])
    assert_one_line_error(capsys.readouterr().err, "needs --judge_url", code)


def test_filter_command_reports_what_it_removed(tmp_path, capsys):
    assert main(["synth", "--out", str(tmp_path), "--n_videos", "120"]) == 0
    defects = {
        json.loads(x)["id"]: json.loads(x)["defect"]
        for x in (tmp_path / "defects.jsonl").read_text().splitlines()
    }
    train_ids = {
        json.loads(x)["id"] for x in (tmp_path / "train_raw.jsonl").read_text().splitlines()
    }
    out = tmp_path / "kept.jsonl"
    assert main(["filter", "--corpus", str(tmp_path / "train_raw.jsonl"), "--out", str(out),
                 "--rationale", "true", "--review_sheet", str(tmp_path / "sheet.csv")]) == 0  # fmt: skip
    report = json.loads((tmp_path / "kept.jsonl.report.json").read_text())
    assert set(report) == {"blind_text", "near_duplicate", "cot_validation"}
    removed = {i for r in report.values() for i in r}
    for cls in ("shortcut", "near_duplicate", "bad_rationale"):
        planted = [i for i, d in defects.items() if d == cls and i in train_ids]
        caught = sum(i in removed for i in planted)
        assert planted and caught >= (0.8 if cls == "shortcut" else 1.0) * len(planted), cls
    kept = [json.loads(x)["id"] for x in out.read_text().splitlines()]
    assert not set(kept) & removed and (tmp_path / "sheet.csv").is_file()


def test_own_data_readme_commands(capsys):
    """The README's 'On your own data' commands, on the example files in tests/data."""
    import json
    from pathlib import Path

    from videokr.cli import main
    from videokr.rewards import rouge_reward

    data = Path(__file__).parent / "data"
    corpus, preds = str(data / "own_eval.jsonl"), str(data / "own_predictions.jsonl")
    main(["eval", "--corpus", corpus, "--predictions", preds, "--judge", "rouge"])
    res = json.loads(capsys.readouterr().out)
    rouge = rouge_reward("the cell is stained and counts", "the cells were stained and counted")
    assert res["problem_type"]["multiple choice"] == 0.5  # q1 right, q2 wrong
    assert res["problem_type"]["numerical"] == 1.0  # 1200 == 1,200
    assert abs(res["problem_type"]["open-ended"] - rouge) < 1e-6
    assert abs(res["overall"] - (1 + 0 + rouge + 1) / 4) < 1e-6
    main(["eval", "--corpus", corpus, "--predictions", preds])  # rule judge: open-ended skipped
    res = json.loads(capsys.readouterr().out)
    assert res["skipped"] == 1 and res["scored"] == 3
