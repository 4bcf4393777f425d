"""Own model: `poet-x fit --model DIR --data FILE` then `poet-x merge` (README "On your own data").

The exported folder must load with plain ``transformers`` (offline, from a local folder) and
give the merged POET model's outputs within 1e-5, after training moved it away from the
model it started from (so the equality is not the trivial one at Q = 0).
"""

from pathlib import Path

import pytest
import torch
from poet_x.cli import main, own_model_arguments
from poet_x.lightning import CausalLMModule
from poet_x.model_surgery import poet_layers

DATA = Path(__file__).parent / "data"
STEPS = ["--trainer.max_steps", "4", "--trainer.val_check_interval", "2",
         "--model.init_args.merge_interval", "3", "--model.init_args.block_size", "16",
         "--model.init_args.poet_lr", "0.05", "--data.init_args.seq_len", "32",
         "--data.init_args.batch_size", "4", "--trainer.enable_progress_bar", "false"]  # fmt: skip


def _fit_and_merge(model_dir: Path, tmp_path: Path, monkeypatch, extra=()):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    args = ["fit", "--model", str(model_dir), "--data", str(DATA / "corpus.txt"), *STEPS, *extra]
    assert main(args) == 0
    ckpts = sorted(tmp_path.glob("lightning_logs/version_0/checkpoints/*.ckpt"))
    assert len(ckpts) == 1
    assert (tmp_path / "lightning_logs/version_0/metrics.csv").is_file()
    out = tmp_path / "merged"
    assert main(["merge", "--checkpoint", str(ckpts[0]), "--out", str(out)]) == 0
    return ckpts[0], out


def _compare(ckpt: Path, out: Path, start_dir: Path) -> None:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    poet = CausalLMModule.load_from_checkpoint(ckpt, map_location="cpu").eval()
    layers = poet_layers(poet.model)
    assert layers and any(
        float(p.detach().abs().max()) > 0 for la in layers for p in (la.q_in, la.q_out)
    )
    plain = AutoModelForCausalLM.from_pretrained(out, local_files_only=True).eval()
    start = AutoModelForCausalLM.from_pretrained(start_dir, local_files_only=True).eval()
    tok = AutoTokenizer.from_pretrained(out, local_files_only=True)
    ids = torch.tensor([tok("Heap queue algorithm (a.k.a. priority queue).")["input_ids"]])
    assert not any("POET" in type(m).__name__ for m in plain.modules())
    with torch.no_grad():
        a, b, c = plain(input_ids=ids).logits, poet(ids), start(input_ids=ids).logits
    assert float((a - b).abs().max()) < 1e-5
    assert float((a - c).abs().max()) > 1e-3  # training changed the model


def test_fit_own_llama_then_merge_loads_in_transformers(tmp_path, monkeypatch):
    ckpt, out = _fit_and_merge(DATA / "tiny-llama", tmp_path, monkeypatch)
    _compare(ckpt, out, DATA / "tiny-llama")


def test_fit_own_gpt2_conv1d_with_bias_before_rotation(tmp_path, monkeypatch):
    import shutil

    from transformers import GPT2Config, GPT2LMHeadModel

    gpt2_dir = tmp_path / "tiny-gpt2"
    torch.manual_seed(0)
    cfg = GPT2Config(vocab_size=384, n_positions=64, n_embd=32, n_layer=1, n_head=2)
    model = GPT2LMHeadModel(cfg)
    with torch.no_grad():  # non-zero biases, so their placement matters
        for name, p in model.named_parameters():
            if name.endswith("bias"):
                p.normal_(0, 0.5)
    model.save_pretrained(gpt2_dir)
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(DATA / "tiny-llama" / name, gpt2_dir / name)
    ckpt, out = _fit_and_merge(gpt2_dir, tmp_path, monkeypatch)
    poet = CausalLMModule.load_from_checkpoint(ckpt, map_location="cpu")
    assert {la.export_as for la in poet_layers(poet.model)} == {"conv1d"}
    assert all(la.bias_before_rotation for la in poet_layers(poet.model))
    _compare(ckpt, out, gpt2_dir)


def test_pretrained_model_keeps_its_function_at_conversion():
    from transformers import AutoModelForCausalLM

    module = CausalLMModule(pretrained=str(DATA / "tiny-llama"), block_size=16, mode="mem")
    start = AutoModelForCausalLM.from_pretrained(DATA / "tiny-llama", local_files_only=True)
    ids = torch.arange(20)[None]
    with torch.no_grad():  # no row normalisation for a pretrained model: same function
        assert torch.allclose(module(ids), start(input_ids=ids).logits, atol=1e-5)
    assert module.model.training


@pytest.mark.parametrize(
    ("argv", "expected_tail"),
    [
        (["fit", "--config", "x.yaml"], ["--config", "x.yaml"]),  # untouched
        (["fit", "--model", "poet_x.lightning.CausalLMModule"], ["--model", "poet_x.lightning.CausalLMModule"]),
    ],
)  # fmt: skip
def test_class_paths_and_configs_are_left_to_lightning(argv, expected_tail):
    assert own_model_arguments(argv, Path("c"))[1:] == expected_tail


def test_own_data_shortcut_uses_the_models_tokenizer():
    argv = ["fit", f"--model={DATA / 'tiny-llama'}", "--data", str(DATA / "corpus.txt"), "--x", "1"]
    out = own_model_arguments(argv, Path("c"))
    assert out[:3] == ["fit", "--config", str(Path("c") / "own_model" / "defaults.yaml")]
    i = out.index("--data.init_args.tokenizer")
    assert out[i + 1] == str(DATA / "tiny-llama") and out[-2:] == ["--x", "1"]
    assert "--model" not in out and "--data" not in out


def test_missing_model_folder_is_one_line_exit_2(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    code = main(["fit", "--model", "no-such-org/no-such-model", "--data", str(DATA / "corpus.txt")])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1
