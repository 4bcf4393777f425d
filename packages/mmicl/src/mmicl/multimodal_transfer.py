"""Stages 2 and 3: multimodal ICL on top of a pretrained stage-1 decoder, against scratch.

Paper: "Dissecting Multimodal In-Context Learning", Huang et al., ICML 2026 (arXiv 2601.20796).

A secondary modality M2 is fed to the stage-1 decoder through a projector, sequences
``[M1, M2, y] x N + [M1_q, M2_q]`` (:class:`~mmicl.lightning.MultimodalICLDataModule`):

1. stage 2, ``pretrained``: the stage-1 decoder frozen, only the projector trained on a GMM
   M2 with ``K2`` classes -> :func:`train_stage2` with ``decoder="pretrained"``;
2. the from-scratch baseline: a fresh decoder of the same layout trained jointly with the
   projector on the same data -> ``decoder="scratch"``;
3. the uninformative-M1 control ``m1_random`` (the M1 query from a class unrelated to the
   context, so only the M2 association can solve the task);
4. stage 3: scikit-learn digits through a CNN encoder, trained jointly -> :func:`train_stage3`.

Each run returns one row (split accuracies and the last layer's IH strength on the IC set);
:func:`transfer_table` collects them with the setting in its notes.
"""

from __future__ import annotations

from typing import Any

from icml26_shared.results import Table

D2 = 16  # dimension of the GMM secondary modality


def _data(s: Any, seed: int, K1: int, steps: int, **m2: Any):
    from mmicl.lightning import MultimodalICLDataModule

    return MultimodalICLDataModule(
        K1=K1, L1=s.L, D1=s.D, bank1_seed=seed, N=s.N, B=s.B, eps=s.eps,
        batch_size=s.batch_size, train_batches=steps, eval_sequences=s.eval_sequences,
        seed=seed, **m2,
    )  # fmt: skip


def _fit_and_score(s: Any, module, dm, steps: int) -> dict[str, float]:
    from icml26_shared.trainer import quiet_trainer

    from mmicl.evaluation import circuit_measures, split_accuracies

    quiet_trainer(
        max_epochs=1, max_steps=steps, num_sanity_val_steps=0, limit_val_batches=0,
        accelerator=s.accelerator,
    ).fit(module, datamodule=dm)  # fmt: skip
    sets = dm.sets("test")
    return {**split_accuracies(module, sets),
            "IH (last layer)": circuit_measures(module, sets["IC"])["ih"]}  # fmt: skip


def train_stage2(
    s: Any, seed: int, K1: int, K2: int, decoder: str, control: str, ckpt: str, arch: dict,
    steps: int,
) -> dict:  # fmt: skip
    """One stage-2 row on a GMM secondary modality with ``K2`` classes.

    Args:
        s: Data sizes (``D, L, N, B, eps, batch_size, eval_sequences, accelerator``), e.g. a
            :class:`mmicl.position_sweep.SweepSetting`.
        seed: Seed of the banks, the stream and the initialisation.
        K1: Class count of the primary bank (the stage-1 decoder's).
        K2: Class count of the secondary GMM bank.
        decoder: ``pretrained`` (``ckpt`` frozen, projector only) or ``scratch``.
        control: ``none`` or ``m1_random``.
        ckpt: Stage-1 checkpoint of the pretrained decoder.
        arch: ``decoder_d_model / decoder_pos / decoder_embedding`` of the scratch decoder.
        steps: AdamW steps.
    """
    import lightning.pytorch as pl
    import torch

    from mmicl.lightning import Stage2Module

    torch.set_num_threads(1)
    pl.seed_everything(seed, verbose=False)
    dm = _data(s, seed, K1, steps, K2=K2, D2=D2, control=control)
    if decoder == "pretrained":
        module = Stage2Module(s.D, s.L, D2, decoder_checkpoint=str(ckpt))
    else:
        module = Stage2Module(s.D, s.L, D2, freeze_decoder=False, **arch)
    row = {"decoder": decoder, "M2": "gmm", "K2": K2, "control": control}
    return {**row, **_fit_and_score(s, module, dm, steps)}


def train_stage3(s: Any, seed: int, K1: int, decoder: str, ckpt: str, arch: dict, steps: int) -> dict:  # fmt: skip
    """One stage-3 row: scikit-learn digits through a CNN encoder trained jointly with the
    projector and the decoder (``pretrained``: initialised from ``ckpt``; ``scratch``)."""
    import lightning.pytorch as pl
    import torch

    from mmicl.lightning import Stage3Module

    torch.set_num_threads(1)
    pl.seed_everything(seed, verbose=False)
    dm = _data(s, seed, K1, steps, modality2="digits", K2=5, control="m1_random")
    module = Stage3Module(
        s.D, s.L, 64, decoder_checkpoint=str(ckpt) if decoder == "pretrained" else None,
        encoder="cnn", **arch,
    )  # fmt: skip
    row = {"decoder": f"{decoder} (stage 3, CNN encoder)", "M2": "digits", "K2": 5,
           "control": "m1_random"}  # fmt: skip
    return {**row, **_fit_and_score(s, module, dm, steps)}


def transfer_table(rows: list[dict], s: Any, steps: int, decoder_note: str, digits: bool) -> Table:
    """The stage-2 (and stage-3) rows as a table; ``decoder_note`` names the pretrained
    decoder."""
    t = Table(
        "Stage 2: multimodal IC accuracy vs secondary-modality class count K2",
        ["decoder", "M2", "K2", "control", "test", "IC", "IC2", "IW", "IH (last layer)"],
        notes=(
            f"Secondary modality: a GMM bank with D2={D2} and K2 classes (L2 = min(K2, L1) "
            f"labels, a subset of the L1={s.L} labels), sequences [M1, M2, y] x {s.N} + "
            f"[M1_q, M2_q], bursty (B={s.B}). {decoder_note} {steps} AdamW steps each. control "
            "m1_random: the M1 query comes from a class unrelated to the context, so only the "
            "M2 association can solve the task (the authors' generator has no such control). "
            "IC: novel M2 classes with random labels."
        ),
    )
    t.extend(rows)
    if digits:
        t.notes += (
            " Digits rows: scikit-learn 8x8 digits 0-4 train, IC on digits 5-9 with random "
            "labels; CNN encoder, projector and decoder trained jointly (stage 3)."
        )
    return t
