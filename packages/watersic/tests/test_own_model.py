"""Your own model and text (README "On your own data"): a local Hugging Face Llama-style folder
plus a local text file quantize and evaluate from the CLI, exactly as the README's commands.

``tests/data/tiny-llama-hf`` is made by ``tests/data/make_tiny_llama_hf.py``;
``tests/data/own-text.txt`` is a short plain-text file.
"""

import json
from pathlib import Path

import pytest
import torch
from watersic.cli import main
from watersic.lm_data import read_text
from watersic.model_quantization import load_quantized

DATA = Path(__file__).parent / "data"
MODEL, TEXT = DATA / "tiny-llama-hf", DATA / "own-text.txt"


def test_local_model_and_text_quantize_and_evaluate(tmp_path, capsys):
    art, ev = tmp_path / "q", tmp_path / "eval"
    argv = ["quantize", "--model", str(MODEL), "--calibration", str(TEXT), "--rate", "3"]
    argv += ["--calibration_tokens", "1024", "--seq_len", "64", "--out", str(art)]
    assert main(argv) == 0
    out = capsys.readouterr()
    assert "14 layers" in out.out and "quantize: block 2/2 done" in out.err  # progress lines
    manifest = json.loads((art / "manifest.json").read_text())
    assert manifest["source"]["model"] == str(MODEL.resolve())
    assert abs(manifest["rate"] - 3.0) < 0.05
    assert (art / "tokenizer.json").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary left

    argv = ["evaluate", "--artifact", str(art), "--text", str(TEXT), "--seq_len", "64"]
    assert main([*argv, "--out", str(ev)]) == 0
    result = json.loads((ev / "result.json").read_text())
    assert result["windows"] == len(TEXT.read_bytes()) // 64  # byte tokenizer: 1 token/byte
    assert 0 < result["kl_bits"] < 0.05  # 3 bits/weight: close to the float model
    assert result["perplexity"] >= result["perplexity_full_precision"] * 0.98
    # the reloaded artifact is the quantized model: its weights differ from the float ones
    from transformers import AutoModelForCausalLM

    fp = AutoModelForCausalLM.from_pretrained(MODEL)
    q = load_quantized(art)
    name = "model.layers.0.mlp.down_proj.weight"
    assert not torch.equal(fp.state_dict()[name], q.state_dict()[name])
    assert torch.equal(fp.state_dict()["lm_head.weight"], q.state_dict()["lm_head.weight"])


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--calibration", "no/such/file.txt"], "neither one of"),
        (["--damping", "-1"], "damping must be >= 0"),
        (["--calibration", "stdlib", "--seq_len", "64", "--calibration_tokens", "32"], "seq_len"),
    ],
)
def test_own_model_bad_input_one_line(argv, message, capsys):
    assert main(["quantize", "--model", str(MODEL), *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1


def test_out_that_is_not_an_artifact_is_refused(tmp_path, capsys):
    (tmp_path / "notes.txt").write_text("keep me")
    assert main(["quantize", "--model", "synthetic", "--out", str(tmp_path)]) == 2
    assert "not an empty folder or a watersic artifact" in capsys.readouterr().err
    assert (tmp_path / "notes.txt").read_text() == "keep me"


def test_evaluate_rejects_a_folder_that_is_no_artifact(tmp_path, capsys):
    assert main(["evaluate", "--artifact", str(tmp_path), "--text", str(TEXT)]) == 2
    assert "not a saved watersic artifact" in capsys.readouterr().err


def test_read_text_forms(tmp_path):
    (tmp_path / "a.jsonl").write_text('{"text": "first"}\n\n{"text": "second"}\n')
    assert read_text(tmp_path / "a.jsonl") == "first\n\nsecond"
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "2.txt").write_text("two")
    (folder / "1.txt").write_text("one")
    assert read_text(folder) == "one\n\ntwo"
    (tmp_path / "bad.jsonl").write_text('{"title": "x"}\n')
    with pytest.raises(ValueError, match="line 1: expected an object with a 'text' string"):
        read_text(tmp_path / "bad.jsonl")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="no \\*.txt files"):
        read_text(tmp_path / "empty")
