"""User model zoos (a folder of checkpoints + labels.csv): encoding, symmetry, CLI fit/predict."""

import csv
import json
from pathlib import Path

import pytest
import torch
from icml26_shared.contract import assert_one_line_error
from wsnets.architectures import build_model
from wsnets.cli import main
from wsnets.model_zoo import SmallCNN, encode_state_dict, load_model_zoo
from wsnets.weight_space import WeightSpace

DATA = Path(__file__).resolve().parent / "data" / "cnn_zoo"


def _permute_cnn(sd, perm1, perm2):
    """Permute the hidden channels of a SmallCNN state dict (the function is unchanged)."""
    out = dict(sd)
    out["conv1.weight"], out["conv1.bias"] = sd["conv1.weight"][perm1], sd["conv1.bias"][perm1]
    out["conv2.weight"] = sd["conv2.weight"][perm2][:, perm1]
    out["conv2.bias"] = sd["conv2.bias"][perm2]
    out["head.weight"] = sd["head.weight"][:, perm2]
    return out


def test_channel_permutation_keeps_function_and_invariant_models():
    torch.manual_seed(0)
    net = SmallCNN(4)
    sd = net.state_dict()
    p1, p2 = torch.randperm(4), torch.randperm(4)
    sd_p = _permute_cnn(sd, p1, p2)
    x = torch.randn(5, 1, 8, 8)
    net_p = SmallCNN(4)
    net_p.load_state_dict(sd_p)
    assert torch.allclose(net(x), net_p(x), atol=1e-5)  # planted symmetry of the zoo
    enc = [encode_state_dict(s) for s in (sd, sd_p)]
    vs = [WeightSpace([w[None] for w in e[0]], [b[None] for b in e[1]]) for e in enc]
    assert vs[0].arch == (1, 4, 4, 2) and vs[0].channels == 9
    # the encoding commutes with the permutation: rho(tau) encode(sd) == encode(sd_p)
    assert torch.equal(vs[0].permute([p1, p2]).flatten(), vs[1].flatten())
    for name in ("dws", "gmn", "statnn"):
        m = build_model(name, vs[0].arch, 4, 2, "invariant", 1, in_channels=9).eval()
        with torch.no_grad():
            a, b = m(vs[0]), m(vs[1])
        assert torch.allclose(a, b, atol=1e-5), name
    flat = build_model("mlp", vs[0].arch, 8, 1, "invariant", 1, in_channels=9).eval()
    with torch.no_grad():
        assert not torch.allclose(flat(vs[0]), flat(vs[1]), atol=1e-4)  # the flat MLP is not


def test_encoding_rejects_layers_that_do_not_chain():
    sd = SmallCNN(4).state_dict()
    sd["head.weight"] = torch.zeros(2, 5)
    with pytest.raises(ValueError, match="must chain"):
        encode_state_dict(sd)


def test_shipped_folder_loads():
    zoo = load_model_zoo(DATA)
    assert len(zoo) == 24 and zoo.meta["layers"] == ["conv3x3", "conv3x3", "linear"]
    y = zoo.targets["label"]
    assert y.dtype == torch.float32 and y.min() < 0.6 and y.max() > 0.9  # chance .. trained


def test_cnn_zoo_folder_trains_and_predicts_through_the_cli(tmp_path, monkeypatch, capsys):
    """The README's "On your own data" commands, on tests/data/cnn_zoo."""
    monkeypatch.chdir(tmp_path)
    args = ["fit", "--config", "wsnets:cnn-zoo.yaml", "--data.init_args.path", str(DATA),
            "--trainer.max_epochs", "3", "--trainer.default_root_dir", "runs"]  # fmt: skip
    assert main(args) == 0
    ckpt = Path("lightning_logs/cnn-zoo/version_0/checkpoints/best.ckpt")  # the README's path
    assert ckpt.is_file()
    assert main(["predict-zoo", "--ckpt", str(ckpt), "--zoo", str(DATA), "--out", "preds"]) == 0
    out = capsys.readouterr().out
    assert "kendall_tau" in out and "n 24" in out
    with open("preds/predictions.csv") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 24 and {r["file"] for r in rows} == {f"cnn_{k:03d}.pt" for k in range(24)}
    assert all(torch.isfinite(torch.tensor(float(r["prediction"]))) for r in rows)
    result = json.loads(Path("preds/result.json").read_text())
    assert result["metrics"]["n"] == 24 and result["arch"] == [1, 4, 4, 2]


def test_predict_zoo_bad_input_is_one_line(tmp_path, capsys):
    assert main(["predict-zoo", "--ckpt", "missing.ckpt", "--zoo", str(tmp_path)]) == 2
    assert_one_line_error(capsys.readouterr().err, "no labels.csv")
    (tmp_path / "labels.csv").write_text("file,label\nnope.pt,1\n")
    assert main(["predict-zoo", "--ckpt", "missing.ckpt", "--zoo", str(tmp_path)]) == 2
    assert_one_line_error(capsys.readouterr().err, "not in")
