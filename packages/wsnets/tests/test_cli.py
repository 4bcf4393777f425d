"""The wsnets package commands and one clear line for their bad input.

``--help``, unknown commands, missing / malformed configs and corrupt checkpoints are the
generated package contract (``ci/test_registry.py``)."""

from pathlib import Path

import pytest
from icml26_shared.contract import assert_one_line_error
from icml26_shared.paper import discover_papers
from wsnets.cli import main

CONFIGS = Path(__file__).resolve().parent.parent / "configs"


def _one_line_error(capsys, match):
    assert_one_line_error(capsys.readouterr().err, match)


def test_registered_with_the_umbrella():
    assert "wsnets" in discover_papers(broken={})


def test_check_equivariance_command(capsys):
    assert main(["check-equivariance", "--arch", "[2, 4, 3, 1]", "--trials", "2"]) == 0
    out = capsys.readouterr().out
    for name in ("dws ", "np_pe", "gmn", "canon"):
        line = next(li for li in out.splitlines() if li.startswith(name))
        assert line.endswith(" symmetric"), line
    assert "NOT symmetric" in next(li for li in out.splitlines() if li.startswith("mlp "))


def test_fit_smoke_then_edit(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("WSNETS_CACHE", str(tmp_path / "cache"))
    ck = tmp_path / "ckpt"
    rc = main(
        [
            "fit",
            "--config",
            str(CONFIGS / "smoke.yaml"),
            "--trainer.enable_checkpointing",
            "true",
            "--trainer.default_root_dir",
            str(ck),
        ]
    )
    assert rc == 0
    ckpt = next(ck.rglob("*.ckpt"))
    zoo = tmp_path / "zoo"
    assert main(["make-zoo", "--out", str(zoo), "--n", "3", "--hidden", "4", "--steps", "2"]) == 0
    # the smoke editor is 2-4-4-1 but make-zoo made 2-4-4-1 INRs on 16x16 images: arch matches
    assert main(["edit", "--ckpt", str(ckpt), "--inr", str(zoo)]) == 0
    assert "edited 3 INRs with F=2" in capsys.readouterr().out
    bad = tmp_path / "zoo8"
    assert main(["make-zoo", "--out", str(bad), "--n", "2", "--hidden", "5", "--steps", "1"]) == 0
    capsys.readouterr()
    assert main(["edit", "--ckpt", str(ckpt), "--inr", str(bad)]) == 2
    _one_line_error(capsys, "differs from the configured")


@pytest.mark.parametrize(
    "argv, match",
    [
        (["edit", "--ckpt", "missing.ckpt", "--inr", "."], "not a zoo folder"),
        (["benchmark", "--F", "0"], "F must be >= 1"),
        (["make-zoo", "--out", "x", "--n", "0"], "n must be >= 1"),
        (["check-equivariance", "--arch", "[2, 3]"], "at least one hidden layer"),
        (["make-zoo", "--out", "x", "--kind", "cifar"], "kind"),
        (["f-sweep", "--F", "[1, 0]"], "F must be >= 1"),
        (["f-sweep", "--model", "statnn"], "model must be one of"),
        (["f-sweep", "--lr", "0"], "lr must be > 0"),
    ],
)
def test_bad_input_is_one_line(capsys, argv, match):
    assert main(argv) == 2
    _one_line_error(capsys, match)


def test_edit_rejects_zoo_without_variant(tmp_path, capsys):
    (tmp_path / "zoo.pt").write_bytes(b"")
    (tmp_path / "meta.json").write_text("{}")
    ckpt = tmp_path / "x.ckpt"
    ckpt.write_bytes(b"not a checkpoint")
    assert main(["edit", "--ckpt", str(ckpt), "--inr", str(tmp_path)]) == 2
    _one_line_error(capsys, "does not name its SIREN variant")


def test_edit_rejects_a_broken_checkpoint(tmp_path, capsys):
    from wsnets.inr_zoo import make_sine_zoo

    make_sine_zoo(2, steps=1).save(tmp_path / "zoo")
    ckpt = tmp_path / "x.ckpt"
    ckpt.write_bytes(b"not a checkpoint")
    assert main(["edit", "--ckpt", str(ckpt), "--inr", str(tmp_path / "zoo")]) == 2
    _one_line_error(capsys, "cannot read checkpoint")


def test_every_config_names_a_known_model_and_importable_classes():
    import importlib

    import yaml
    from wsnets.architectures import INVARIANT_ONLY, MODELS

    files = sorted(CONFIGS.glob("*.yaml"))
    assert len(files) >= 30
    seen = set()
    for f in files:
        cfg = yaml.safe_load(f.read_text())
        for part in ("model", "data"):
            mod, _, cls = cfg[part]["class_path"].rpartition(".")
            assert hasattr(importlib.import_module(mod), cls), f
        seen.add(cfg["model"]["init_args"]["model"])
    assert (
        seen <= set(MODELS + INVARIANT_ONLY)
        and {"nft", "hnp", "gmn", "dws", "np_pe", "statnn"} <= seen
    )


def test_f_sweep_prints_one_row_per_F_with_matched_budgets(tmp_path, capsys):
    argv = ["f-sweep", "--F", "[1, 2]", "--epochs", "1", "--n_images", "12", "--fit_steps", "2"]
    assert main([*argv, "--cache_dir", str(tmp_path)]) == 0
    rows = [
        r.split("|")[1:-1] for r in capsys.readouterr().out.splitlines() if r.startswith("| gmn")
    ]
    assert [int(r[1]) for r in rows] == [1, 2]
    params = [int(r[3]) for r in rows]
    assert params[1] <= params[0]  # F=2 editor within the F=1 budget
    assert all(float(r[4]) > 0 for r in rows)
