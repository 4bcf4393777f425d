"""The LightningModules (WaterSIC-FT, tiny-LM pretraining): the shared contract and what trains."""

import torch
from icml26_shared.contract import check_contract
from watersic.lightning import ByteTextDataModule, WaterSICFinetune

SMALL = dict(
    hidden_size=16, intermediate_size=32, num_layers=1, num_heads=2, seq_len=16,
    pretrain_steps=5, calib_sequences=16, rate=3.0,
)  # fmt: skip


def small_model():
    return WaterSICFinetune(**SMALL)


def small_data():
    return ByteTextDataModule(seq_len=16, batch_size=4, train_sequences=16, val_sequences=8)


def test_contract(tmp_path):
    result = check_contract(small_model, small_data, tmp_path)
    assert result.output.shape == (4, 16, 256)  # (B, T, V)


def test_only_scales_train_and_kl_drops():
    torch.manual_seed(0)
    model = small_model()
    trainable = [n for n, p in model.named_parameters() if p.requires_grad]
    assert trainable and all(n.endswith(("row_scale", "col_scale")) for n in trainable)
    dm = small_data()
    dm.setup("fit")
    batch = next(iter(dm.train_dataloader()))
    opt = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=1e-2)
    first = model._kl(batch)[0].item()
    for _ in range(20):
        loss = model._kl(batch)[0]
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert model._kl(batch)[0].item() < first


def test_tiny_llama_pretraining_contract(tmp_path):
    from watersic.lightning import TinyLlamaPretrain

    def model():
        return TinyLlamaPretrain(
            hidden_size=16, intermediate_size=32, num_layers=1, num_heads=2, seq_len=16
        )

    def data():
        return ByteTextDataModule(
            seq_len=16, batch_size=4, train_sequences=16, val_sequences=8, train_offset=0
        )

    result = check_contract(model, data, tmp_path)
    assert result.output.shape == (4, 16, 256)


def test_pretraining_lowers_the_loss_and_is_deterministic():
    from watersic.lightning import train_tiny_llama
    from watersic.tiny_llm import TinyLlamaSpec

    spec = TinyLlamaSpec(
        hidden_size=16, intermediate_size=32, num_layers=1, num_heads=2, seq_len=16,
        train_steps=30, batch_size=8, lr=1e-2, train_bytes=50_000,
    )  # fmt: skip
    x = torch.arange(64).reshape(4, 16) % 256
    a, b = train_tiny_llama(spec, seed=0), train_tiny_llama(spec, seed=0)
    with torch.no_grad():
        assert torch.equal(a(input_ids=x).logits, b(input_ids=x).logits)
        from watersic.tiny_llm import build_tiny_llama

        untrained = build_tiny_llama(spec, seed=0)
        dm = ByteTextDataModule(seq_len=16, batch_size=8, val_sequences=8)
        dm.setup("validate")
        val = next(iter(dm.val_dataloader()))
        assert a(input_ids=val, labels=val).loss < untrained(input_ids=val, labels=val).loss


def test_finetune_rescalers_trains_through_the_lightning_module():
    """WaterSIC-FT of an existing quantization (what reproduce's tiny_lm section runs)."""
    from watersic.evaluation import lm_report
    from watersic.lightning import finetune_rescalers, train_tiny_llama
    from watersic.model_quantization import quantize_model
    from watersic.text_corpus import byte_sequences, stdlib_text
    from watersic.tiny_llm import TinyLlamaSpec

    spec = TinyLlamaSpec(
        hidden_size=16, intermediate_size=32, num_layers=1, num_heads=2, seq_len=16,
        train_steps=20, batch_size=8, lr=1e-2, train_bytes=50_000,
    )  # fmt: skip
    fp = train_tiny_llama(spec, seed=0)
    cal = byte_sequences(stdlib_text("train", 50_000), 16, 32)
    ev = byte_sequences(stdlib_text("train", 600_000), 16, 32, offset=500_000)
    art = quantize_model(fp, cal, 3.0, "watersic")
    student = finetune_rescalers(fp, art, steps=10, seq_len=16, batch_size=8, lr=1e-3,
                                 min_lr=1e-4, train_bytes=600_000)  # fmt: skip
    assert student is art.model and not student.training
    trainable = [n for n, p in student.named_parameters() if p.requires_grad]
    assert trainable and all(n.endswith(("row_scale", "col_scale")) for n in trainable)
    moved = [
        name for name, q in art.layers.items()
        if not torch.equal(student.get_submodule(name).row_scale.detach(), q.row_scale.float())
    ]  # fmt: skip
    assert moved  # the Trainer ran optimiser steps on the rescalers
    assert torch.isfinite(torch.tensor(lm_report(fp, student, ev)["kl_bits"]))


def test_finetune_rescalers_rejects_bad_input():
    import pytest
    from watersic.lightning import finetune_rescalers

    with pytest.raises(ValueError, match="steps"):
        finetune_rescalers(None, None, steps=0, seq_len=16)
    with pytest.raises(ValueError, match="train_bytes"):
        finetune_rescalers(None, None, steps=1, seq_len=16, train_offset=100, train_bytes=100)
