"""Lightning parts: the shared contract, the three stages, checkpoints, frozen decoders."""

import lightning.pytorch as pl
import pytest
import torch
from icml26_shared.contract import check_contract
from mmicl.lightning import (
    MultimodalICLDataModule,
    Stage1Module,
    Stage2Module,
    Stage3Module,
    UnimodalICLDataModule,
)


def _fwd(model, batch):
    return model(batch)


def _uni():
    return UnimodalICLDataModule(
        K=32, L=8, D=8, N=4, B=2, batch_size=8, train_batches=2, eval_sequences=16
    )


def _multi(**kw):
    base = dict(K1=32, L1=8, D1=8, K2=4, D2=6, N=4, B=2, batch_size=8, train_batches=2)
    base.update(eval_sequences=16, **kw)
    return MultimodalICLDataModule(**base)


def _trainer(tmp_path, steps=2):
    return pl.Trainer(
        accelerator="cpu", max_steps=steps, max_epochs=1, logger=False,
        enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False,
        default_root_dir=tmp_path, limit_val_batches=1, num_sanity_val_steps=0,
    )  # fmt: skip


def test_stage1_contract(tmp_path):
    res = check_contract(
        lambda: Stage1Module(8, 8, d_model=16, pos="ape"), _uni, tmp_path, forward_fn=_fwd
    )
    assert res.output.shape == (8, 8)


def test_stage2_contract_scratch(tmp_path):
    res = check_contract(
        lambda: Stage2Module(8, 8, 6, freeze_decoder=False, decoder_d_model=16),
        _multi,
        tmp_path,
        forward_fn=_fwd,
    )
    assert res.output.shape == (8, 8)


@pytest.fixture(scope="module")
def stage1_ckpt(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("s1")
    pl.seed_everything(0, verbose=False)
    module = Stage1Module(8, 8, d_model=16)
    trainer = _trainer(tmp)
    trainer.fit(module, datamodule=_uni())
    path = tmp / "stage1.ckpt"
    trainer.save_checkpoint(path)
    return path


def test_stage2_leaves_decoder_weights_unchanged(stage1_ckpt, tmp_path):
    module = Stage2Module(8, 8, 6, decoder_checkpoint=str(stage1_ckpt))
    before = {k: v.clone() for k, v in module.model.decoder.state_dict().items()}
    proj = {k: v.clone() for k, v in module.model.projector.state_dict().items()}
    _trainer(tmp_path, steps=3).fit(module, datamodule=_multi())
    after = module.model.decoder.state_dict()
    assert all(torch.equal(before[k], after[k]) for k in before)
    assert any(not torch.equal(proj[k], v) for k, v in module.model.projector.state_dict().items())
    # and the loaded decoder is the checkpoint's
    s1 = Stage1Module.load_from_checkpoint(stage1_ckpt, weights_only=False)
    assert all(torch.equal(s1.model.state_dict()[k], before[k]) for k in before)


def test_checkpoint_with_wrong_dimensions_is_rejected(stage1_ckpt):
    with pytest.raises(ValueError, match="the config says d1=16"):
        Stage2Module(16, 8, 6, decoder_checkpoint=str(stage1_ckpt))
    with pytest.raises(ValueError, match="does not exist"):
        Stage2Module(8, 8, 6, decoder_checkpoint="no/such.ckpt")


def test_model_and_data_mismatch_is_rejected(tmp_path):
    with pytest.raises(ValueError, match="does not match the model"):
        _trainer(tmp_path).fit(Stage1Module(16, 8, d_model=16), datamodule=_uni())


def test_stage3_digits_cnn_from_stage2(stage1_ckpt, tmp_path):
    dm = _multi(modality2="digits", K2=3, D2=64)
    s2 = Stage2Module(8, 8, 64, decoder_checkpoint=str(stage1_ckpt), encoder="cnn")
    trainer = _trainer(tmp_path)
    trainer.fit(s2, datamodule=dm)
    path = tmp_path / "s2.ckpt"
    trainer.save_checkpoint(path)
    s3 = Stage3Module(8, 8, 64, stage2_checkpoint=str(path), encoder="cnn", decoder_d_model=16)
    assert all(p.requires_grad for p in s3.parameters())
    for k, v in s2.state_dict().items():
        assert torch.equal(v, s3.state_dict()[k])
    _trainer(tmp_path).fit(s3, datamodule=dm)
    batch = next(iter(dm.train_dataloader()))
    assert s3(batch).shape == (8, 8)
    with pytest.raises(ValueError, match="does not fit"):
        Stage3Module(8, 8, 64, stage2_checkpoint=str(path), encoder="mlp", decoder_d_model=16)


def test_paper_layout_checkpoint_round_trip_and_stage3(tmp_path):
    """A concat-layout (authors') decoder saves, loads into stage 2 and unfreezes in stage 3
    with its one-hot position channels still fixed."""
    pl.seed_everything(0, verbose=False)
    module = Stage1Module(8, 8, pos="ape", embedding="concat", max_positions=15)
    assert module.model.d_model == 8 + 15  # multimodal sequences have 3N + 2 = 14 tokens
    trainer = _trainer(tmp_path)
    trainer.fit(module, datamodule=_uni())
    path = tmp_path / "paper.ckpt"
    trainer.save_checkpoint(path)
    s2 = Stage2Module(8, 8, 6, decoder_checkpoint=str(path))
    dec = s2.model.decoder
    assert dec.embedding == "concat" and dec.d_model == 23
    assert all(torch.equal(v, module.model.state_dict()[k]) for k, v in dec.state_dict().items())
    s3 = Stage3Module(8, 8, 6, decoder_checkpoint=str(path), encoder="mlp")
    assert all(p.requires_grad for p in s3.parameters())
    assert not any(n.startswith("model.decoder.embed") for n, _ in s3.named_parameters())
    _trainer(tmp_path).fit(s3, datamodule=_multi())
    scratch = Stage2Module(8, 8, 6, freeze_decoder=False, decoder_pos="ape",
                           decoder_embedding="concat")  # fmt: skip
    assert scratch.model.decoder.d_model == 8 + 65
