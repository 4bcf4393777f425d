"""The watersic command line: package commands and one clear line for bad input.

``--help``, an unknown command, a missing or malformed ``--config`` and an unwritable
``reproduce --out`` are checked for every package by the registry contract
(``ci/test_registry.py``).
"""

import subprocess
import sys

import pytest
import torch
from watersic.cli import main


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["quantize", "--rate", "0"], "out of range"),
        (["quantize", "--rate", "17"], "out of range"),
        (["rd-curve", "--spectrum", "nope"], "unknown spectrum"),
        (["inspect", "--artifact", "/nonexistent/dir"], "not a saved watersic artifact"),
        (["benchmark", "--size", "2"], "at least 8"),
        (["benchmark", "--rate", "0"], "out of range"),
        (["quantize", "--rate", "nan"], "rate"),
        (["quantize", "--accounting", "huffman"], "accounting"),
        (["rd-curve", "--rows", "0"], "must be positive"),
        (["quantize", "--model", "synthetic:nope"], "unknown spectrum"),
        (["quantize", "--model", "synthetic", "--rate", "0"], "out of range"),
    ],
)
def test_bad_input_one_line_exit_2(argv, message, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert message in err
    assert len(err.splitlines()) == 1 and "Traceback" not in err


def test_unknown_method_exits_2(capsys):
    assert main(["quantize", "--method", "awq"]) == 2
    assert "awq" in capsys.readouterr().err


def test_unknown_model_offline_gives_the_offline_message(monkeypatch, capsys):
    from icml26_shared import hub

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    hub.hub_reachable.cache_clear()
    try:
        assert main(["quantize", "--model", "no-such-org/no-such-model"]) == 2
    finally:
        hub.hub_reachable.cache_clear()
    err = capsys.readouterr().err.strip()
    assert "no-such-org/no-such-model" in err and "tiny-llama" in err
    assert len(err.splitlines()) == 1 and "Traceback" not in err


def test_rd_curve_prints_gaps(capsys):
    assert main(["rd-curve", "--spectrum", "identity", "--rows", "256", "--columns", "16",
                 "--rates", "[3]", "--anchors", "false"]) == 0  # fmt: skip
    out = capsys.readouterr().out
    assert "watersic (pooled)" in out and "gptq" in out


def test_rd_curve_does_not_import_lightning():
    """Issue #51: a command that does not train answers without importing Lightning."""
    code = (
        "import sys; from watersic.cli import main; "
        "code = main(['rd-curve', '--spectrum', 'identity', '--rows', '256', '--columns', '16', "
        "'--rates', '[3]']); "
        "assert code == 0, code; "
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] == 'lightning'); "
        "assert not heavy, heavy"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "watersic (pooled)" in proc.stdout


def test_quantize_saves_and_inspect_reads(tmp_path, capsys):
    out = tmp_path / "art"
    assert main(["quantize", "--quick", "--rate", "3", "--out", str(out)]) == 0
    assert (out / "manifest.json").is_file()
    assert main(["inspect", "--artifact", str(out)]) == 0
    assert '"method": "watersic"' in capsys.readouterr().out


def test_quantize_synthetic_writes_a_decodable_bitstream(tmp_path, capsys):
    from watersic.quantized_matrix import QuantizedMatrix

    out = tmp_path / "syn"
    assert (
        main(["quantize", "--model", "synthetic:diag_1e2", "--rate", "2", "--out", str(out)]) == 0
    )
    text = capsys.readouterr().out
    assert "bitstream" in text and "gap to the IT limit" in text
    q = QuantizedMatrix.from_bytes((out / "layer.wsic").read_bytes())
    assert q.shape == (1024, 128) and torch.isfinite(q.dequantize()).all()
    assert main(["inspect", "--artifact", str(out)]) == 0
    assert '"layer": "synthetic:diag_1e2"' in capsys.readouterr().out


CONFIGS = __import__("pathlib").Path(__file__).resolve().parents[1] / "configs"


@pytest.mark.parametrize(
    ("config", "small"),
    [
        (
            "pretrain_tiny_llama.yaml",
            ["--model.init_args.hidden_size", "16", "--model.init_args.intermediate_size", "32",
             "--model.init_args.num_layers", "1", "--model.init_args.num_heads", "2",
             "--model.init_args.seq_len", "16", "--data.init_args.seq_len", "16",
             "--data.init_args.batch_size", "4", "--data.init_args.train_bytes", "20000"],
        ),
        (
            "watersic_ft_tiny_llama.yaml",
            ["--model.init_args.hidden_size", "16", "--model.init_args.intermediate_size", "32",
             "--model.init_args.num_layers", "1", "--model.init_args.num_heads", "2",
             "--model.init_args.seq_len", "16", "--model.init_args.pretrain_steps", "0",
             "--model.init_args.calib_sequences", "16", "--model.init_args.rate", "4",
             "--data.init_args.seq_len", "16",
             "--data.init_args.batch_size", "4", "--data.init_args.train_sequences", "16",
             "--data.init_args.val_sequences", "8"],
        ),
    ],
)  # fmt: skip
def test_fit_configs_run(config, small, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # LightningCLI writes its config.yaml into the run folder
    argv = ["fit", "--config", str(CONFIGS / config), *small, "--trainer.fast_dev_run", "true"]
    assert main(argv) == 0
