"""A miniature reproduce run through the CLI, and the CLI's error paths."""

import json

import poet_x.optimizer_comparison as cmp
import pytest
from poet_x.cli import main

TINY = cmp.ComparisonSetting(16, 32, 1, 2, 8, 4, 4, 2, 4, 20_000, 4, 2)
# a subset keeps it fast (every row runs in the real `reproduce --preset quick`; the anchors
# have their own tests, LoRA/OFT's peft import alone takes ~1 min here)
KEEP = ["AdamW", "POET (naive, dense R W0 P)", "POET-X fast", "POET-X mem"]
TINY_YAML = """
hidden: 16
intermediate: 32
layers: 1
heads: 2
seq_len: 8
batch_size: 4
steps: 4
merge_interval: 2
block_size: 4
max_bytes: 20000
val_windows: 4
eval_every: 2
isolate: false  # one process for every method: see the test below
methods: [AdamW, "POET (naive, dense R W0 P)", POET-X fast, POET-X mem]
sections:
  memory: {shapes: [[32, 16]], tokens: 8, block_sizes: [4, 8], repeats: 1, galore_rank: 4,
           layer_methods: [naive, fast, mem, xq, adamw], models: [llama_1b]}
"""


def test_miniature_reproduce_writes_json_markdown_and_png(tmp_path, monkeypatch, capsys):
    from icml26_shared.experiment import Experiment
    from poet_x.reproduce import EXPERIMENT

    (tmp_path / "quick.yaml").write_text(TINY_YAML)
    tiny = Experiment("poet-x", EXPERIMENT.sections, config_dir=tmp_path)
    tiny.run(tmp_path / "out", preset="quick", log=False)
    out = tmp_path / "out"
    data = json.loads((out / "results.json").read_text())
    tables = [t for sec in data["sections"] for t in sec["tables"]]
    rows = {r["method"]: r for r in tables[0]["rows"]}
    assert set(rows) == set(KEEP)
    assert all("val loss @ equal time" in r for r in rows.values())
    poet = rows["POET-X fast"]
    assert poet["max rel sigma drift"] < 1e-3 < rows["AdamW"]["max rel sigma drift"]
    assert poet["trainable params"] < rows["AdamW"]["trainable params"]
    assert poet["optimizer state (KB)"] < rows["AdamW"]["optimizer state (KB)"]
    assert rows["POET-X mem"]["saved activations (KB)"] < poet["saved activations (KB)"]
    assert rows["AdamW"]["val loss - AdamW"] == 0.0
    assert poet["val loss - AdamW"] == pytest.approx(poet["val loss"] - rows["AdamW"]["val loss"])
    markov = {r["method"]: r for r in tables[1]["rows"]}
    assert set(markov) == set(KEEP)
    h = float(tables[1]["title"].split("H = ")[1].split()[0])
    for r in markov.values():
        assert r["excess loss"] == pytest.approx(r["val loss"] - h, abs=1e-3)
        assert r["excess loss"] > -0.3  # cannot beat the entropy rate beyond sampling noise
    assert (out / "results.md").is_file() and list(out.glob("*.png"))
    layer = [r for r in tables[2]["rows"]]
    for b in (4, 8):
        held = {r["method"]: r["held for backward (MiB)"] for r in layer if r["b"] == b}
        assert len(held) == 4
    assert tables[3]["rows"][0]["model"] == "llama_1b"
    memory = next(sec for sec in data["sections"] if sec["name"] == "memory")
    assert "mem < fast < naive holds" in " ".join(memory["notes"])


def test_each_method_in_its_own_process_reports_its_peak_rss_and_same_results():
    from dataclasses import replace

    alone = replace(TINY, methods=["AdamW"], isolate=True)
    ([row], [mrow], _) = cmp.run_methods(alone, 0)
    assert 0 < row["RSS growth (MB)"] < row["peak RSS (MB)"]
    ([same], [msame], _) = cmp.run_methods(replace(alone, isolate=False), 0)
    # the child computes exactly what the parent would (same seeds, data and code path)
    assert row["val loss"] == same["val loss"] and mrow["val loss"] == msame["val loss"]


def test_unknown_method_in_a_preset_is_a_setting_error(tmp_path):
    from icml26_shared.experiment import Experiment, SettingError
    from poet_x.reproduce import EXPERIMENT

    (tmp_path / "quick.yaml").write_text(TINY_YAML.replace("POET-X mem]", "POET-Y]"))
    with pytest.raises(SettingError, match="unknown method"):
        Experiment("poet-x", EXPERIMENT.sections, config_dir=tmp_path).validate("quick")


def test_memory_command_reproduces_the_8b_arithmetic(capsys):
    assert main(["memory", "--model", "llama_8b"]) == 0
    out = capsys.readouterr().out
    assert "AdamW" in out and "(OOM)" in out.split("GaLore")[0]
    assert out.strip().split("POET-X")[1].split("(")[1].startswith("fits")


