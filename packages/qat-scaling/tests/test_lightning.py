"""Lightning parts: the shared contract, a smoke training run, activation statistics, fp16 refusal."""

import pytest
import torch
from icml26_shared.contract import check_contract
from qat_scaling.activation_outliers import activation_statistics
from qat_scaling.grid import PRESETS, run_grid
from qat_scaling.lightning import QATLanguageModel, TextDataModule, reject_fp16_on_cpu
from qat_scaling.scaling_law import qat_error

_MARKOV = {"vocab": 32, "train_tokens": 4000, "val_tokens": 1000}


def _model():
    return QATLanguageModel(
        hidden=32, layers=1, ffn=64, heads=2, vocab_size=32, seq_len=16, group_size=8
    )


def _data():
    return TextDataModule(
        "markov", seq_len=16, batch_size=4, train_batches=2, val_batches=1, corpus_kwargs=_MARKOV
    )


def test_shared_contract(tmp_path):
    result = check_contract(_model, _data, tmp_path, forward_fn=lambda m, b: m(b[:, :-1]))
    assert result.output.shape == (4, 16, 32)


def test_smoke_grid_lowers_loss_and_paired_delta_is_not_negative(tmp_path):
    out = tmp_path / "runs.jsonl"
    records = run_grid(PRESETS["smoke"], out)
    fp = [r for r in records if r["scheme"] == "FP"]
    assert fp[-1]["val_loss"] < 3.4657  # below log(32): the loss fell from the uniform guess
    for e in qat_error(records):
        assert e["delta"] > -0.01
    # resume: nothing is retrained, the same records come back
    again = run_grid(PRESETS["smoke"], out)
    assert [r["val_loss"] for r in again] == [r["val_loss"] for r in records]
    assert "act_stats" in fp[-1]


def test_activation_statistics_find_heavy_fc2_input():
    torch.manual_seed(0)
    m = _model()
    stats = activation_statistics(m.model, torch.randint(0, 32, (4, 16)), bits=4, group_size=8)
    assert set(stats) >= {"mlp.down_proj", "self_attn.q_proj"}
    assert stats["mlp.down_proj"]["kurtosis"] > stats["mlp.up_proj"]["kurtosis"]


def test_fp16_on_cpu_is_refused():
    with pytest.raises(ValueError, match="fp16"):
        reject_fp16_on_cpu("16-mixed", "cpu")
    reject_fp16_on_cpu("bf16-mixed", "cpu")
    reject_fp16_on_cpu("32-true", "cpu")
