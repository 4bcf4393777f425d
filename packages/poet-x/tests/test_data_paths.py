"""The real-data path (C4 / WikiText / TinyStories loader, offline error, packing) and the
teacher-regression experiment as a DataModule reachable from the CLI."""

import sysconfig
from pathlib import Path

import lightning.pytorch as pl
import pytest
import torch
from icml26_shared import hub
from icml26_shared.contract import assert_one_line_error
from poet_x.cli import main
from poet_x.lightning import (
    CausalLMModule,
    HFTextDataModule,
    POETMergeCallback,
    TeacherRegressionDataModule,
    TeacherRegressionModule,
    TextDataModule,
)
from poet_x.pretraining_corpora import ByteTokenizer, is_validation, pack_documents

CONFIGS = Path(__file__).parents[1] / "configs"


def _trainer(tmp_path, steps, callbacks=()):
    return pl.Trainer(
        max_steps=steps, logger=False, enable_checkpointing=False, enable_progress_bar=False,
        enable_model_summary=False, callbacks=list(callbacks), default_root_dir=tmp_path,
        num_sanity_val_steps=0, limit_val_batches=2,
    )  # fmt: skip


def test_packing_joins_documents_with_eos_and_drops_the_remainder():
    docs = ["abc", "", "de", "fghij"]
    tok = ByteTokenizer()
    wins = list(pack_documents(docs, tok.encode, tok.eos_id, 4))
    stream = b"abc\x00de\x00fghij\x00"
    assert [bytes(w.tolist()) for w in wins] == [stream[i : i + 4] for i in range(0, 12, 4)]
    assert all(w.dtype == torch.long and w.numel() == 4 for w in wins)
    with pytest.raises(ValueError, match="window length"):
        list(pack_documents(docs, tok.encode, 0, 1))


@pytest.fixture
def stdlib_text(tmp_path):
    """A local corpus: two of CPython's own source files as a .txt file."""
    root = Path(sysconfig.get_paths()["stdlib"])
    text = (root / "textwrap.py").read_text() + (root / "shlex.py").read_text()
    path = tmp_path / "cpython.txt"
    path.write_text(text)
    return path, text


def test_local_text_is_tokenized_packed_and_split_by_hash(stdlib_text):
    pytest.importorskip("datasets")
    path, text = stdlib_text
    dm = HFTextDataModule(str(path), seq_len=16, batch_size=4, train_sequences=10,
                          val_sequences=3)  # fmt: skip
    dm.setup("fit")
    lines = [ln for ln in text.splitlines() if ln]
    val_stream = b"".join(ln.encode() + b"\x00" for ln in lines if is_validation(ln))
    train_stream = b"".join(ln.encode() + b"\x00" for ln in lines if not is_validation(ln))
    val = dm.val_set.tensors[0]
    assert val.shape == (3, 17)
    assert bytes(val.flatten().tolist()) == val_stream[: 3 * 17]
    batches = list(dm.train_dataloader())
    assert [b[0].shape for b in batches] == [(4, 17), (4, 17), (2, 17)]  # 10 windows
    flat = torch.cat([b[0] for b in batches]).flatten().tolist()
    assert bytes(flat) == train_stream[: 10 * 17]
    assert dm.vocab_size == 256


def test_offline_hub_corpus_fails_with_one_clear_line(monkeypatch, tmp_path, capsys):
    pytest.importorskip("datasets")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    hub.hub_reachable.cache_clear()
    try:
        code = main(["fit", "--config", str(CONFIGS / "hub" / "wikitext_poet_x_mem.yaml"),
                     "--trainer.logger", "false", "--trainer.enable_checkpointing", "false",
                     "--trainer.default_root_dir", str(tmp_path)])  # fmt: skip
        err = capsys.readouterr().err
        assert_one_line_error(err, "dataset 'Salesforce/wikitext' is not in the local", code)
        assert "Offline alternative" in err and "TextDataModule" in err
    finally:
        hub.hub_reachable.cache_clear()


def test_data_vocabulary_larger_than_the_model_is_rejected(tmp_path):
    module = CausalLMModule(8, 16, 32, 1, 2, 8, block_size=4)
    dm = TextDataModule("markov", seq_len=8, batch_size=4, train_windows=8, val_windows=4,
                        vocab=32)  # fmt: skip
    with pytest.raises(ValueError, match="larger than the model's vocab_size=8"):
        _trainer(tmp_path, 1).fit(module, dm)


def test_teacher_regression_stays_above_the_procrustes_floor_adamw_goes_below(tmp_path):
    def run(optimizer):
        dm = TeacherRegressionDataModule(16, 16, n_train=256, n_val=128, batch_size=32)
        module = TeacherRegressionModule(16, 16, optimizer=optimizer, block_size=4,
                                         merge_interval=20, lr=0.05)  # fmt: skip
        dist0 = float((module.weight().detach() - dm.teacher).pow(2).sum())
        cb = POETMergeCallback()
        trainer = _trainer(tmp_path, 80, [cb])
        trainer.fit(module, dm)
        trainer.validate(module, dm, verbose=False)
        m = trainer.callback_metrics
        return dist0, float(m["weight_dist"]), float(m["procrustes_floor"]), cb.n_merges

    start, dist, floor, merges = run("poet")
    assert merges == 4 and floor > 0
    assert floor - 1e-5 <= dist < start  # fits towards the teacher, never past the floor
    _, dist_adamw, floor_adamw, _ = run("adamw")
    assert floor_adamw == 0.0 and dist_adamw < floor  # full-rank AdamW can change the spectrum


def test_teacher_regression_config_runs_through_the_cli(tmp_path):
    args = ["fit", "--config", str(CONFIGS / "teacher_regression.yaml"),
            "--trainer.max_steps", "10", "--trainer.logger", "false",
            "--trainer.default_root_dir", str(tmp_path)]  # fmt: skip
    assert main(args) == 0


@pytest.mark.parametrize(
    ("override", "match"),
    [
        (["--model.init_args.merge_interval", "0"], "merge_interval must be"),
        (["--model.init_args.block_size", "5"], "not divisible by block_size 5"),
        (["--model.init_args.optimizer", "sgd"], "optimizer must be 'poet' or 'adamw'"),
        (["--data.init_args.noise", "-1"], "noise >= 0"),
    ],
)
def test_bad_teacher_regression_input_is_one_line(override, match, tmp_path, capsys):
    args = ["fit", "--config", str(CONFIGS / "teacher_regression.yaml"), "--trainer.logger",
            "false", "--trainer.default_root_dir", str(tmp_path), *override]  # fmt: skip
    code = main(args)
    assert_one_line_error(capsys.readouterr().err, match, code)