@pytest.mark.parametrize(
    ("args", "match"),
    [
        (["convert", "--hidden_size", "16", "--intermediate_size", "32", "--num_layers", "1",
          "--block_size", "5"], "not divisible by block_size 5"),
        (["convert", "--hidden_size", "16", "--intermediate_size", "32", "--num_layers", "1",
          "--block_size", "1"], "block_size must be >= 2"),
        (["convert", "--hidden_size", "16", "--intermediate_size", "32", "--num_layers", "1",
          "--block_size", "64"], "not divisible by block_size 64"),
        (["merge", "--checkpoint", "missing.ckpt", "--out", "x"], "does not exist"),
        (["merge", "--checkpoint", __file__, "--out", "x"], "cannot read checkpoint"),
        (["memory", "--block_size", "1"], "block_size must be >= 2"),
    ],
)  # fmt: skip
def test_bad_input_one_line_exit_2(args, match, capsys):
    assert main(args) == 2
    err = capsys.readouterr().err
    assert match in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


def test_convert_skip_reports_layers(capsys):
    args = ["convert", "--hidden_size", "16", "--intermediate_size", "24", "--num_layers", "1",
            "--block_size", "16", "--on_indivisible", "skip"]  # fmt: skip
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "mlp.down_proj" in out.split("skipped")[1]


def test_every_config_matches_a_reproduce_row_and_the_full_setting():
    from pathlib import Path

    import yaml
    from poet_x.reproduce import EXPERIMENT

    full = EXPERIMENT.validate("full")["text"]

    configs = sorted((Path(__file__).parents[1] / "configs").glob("*.yaml"))
    rows = []
    for path in configs:
        cfg = yaml.safe_load(path.read_text())
        if cfg["data"]["class_path"] == "poet_x.lightning.TextDataModule":
            rows.append(cfg)
    assert len(rows) == len(cmp.METHODS)
    specs = []
    for cfg in rows:
        model, data = cfg["model"]["init_args"], cfg["data"]["init_args"]
        assert cfg["model"]["class_path"] == "poet_x.lightning.CausalLMModule"
        assert model["hidden_size"] == full.hidden
        assert model["intermediate_size"] == full.intermediate
        assert model["block_size"] == full.block_size
        assert model["merge_interval"] == full.merge_interval
        assert cfg["trainer"]["max_steps"] == full.steps
        assert data["batch_size"] == full.batch_size and data["seq_len"] == full.seq_len
        spec = {"optimizer": model["optimizer"]}
        if model["optimizer"] == "poet":
            spec["mode"] = model["mode"]
            if model["base_quant"] != "none":
                spec["base_quant"] = model["base_quant"]
        specs.append(spec)
    assert sorted(map(str, specs)) == sorted(map(str, cmp.METHODS.values()))
    others = {p.stem for p in configs} - {
        p.stem for p in configs if "lightning.TextDataModule" in p.read_text()
    }
    assert others == {"teacher_regression"}
    hub = {p.stem for p in (Path(__file__).parents[1] / "configs" / "hub").glob("*.yaml")}
    assert hub == {"c4_poet_x_mem", "wikitext_poet_x_mem", "tinystories_poet_x_mem"}


def test_every_config_parses(capsys):
    from pathlib import Path

    # the reproduce-row configs share one schema (checked above): parse one of them
    names = ["poet_x_mem", "teacher_regression", "own_model/defaults", "hub/c4_poet_x_mem", "hub/wikitext_poet_x_mem",
             "hub/tinystories_poet_x_mem"]  # fmt: skip
    for path in (Path(__file__).parents[1] / "configs" / f"{n}.yaml" for n in names):
        assert main(["fit", "--config", str(path), "--print_config"]) == 0, path.name
        assert "class_path" in capsys.readouterr().out


def test_merge_command_exports_plain_linear_model(tmp_path, capsys):
    import lightning
    import torch
    from poet_x.lightning import CausalLMModule
    from transformers import LlamaForCausalLM

    module = CausalLMModule(16, 8, 16, 1, 2, 8, block_size=4)
    with torch.no_grad():
        for name, p in module.named_parameters():
            if name.endswith(("q_in", "q_out")):
                p.normal_(0, 0.05)
    ckpt = tmp_path / "m.ckpt"
    torch.save(
        {"state_dict": module.state_dict(), "hyper_parameters": dict(module.hparams),
         "pytorch-lightning_version": lightning.__version__},
        ckpt,
    )  # fmt: skip
    assert main(["merge", "--checkpoint", str(ckpt), "--out", str(tmp_path / "hf")]) == 0
    plain = LlamaForCausalLM.from_pretrained(tmp_path / "hf")
    x = torch.randint(0, 16, (2, 8))
    with torch.no_grad():
        assert torch.allclose(plain(input_ids=x).logits, module(x), atol=1e-5)
