"""Shared contract, and a Lightning fit with the merge callback."""

import lightning.pytorch as pl
import torch
from icml26_shared.contract import check_contract
from poet_x.lightning import CausalLMModule, POETMergeCallback, TextDataModule
from poet_x.optimizer_recipe import poet_parameters


def _model():
    return CausalLMModule(8, 16, 32, 1, 2, 8, block_size=4, merge_interval=2)


def _data():
    return TextDataModule("markov", seq_len=8, batch_size=4, train_windows=16, val_windows=8,
                          vocab=8)  # fmt: skip


def test_shared_contract(tmp_path):
    check_contract(_model, _data, tmp_path, forward_fn=lambda m, b: m(b[0][:, :-1]))


def test_fit_with_merge_callback_merges_every_t_steps(tmp_path):
    module, cb = _model(), POETMergeCallback()
    trainer = pl.Trainer(
        max_steps=4, logger=False, enable_checkpointing=False, enable_progress_bar=False,
        enable_model_summary=False, callbacks=[cb], default_root_dir=tmp_path,
        num_sanity_val_steps=0, limit_val_batches=1,
    )  # fmt: skip
    trainer.fit(module, _data())
    assert module.n_optimizer_steps == 4 and cb.n_merges == 2
    # the last optimiser step (4) was followed by a merge: every rotation is back at 0
    assert all(float(p.detach().abs().max()) == 0 for p in poet_parameters(module.model))
    assert torch.isfinite(trainer.callback_metrics["train_loss"])


def test_ddp_strategy_runs_merges_and_matches_the_single_process_run(tmp_path):
    """The DDP path (model wrapped in DistributedDataParallel, gloo, one CPU process):
    manual optimisation, Lightning clipping, merges that replace buffers, synced logging."""
    import torch.distributed as dist

    def fit(strategy):
        torch.manual_seed(0)
        module, cb = _model(), POETMergeCallback()
        trainer = pl.Trainer(
            accelerator="cpu", devices=1, strategy=strategy, max_steps=4, logger=False,
            enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False,
            callbacks=[cb], default_root_dir=tmp_path, num_sanity_val_steps=0,
            limit_val_batches=1, val_check_interval=4, use_distributed_sampler=False,
        )  # fmt: skip
        trainer.fit(module, _data())  # same batches in both runs (no DistributedSampler)
        return module, cb, trainer

    try:
        ddp, cb, trainer = fit("ddp")
        assert type(trainer.strategy).__name__ == "DDPStrategy" and cb.n_merges == 2
        assert torch.isfinite(trainer.callback_metrics["val_ppl"])
    finally:
        if dist.is_available() and dist.is_initialized():
            dist.destroy_process_group()
    single, _, _ = fit("auto")
    for (name, a), (_, b) in zip(
        ddp.model.state_dict().items(), single.model.state_dict().items(), strict=True
    ):
        assert torch.allclose(a.float(), b.float(), atol=1e-6), name
