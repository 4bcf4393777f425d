"""The qat-scaling command line: package commands, and one clear line for bad input.

The generic checks (--help lists every command, unknown command, malformed YAML, corrupt
checkpoint) are the registry contract (ci/test_registry.py).
"""

from qat_scaling.cli import main


def _csv(tmp_path, rows, header="N,D,G,delta"):
    p = tmp_path / "runs.csv"
    p.write_text(header + "\n" + "\n".join(",".join(map(str, r)) for r in rows) + "\n")
    return p


def _law_rows(g_values=(8, 16, 32)):
    rows = []
    for n in (2e4, 5e4, 1e5):
        for d in (1e5, 4e5):
            for g in g_values:
                import math

                rows.append((n, d, g, 0.5 * d**0.1 * math.log2(g) ** 1.3 / n**0.3))
    return rows


def test_fit_law_on_csv_and_predict(tmp_path, capsys):
    out = tmp_path / "fit.json"
    assert (
        main(
            [
                "fit-law",
                "--runs",
                str(_csv(tmp_path, _law_rows())),
                "--bootstrap",
                "20",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    text = capsys.readouterr().out
    assert "gN: 0.3" in text and "held-out (unified)" in text
    assert main(["predict-law", "--N", "2e4", "--D", "1e5", "--G", "8", "--fit", str(out)]) == 0
    assert "delta(" in capsys.readouterr().out


def test_bad_inputs_give_one_line_and_exit_2(tmp_path, capsys):
    cases = [
        ["fit-law", "--runs", str(tmp_path / "missing.csv")],
        ["fit-law", "--runs", str(_csv(tmp_path, _law_rows((1, 8))))],
        [
            "fit-law",
            "--runs",
            str(_csv(tmp_path, [r[:3] + (-1.0,) for r in _law_rows()])),
            "--strict",
            "true",
        ],
        ["fit-law", "--runs", str(_csv(tmp_path, [(1e4, 1e5, 8, 0.1), (1e4, 2e5, 16, 0.2)] * 3))],
        [
            "predict-law",
            "--N",
            "1e4",
            "--D",
            "1e5",
            "--G",
            "1",
            "--k",
            "1",
            "--gN",
            "1",
            "--gD",
            "1",
            "--gG",
            "1",
        ],
        ["sweep", "--preset", "huge"],
        ["outliers", "--ckpt", str(tmp_path / "none.ckpt")],
    ]
    for args in cases:
        assert main(args) == 2, args
        err = capsys.readouterr().err.strip()
        assert (
            err.startswith("qat-scaling: error:") and "\n" not in err and "Traceback" not in err
        ), (args, err)


def test_fp16_fit_on_cpu_is_one_line_error(tmp_path, capsys):
    args = [
        "fit",
        "--model.hidden",
        "32",
        "--model.layers",
        "1",
        "--model.ffn",
        "64",
        "--model.vocab_size",
        "32",
        "--model.seq_len",
        "16",
        "--model.group_size",
        "8",
        "--data.corpus",
        "markov",
        "--data.seq_len",
        "16",
        "--data.batch_size",
        "2",
        "--data.train_batches",
        "2",
        "--data.val_batches",
        "1",
        "--data.corpus_kwargs",
        '{"vocab": 32, "train_tokens": 2000, "val_tokens": 500}',
        "--trainer.accelerator",
        "cpu",
        "--trainer.precision",
        "16-mixed",
        "--trainer.max_steps",
        "2",
        "--trainer.logger",
        "false",
        "--trainer.enable_checkpointing",
        "false",
        "--trainer.default_root_dir",
        str(tmp_path),
    ]
    assert main(args) == 2
    assert "fp16" in capsys.readouterr().err


def _tiny_fit_args(tmp_path, vocab=32, model_vocab=32):
    return [
        "fit",
        "--model.hidden=32",
        "--model.layers=1",
        "--model.ffn=64",
        f"--model.vocab_size={model_vocab}",
        "--model.seq_len=16",
        "--model.group_size=8",
        "--data.corpus=markov",
        "--data.seq_len=16",
        "--data.batch_size=2",
        "--data.train_batches=2",
        "--data.val_batches=1",
        f'--data.corpus_kwargs={{"vocab": {vocab}, "train_tokens": 2000, "val_tokens": 500}}',
        "--trainer.accelerator=cpu",
        "--trainer.max_steps=2",
        "--trainer.logger=false",
        "--trainer.enable_checkpointing=false",
        "--trainer.enable_progress_bar=false",
        "--trainer.val_check_interval=2",
        f"--trainer.default_root_dir={tmp_path}",
    ]


def test_nan_training_loss_is_one_line_error(tmp_path, capsys, monkeypatch):
    import torch
    from qat_scaling.lightning import QATLanguageModel

    monkeypatch.setattr(QATLanguageModel, "loss", lambda self, b: torch.tensor(float("nan")))
    assert main(_tiny_fit_args(tmp_path)) == 2
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last.startswith("qat-scaling: error:") and "training loss is nan" in last


def test_corpus_vocab_larger_than_model_vocab_is_one_line_error(tmp_path, capsys):
    assert main(_tiny_fit_args(tmp_path, vocab=64, model_vocab=32)) == 2
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last.startswith("qat-scaling: error:") and "--model.vocab_size 64" in last


def test_decompose_fits_every_point_in_delta_space(tmp_path, capsys):
    """`decompose` recovers planted exponents of both parts from a sweep JSONL whose noisy
    deltas include values <= 0 (which a log fit would have to drop)."""
    import json

    import numpy as np

    rng = np.random.default_rng(0)
    parts = {
        "W4A16": (0.02, 0.5, 0.3),
        "W16A4": (0.01, 0.8, 0.1),
    }  # delta at the smallest N, D; gN; gD
    lines, deltas = [], []
    for seed in range(3):
        for n in (5e3, 2e4, 8e4):
            for d in (2e5, 8e5):
                fp = 2.0 + rng.normal(0, 0.05)
                rec = dict(size=f"n{int(n)}", N=n, D=d, seed=seed, G=16)
                lines.append({**rec, "scheme": "FP", "G": 0, "val_loss": fp})
                for scheme, (k, gN, gD) in parts.items():
                    delta = k * (n / 5e3) ** -gN * (d / 2e5) ** gD + rng.normal(0, 0.0015)
                    deltas.append(delta)
                    lines.append({**rec, "scheme": scheme, "val_loss": fp + delta})
    assert min(deltas) <= 0  # the planted data hold points a log fit would drop
    runs = tmp_path / "runs.jsonl"
    runs.write_text("".join(json.dumps(r) + "\n" for r in lines))
    assert main(["decompose", "--runs", str(runs), "--bootstrap", "20"]) == 0
    out = {ln.split()[0]: ln.split() for ln in capsys.readouterr().out.splitlines()}
    assert set(out) == {"W4A16", "W16A4"}
    for scheme, (_, gN, gD) in parts.items():
        words = out[scheme]
        got = {w.split("=")[0]: w.split("=")[1] for w in words if "=" in w}
        assert abs(float(got["gN"]) - gN) < 0.15 and abs(float(got["gD"]) - gD) < 0.2
        assert got["gG"] == "fixed"  # one G in the grid
        assert words[words.index(f"gN={got['gN']}") + 1].startswith("[")  # an interval
