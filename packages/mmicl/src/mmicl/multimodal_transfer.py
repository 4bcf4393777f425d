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
4. a real-image secondary modality from a feature bank (:mod:`mmicl.feature_bank`; in
   ``reproduce`` scikit-learn's digits embedded by PCA), swept over the number of training
   classes ``K2`` -> :func:`train_stage2` with ``features=path.npz``;
5. stage 3: scikit-learn digits through a CNN encoder, trained jointly -> :func:`train_stage3`.

Each run returns one row (split accuracies, with the query-free in-weights split ``IW0``,
and the last layer's IH strength on the IC set); :func:`transfer_table` collects them, mean
and standard deviation over seeds, with the setting in its notes.
"""

from __future__ import annotations

from pathlib import Path
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
    steps: int, features: str | None = None, m2_name: str = "gmm",
) -> dict:  # fmt: skip
    """One stage-2 row on a GMM secondary modality with ``K2`` classes (or, with
    ``features``, a feature bank whose first ``K2`` classes train).

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
        features: A ``.npz`` feature bank (:mod:`mmicl.feature_bank`) instead of the GMM.
        m2_name: The name of the secondary modality in the row.
    """
    import lightning.pytorch as pl
    import torch

    from mmicl.lightning import Stage2Module

    torch.set_num_threads(1)
    pl.seed_everything(seed, verbose=False)
    if features is None:
        dm = _data(s, seed, K1, steps, K2=K2, D2=D2, control=control)
    else:
        dm = _data(s, seed, K1, steps, K2=K2, modality2="features", features=str(features),
                   control=control)  # fmt: skip
    d2 = dm.d2
    if decoder == "pretrained":
        module = Stage2Module(s.D, s.L, d2, decoder_checkpoint=str(ckpt))
    else:
        module = Stage2Module(s.D, s.L, d2, freeze_decoder=False, **arch)
    row = {"decoder": decoder, "M2": m2_name, "K2": K2, "control": control, "seed": seed}
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
           "control": "m1_random", "seed": seed}  # fmt: skip
    return {**row, **_fit_and_score(s, module, dm, steps)}


def transfer_table(rows: list[dict], s: Any, steps: int, decoder_note: str, digits: bool) -> Table:
    """The stage-2 (and stage-3) rows as a table, mean and sd over the seeds of each
    ``(decoder, M2, K2, control)``; ``decoder_note`` names the pretrained decoder."""
    import statistics

    def ms(vals: list[float]) -> tuple[float, float]:
        return statistics.fmean(vals), (statistics.stdev(vals) if len(vals) > 1 else 0.0)

    t = Table(
        "Stage 2: multimodal IC accuracy vs secondary-modality class count K2",
        ["decoder", "M2", "K2", "control", "seeds", "test", "IC", "IC sd", "IC2", "IW",
         "IW0 (query-free)", "IW0 sd", "IH (last layer)"],
        notes=(
            f"Secondary modality: a GMM bank with D2={D2} and K2 classes (L2 = min(K2, L1) "
            f"labels, a subset of the L1={s.L} labels), or real images: a feature bank "
            "(mmicl.feature_bank) of scikit-learn's 8x8 digits embedded by a 16-component PCA, "
            "the first K2 digits training, the rest novel (IC). Sequences [M1, M2, y] x "
            f"{s.N} + [M1_q, M2_q], bursty (B={s.B}). {decoder_note} {steps} AdamW steps each; "
            "mean and sd over the seeds (each seed its own stage-1 decoder, banks and stream). "
            "control m1_random: the M1 query comes from a class unrelated to the context, so "
            "only the M2 association can solve the task (the authors' generator has no such "
            "control). IC: novel M2 classes with random labels; IW: non-bursty (at small K2 "
            "nearly every context holds the query's class); IW0: non-bursty and query-free (no "
            "context item of the query's label): the in-weights test."
        ),
    )  # fmt: skip
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        groups.setdefault((r["decoder"], r["M2"], r["K2"], r["control"]), []).append(r)
    for (dec, m2, K2, ctl), rs in groups.items():
        ic, ic_sd = ms([r["IC"] for r in rs])
        iw0, iw0_sd = ms([r["IW0"] for r in rs])
        t.add_row(
            decoder=dec, M2=m2, K2=K2, control=ctl, seeds=len(rs),
            test=ms([r["test"] for r in rs])[0], IC=ic, **{"IC sd": ic_sd},
            IC2=ms([r["IC2"] for r in rs])[0], IW=ms([r["IW"] for r in rs])[0],
            **{"IW0 (query-free)": iw0, "IW0 sd": iw0_sd,
               "IH (last layer)": ms([r["IH (last layer)"] for r in rs])[0]},
        )  # fmt: skip
    if digits:
        t.notes += (
            " Stage-3 rows: scikit-learn 8x8 digits 0-4 train, IC on digits 5-9 with random "
            "labels; CNN encoder, projector and decoder trained jointly."
        )
    return t


def stage2_table(s: Any, v: Any, K: int, ckpts: dict[int, Any], workdir: Path) -> Table:
    """Every stage-2 (and stage-3) run of the ``reproduce`` section, in worker processes.

    Args:
        s: A :class:`mmicl.reproduce.Stage2Setting` (``K2s``, ``stage2_steps``, ``digits``,
            ``feature_K2s``, ``feature_dim`` and the sweep sizes).
        v: The stage-1 :class:`~mmicl.position_sweep.DecoderVariant` that is frozen.
        K: Its class count.
        ckpts: Its checkpoint per seed (one run per seed and setting).
        workdir: A folder for the digits feature bank (written as ``.npz`` and read back
            through the user-facing path).
    """
    from mmicl.feature_bank import digits_features, save_feature_bank
    from mmicl.workers import run_in_workers

    arch = {"decoder_d_model": v.d_model, "decoder_pos": v.pos, "decoder_embedding": v.embedding,
            "decoder_mlp": s.mlp}  # fmt: skip
    base, steps = s.sweep_part(), s.stage2_steps
    variants = [("pretrained", "none"), ("pretrained", "m1_random"), ("scratch", "m1_random")]
    jobs = [(train_stage2, base, sd, K, K2, dec, ctl, ck, arch, steps)
            for K2 in s.K2s for dec, ctl in variants for sd, ck in ckpts.items()]  # fmt: skip
    if s.feature_K2s:  # real images through the user-facing .npz path
        bank = save_feature_bank(Path(workdir) / "digits-features.npz",
                                 *digits_features(s.feature_dim))  # fmt: skip
        name = f"digits (PCA-{s.feature_dim} features)"
        jobs += [(train_stage2, base, sd, K, K2, dec, "m1_random", ck, arch, steps, str(bank), name)
                 for K2 in s.feature_K2s for dec in ("pretrained", "scratch")
                 for sd, ck in ckpts.items()]  # fmt: skip
    if s.digits:
        jobs += [(train_stage3, base, sd, K, dec, ck, arch, steps)
                 for dec in ("pretrained", "scratch") for sd, ck in ckpts.items()]  # fmt: skip
    rows = run_in_workers(jobs, s.workers, "stages 2-3")
    seed = min(ckpts)
    note = (
        f"pretrained = the stage-1 {v.name} decoder ({v.layout}; the highest final IC at K={K}, "
        f"seed {seed}) of the same seed, frozen, only the projector trained; scratch = a fresh "
        f"{v.name} decoder trained jointly with the projector."
    )
    return transfer_table(rows, s, steps, note, s.digits)
