"""The eostok command line: help, and one clear line for bad input."""

import pytest
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
    assert len(configs) >= 8
    for cfg in configs:
        if cfg.stem == "prior-stage":
            continue  # needs a stage-1 checkpoint; covered by test_lightning
        if cfg.stem.startswith("imagenet"):
            continue  # the real path: test_offline_real_path_is_one_line
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
    cfg = Path(__file__).parents[1] / "configs" / "imagenet-e2e-apr-align.yaml"
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


def test_reproduce_workers_and_seed_summary(monkeypatch):
    from eostok.reproduce import KEY_VARIANTS, METRICS, _seed_summary, reproduce_workers
    from icml26_shared.results import Table

    monkeypatch.setenv("EOSTOK_REPRODUCE_WORKERS", "3")
    assert reproduce_workers() == 3
    monkeypatch.setenv("EOSTOK_REPRODUCE_WORKERS", "zero")
    with pytest.raises(ValueError, match="EOSTOK_REPRODUCE_WORKERS"):
        reproduce_workers()
    t = Table("t", ["variant", "seed", *METRICS])
    for sd, v in ((0, 1.0), (1, 3.0)):
        t.add_row(variant=KEY_VARIANTS[0], seed=sd, **dict.fromkeys(METRICS, v))
    row = _seed_summary(t, KEY_VARIANTS[:1], (0, 1)).rows[0]
    assert row["n"] == 2 and row["gFID"] == "2 ± 1.4"  # mean 2, sample std sqrt(2)


def test_reproduce_variant_lists_and_job_order(monkeypatch):
    import eostok.reproduce as r

    assert set(r.KEY_VARIANTS) <= set(r.FULL_DIGITS_VARIANTS) <= set(r.VARIANTS)
    assert set(r.SHAPES_VARIANTS) <= set(r.VARIANTS)
    assert r.FULL.steps > r.QUICK.steps and r.QUICK.shapes_steps == 0 < r.FULL.shapes_steps
    ran = []
    monkeypatch.setattr(r, "_job", lambda job: (ran.append(job[0]) or {"v": job[0]}, None))
    monkeypatch.setenv("EOSTOK_REPRODUCE_WORKERS", "1")
    jobs = [
        ("e2e CE-only", 0, 0, None, 5),
        ("two-stage", 0, 0, None, 5),
        ("e2e + APR", 0, 0, None, 9),
    ]
    out = r._run_jobs(jobs)
    assert ran == ["two-stage", "e2e + APR", "e2e CE-only"]  # two-stage first, then most steps
    assert [row["v"] for row, _ in out] == ["e2e CE-only", "two-stage", "e2e + APR"]  # job order


def test_every_variant_trains_one_step():
    import eostok.reproduce as r
    from eostok.digits_data import load_digits_images

    xtr, ytr, _, _ = load_digits_images()
    s = r.Setting(steps=1, key_seeds=(0,), n_samples=10, feature_steps=1, shapes_steps=0,
                  batch_size=4, codebook_size=8, width=16)  # fmt: skip
    teacher = r.train_feature_net(xtr[:32], ytr[:32], seed=1, steps=1)
    for name in r.VARIANTS:
        module, wall = r.train_variant(name, s, xtr, ytr, teacher, seed=0)
        assert wall >= 0 and module.hparams.codebook_size == 8
    m, _ = r.train_variant("e2e + APR + align, tokenizer lr x0.1", s, xtr, ytr, teacher, 0)
    assert [g["lr"] for g in m.configure_optimizers().param_groups] == [1e-3, 1e-4]


def test_reproduce_tables_env(monkeypatch):
    from eostok.reproduce import reproduce_tables

    monkeypatch.delenv("EOSTOK_REPRODUCE_TABLES", raising=False)
    assert reproduce_tables() == ("digits", "shapes")
    monkeypatch.setenv("EOSTOK_REPRODUCE_TABLES", " shapes ")
    assert reproduce_tables() == ("shapes",)
    for bad in ("", "cifar", "digits,mnist"):
        monkeypatch.setenv("EOSTOK_REPRODUCE_TABLES", bad)
        with pytest.raises(ValueError, match="EOSTOK_REPRODUCE_TABLES"):
            reproduce_tables()
