"""torchmetrics metrics, the learning-rate schedule, checkpointed counters, GPT-2 Conv1D layers."""

import math

import lightning.pytorch as pl
import pytest
import torch
from poet_x.config import POETConfig
from poet_x.lightning import CausalLMModule, POETMergeCallback, TextDataModule, lr_factor
from poet_x.model_surgery import merge_to_linear, wrap_model
from poet_x.poet_linear import POETLinear
from poet_x.spectral_metrics import OrthogonalityError, SpectralDrift


def _trainer(tmp_path, steps, **kw):
    return pl.Trainer(
        max_steps=steps, logger=False, enable_progress_bar=False, enable_model_summary=False,
        default_root_dir=tmp_path, num_sanity_val_steps=0, limit_val_batches=2, **kw,
    )  # fmt: skip


def _data():
    return TextDataModule("markov", seq_len=8, batch_size=4, train_windows=32, val_windows=8,
                          vocab=8)  # fmt: skip


def test_spectral_drift_zero_for_exact_poet_and_equal_to_reproduce_formula():
    torch.manual_seed(0)
    layer = POETLinear(torch.randn(8, 12, dtype=torch.float64), None,
                       POETConfig(block_size=4, cayley="exact"))  # fmt: skip
    w0 = layer.effective_weight().detach().clone()
    with torch.no_grad():
        layer.q_in.normal_(0, 0.3)
        layer.q_out.normal_(0, 0.3)
    drift = SpectralDrift()
    drift.update(w0, layer.effective_weight().detach())
    assert float(drift.compute()) < 1e-12  # orthogonal equivalence keeps the spectrum
    a, b = torch.randn(6, 5), torch.randn(6, 5)
    s0, s1 = (torch.linalg.svdvals(t.double()) for t in (a, b))
    expected = float(((s1 - s0).abs() / s0.max()).max())
    drift.update(a, b)
    assert math.isclose(float(drift.compute()), expected, rel_tol=1e-12)
    with pytest.raises(ValueError, match="one shape"):
        drift.update(torch.randn(3, 3), torch.randn(3, 4))


def test_orthogonality_error_metric_matches_the_layer_and_neumann_is_not_exact():
    torch.manual_seed(0)
    layer = POETLinear(torch.randn(8, 8), None, POETConfig(block_size=4, neumann_terms=2))
    with torch.no_grad():
        layer.q_in.normal_(0, 0.2)
    metric = OrthogonalityError()
    metric.update(torch.nn.Sequential(layer))
    assert float(metric.compute()) == pytest.approx(layer.orthogonality_error()) and (
        layer.orthogonality_error() > 1e-4
    )
    with pytest.raises(ValueError, match="no POETLinear"):
        OrthogonalityError().update(torch.nn.Linear(2, 2))


def test_cosine_schedule_warms_up_then_decays_to_one_percent():
    f = [lr_factor(s, "cosine", 5, 25) for s in range(30)]
    assert f[:5] == pytest.approx([0.2, 0.4, 0.6, 0.8, 1.0])
    assert all(x >= y for x, y in zip(f[5:], f[6:], strict=False))  # monotone decay
    assert f[25] == pytest.approx(0.01) and f[29] == pytest.approx(0.01)
    with pytest.raises(ValueError, match="lr_schedule"):
        CausalLMModule(8, 16, 32, 1, 2, 8, block_size=4, lr_schedule="linear")
    with pytest.raises(ValueError, match="total_steps"):
        CausalLMModule(8, 16, 32, 1, 2, 8, block_size=4, warmup_steps=10, total_steps=5)


def test_fit_applies_schedule_logs_perplexity_and_resumes_counters(tmp_path):
    module = CausalLMModule(8, 16, 32, 1, 2, 8, block_size=4, merge_interval=3,
                            lr_schedule="cosine", warmup_steps=2, lr=1e-2)  # fmt: skip
    trainer = _trainer(
        tmp_path,
        4,
        callbacks=[POETMergeCallback()],
        enable_checkpointing=False,
        val_check_interval=4,
    )
    trainer.fit(module, _data())
    opt = trainer.optimizers[0]
    # step index 3 (the 4th step) ran at lr_factor(3, cosine, warm-up 2, total 4)
    f = lr_factor(3, "cosine", 2, 4)
    assert [g["lr"] for g in opt.param_groups] == pytest.approx(
        [g["base_lr"] * f for g in opt.param_groups]
    )
    metrics = trainer.callback_metrics
    assert float(metrics["val_ppl"]) == pytest.approx(math.exp(float(metrics["val_loss"])), 1e-4)
    ckpt = tmp_path / "run.ckpt"
    trainer.save_checkpoint(ckpt)
    fresh = CausalLMModule.load_from_checkpoint(ckpt)
    assert (fresh.n_optimizer_steps, fresh.steps_since_merge) == (4, 1)


def _gpt2():
    transformers = pytest.importorskip("transformers")
    cfg = transformers.GPT2Config(vocab_size=32, n_positions=16, n_embd=16, n_layer=1, n_head=2)
    torch.manual_seed(0)
    return transformers.GPT2LMHeadModel(cfg).eval()


def test_gpt2_conv1d_layers_are_wrapped_and_exported_back_to_conv1d(tmp_path):
    from transformers import GPT2LMHeadModel
    from transformers.pytorch_utils import Conv1D

    model = _gpt2()
    ids = torch.randint(0, 32, (2, 10))
    with torch.no_grad():
        before = model(ids).logits
    report = wrap_model(model, POETConfig(block_size=4, normalize_rows=False))
    # c_attn (16 -> 48), attn.c_proj, mlp.c_fc (16 -> 64), mlp.c_proj: every Conv1D
    assert len(report.wrapped) == 4 and not report.skipped
    layer = model.transformer.h[0].attn.c_attn
    assert isinstance(layer, POETLinear) and (layer.out_features, layer.in_features) == (48, 16)
    with torch.no_grad():
        assert torch.allclose(model(ids).logits, before, atol=1e-5)  # identity at init
        for m in model.modules():
            if isinstance(m, POETLinear):
                m.q_in.normal_(0, 0.1)
                m.q_out.normal_(0, 0.1)
        trained = model(ids).logits
    merge_to_linear(model)
    assert isinstance(model.transformer.h[0].mlp.c_fc, Conv1D)
    assert model.transformer.h[0].mlp.c_fc.weight.shape == (16, 64)  # GPT-2 layout (in, out)
    model.save_pretrained(tmp_path / "gpt2")
    reloaded = GPT2LMHeadModel.from_pretrained(tmp_path / "gpt2").eval()
    with torch.no_grad():
        assert torch.allclose(reloaded(ids).logits, trained, atol=1e-5)


def test_muon_without_torch_muon_is_one_clear_error(monkeypatch):
    from poet_x.optimizer_recipe import build_optimizer

    monkeypatch.delattr(torch.optim, "Muon")
    with pytest.raises(ImportError, match="torch >= 2.9"):
        build_optimizer(torch.nn.Linear(4, 4), POETConfig(block_size=2), baseline="muon")
