"""Your own episodes: tables -> episodes, .npz files, and the README's "On your own data" commands."""

import csv
import json
from pathlib import Path

import numpy as np
import pytest
import torch
from icml26_shared.contract import assert_one_line_error
from symicl.cli import main
from symicl.episodes import TableEpisodeSampler, load_episodes, read_table, save_episodes
from symicl.lightning import LinearTaskDataModule

DATA = Path(__file__).resolve().parent / "data"
IRIS = DATA / "iris.csv"


def test_table_episodes_are_standardised_subsets_with_relabelled_classes():
    feats, labels = read_table(str(IRIS))
    assert feats.shape == (150, 4) and sorted(set(labels.tolist())) == [0, 1, 2]
    sampler = TableEpisodeSampler(feats, labels, d=3, n_classes=2, n_context=20, seed=1)
    ep = sampler.sample(10)
    x = ep["x"].double()
    assert torch.allclose(x.mean(1), torch.zeros(10, 3, dtype=torch.float64), atol=1e-5)
    assert torch.allclose(
        x.std(1, unbiased=False), torch.ones(10, 3, dtype=torch.float64), atol=1e-4
    )
    assert set(ep["y"].unique().tolist()) <= {0, 1} and set(ep["yq"].tolist()) <= {0, 1}
    assert torch.equal(sampler.sample(3, start=2)["x"], ep["x"][2:5])  # per-episode seeds
    # every episode's rows come from the table: the standardisation is invertible per column
    for b in range(3):
        rows = np.concatenate([ep["x"][b].numpy(), ep["xq"][b : b + 1].numpy()])
        assert np.linalg.matrix_rank(rows) == 3


def test_table_errors_are_one_line(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("a,b,label\n1,x,0\n2,3,1\n")
    for source, match in [
        (str(tmp_path / "missing.csv"), "does not exist"),
        (str(bad), "non-numeric"),
        ("sklearn:mnist", "unknown sklearn table"),
    ]:
        with pytest.raises(ValueError, match=match):
            read_table(source)
    with pytest.raises(ValueError, match="fewer than d=9"):
        TableEpisodeSampler.from_source(str(IRIS), d=9, n_classes=2, n_context=8)
    with pytest.raises(ValueError, match="fewer than the N"):
        TableEpisodeSampler.from_source(str(IRIS), d=2, n_classes=2, n_context=200)


def test_episode_file_round_trip_with_probe_labels(tmp_path):
    batch = TableEpisodeSampler.from_source("sklearn:wine", 5, 3, 16, seed=0).sample(8)
    save_episodes(tmp_path / "e.npz", batch)
    back = load_episodes(tmp_path / "e.npz", 3)
    for key in ("x", "y", "xq", "yq"):
        assert torch.equal(back[key], batch[key])
    np.savez(tmp_path / "bad.npz", x=batch["x"], y=batch["y"], xq=batch["xq"], yq=batch["yq"] + 3)
    with pytest.raises(ValueError, match="probe labels yq"):
        load_episodes(tmp_path / "bad.npz", 3)


def test_data_module_trains_on_a_file_or_a_table(tmp_path):
    batch = TableEpisodeSampler.from_source(str(IRIS), 4, 2, 12, seed=0).sample(50)
    save_episodes(tmp_path / "e.npz", batch)
    dm = LinearTaskDataModule(
        4, 2, 12, batch_size=8, val_episodes=10, episodes=str(tmp_path / "e.npz")
    )
    dm.setup("fit")
    assert len(dm.train_dataloader().dataset) == 40 and len(dm.val_dataloader().dataset) == 10
    dm = LinearTaskDataModule(
        4, 2, 12, batch_size=8, train_batches=2, val_episodes=8, table=str(IRIS)
    )
    dm.setup("fit")
    assert tuple(next(iter(dm.train_dataloader()))["x"].shape) == (8, 12, 4)
    with pytest.raises(ValueError, match="either"):
        LinearTaskDataModule(4, 2, 12, episodes="a.npz", table=str(IRIS))


def test_own_data_commands_of_the_readme(tmp_path, monkeypatch, capsys):
    """Exactly the README's "On your own data" commands, on tests/data/iris.csv."""
    monkeypatch.chdir(tmp_path)
    csv_path = str(IRIS)
    assert (
        main(
            [
                "episodes",
                "--table",
                csv_path,
                "--d",
                "4",
                "--n_classes",
                "2",
                "--n_context",
                "16",
                "--episodes",
                "200",
                "--out",
                "iris.npz",
            ]
        )
        == 0
    )
    assert main(["fit", "--config", "symicl:own-episodes.yaml", "--data.episodes", "iris.npz"]) == 0
    ckpt = next(Path("lightning_logs").rglob("*.ckpt"))
    # the path the README's commands name (160 training episodes / 32 per batch x 5 epochs)
    assert ckpt == Path("lightning_logs/version_0/checkpoints/epoch=4-step=25.ckpt")
    assert main(["evaluate", "--checkpoint", str(ckpt), "--episode_file", "iris.npz"]) == 0
    assert (
        main(
            [
                "evaluate",
                "--checkpoint",
                str(ckpt),
                "--table",
                csv_path,
                "--n_context",
                "16",
                "--episodes",
                "50",
            ]
        )
        == 0
    )
    assert (
        main(
            [
                "classify",
                "--checkpoint",
                str(ckpt),
                "--episodes",
                "iris.npz",
                "--out",
                "predictions",
            ]
        )
        == 0
    )
    assert (
        main(
            [
                "explain",
                "--checkpoint",
                str(ckpt),
                "--episode_file",
                "iris.npz",
                "--fit_steps",
                "5",
                "--gd_steps",
                "[1]",
                "--out",
                "explained",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "model (tied, L=2)" in out and "best match:" in out
    result = json.loads(Path("predictions/result.json").read_text())
    assert len(result["predictions"]) == 200 and 0.0 <= result["accuracy"] <= 1.0
    with open("predictions/predictions.csv") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 200 and {"predicted", "true", "logit_0", "logit_1"} <= set(rows[0])
    assert rows[0]["predicted"] == str(result["predictions"][0])
    explained = json.loads(Path("explained/result.json").read_text())
    # the last layer's feature update never reaches the logits: reported inert, not learned
    assert explained["recursion"]["inert"]["ov"][-1][0][:3] == [True, True, True]
    assert Path("explained/decomposition.csv").read_text().startswith("layer,token")
    # a table too small for the episodes is one line, exit 2
    assert (
        main(
            ["evaluate", "--checkpoint", str(ckpt), "--table", "sklearn:wine", "--n_context", "500"]
        )
        == 2
    )
    assert_one_line_error(capsys.readouterr().err, "fewer than the N")
