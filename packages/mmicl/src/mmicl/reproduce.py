"""``mmicl reproduce``: the paper's headline comparisons at CPU scale.

Paper: "Dissecting Multimodal In-Context Learning: Modality Asymmetries and Circuit Dynamics
in Modern Transformers", Huang et al., ICML 2026 (arXiv 2601.20796).

One run, same data banks and step budgets for every row:

1. stage 1: decoders with absolute (APE), RoPE and ALiBi positions trained at several class
   counts ``K`` and seeds; accuracy on ``test/IC/IC2/IW`` and the first step at which the IC
   accuracy reaches 0.8 (ICL onset), next to two anchors computed on the same sets: a
   random context label (what copying without matching gives) and the label of the nearest
   context item (the ideal induction rule);
2. stage 2: projector-only training on a secondary GMM modality with ``K2`` classes on top
   of the frozen pretrained decoder, with and without the uninformative-M1 control, against a
   decoder trained from scratch on the same data; plus (full run) the digits modality through
   a CNN encoder trained jointly (stage 3);
3. Spearman correlation of the circuit measures with IC accuracy across all recorded
   checkpoints of stage 1;
4. knockout of the top induction head vs a random other head vs the top previous-token head
   in a two-head-per-layer decoder.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import lightning.pytorch as pl
import torch
from icml26_shared.progress import progress
from icml26_shared.results import Report, Table

from mmicl.evaluation import CurveRecorder, circuit_measures, knockout_table, split_accuracies
from mmicl.icl_data import MultimodalICLDataModule, UnimodalICLDataModule
from mmicl.stages import Stage1Module, Stage2Module, Stage3Module

ONSET = 0.8  # IC accuracy that marks the ICL onset


@dataclass(frozen=True)
class Setting:
    """Sizes of one reproduce run."""

    positions: tuple[str, ...]
    Ks: tuple[int, ...]
    seeds: int
    steps: int
    eval_every: int
    K2s: tuple[int, ...]
    stage2_steps: int
    knockout_steps: int
    digits: bool
    eval_sequences: int
    batch_size: int = 64
    D: int = 32
    L: int = 32
    N: int = 8
    B: int = 2
    eps: float = 0.1
    d_model: int = 64


QUICK = Setting(
    positions=("ape", "rope", "alibi"),
    Ks=(8192,),
    seeds=1,
    steps=400,
    eval_every=100,
    K2s=(4,),
    stage2_steps=150,
    knockout_steps=400,
    digits=False,
    eval_sequences=300,
)
FULL = Setting(
    positions=("ape", "rope", "alibi"),
    Ks=(1024, 8192),
    seeds=2,
    steps=1000,
    eval_every=125,
    K2s=(4, 16, 64),
    stage2_steps=300,
    knockout_steps=1000,
    digits=True,
    eval_sequences=500,
    batch_size=128,
)


def _seeds(s: Setting, K: int) -> int:
    """Seeds per class count: all of them at the largest K (the headline), one elsewhere."""
    return s.seeds if s.Ks[-1] == K else 1


def _trainer(steps: int, callbacks=()) -> pl.Trainer:
    return pl.Trainer(
        accelerator="cpu",
        devices=1,
        max_steps=steps,
        max_epochs=1,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        num_sanity_val_steps=0,
        limit_val_batches=0,
        callbacks=list(callbacks),
    )


def _unimodal_data(s: Setting, K: int, seed: int) -> UnimodalICLDataModule:
    return UnimodalICLDataModule(
        K=K,
        L=s.L,
        D=s.D,
        N=s.N,
        B=s.B,
        eps=s.eps,
        bank_seed=seed,
        batch_size=s.batch_size,
        train_batches=s.steps + s.knockout_steps,
        eval_sequences=s.eval_sequences,
        seed=seed,
    )


def _anchors(sets: dict[str, dict[str, torch.Tensor]], N: int) -> dict[str, dict[str, float]]:
    """Random-context-label and nearest-context-item accuracies on the same sets."""
    out = {"random context label": {}, "nearest context item (ideal induction)": {}}
    g = torch.Generator().manual_seed(0)
    for name, b in sets.items():
        labels = b["labels"][:, :N]
        pick = torch.randint(0, N, (len(labels),), generator=g)
        rnd = labels[torch.arange(len(labels)), pick]
        out["random context label"][name] = float((rnd == b["target"]).float().mean())
        if "tokens" in b:
            items, query = b["tokens"][:, 0 : 2 * N : 2], b["tokens"][:, -1:]
        else:
            items, query = b["m2"][:, :N], b["m2"][:, N:]
        nearest = (items - query).pow(2).sum(-1).argmin(1)
        nn_lab = labels[torch.arange(len(labels)), nearest]
        out["nearest context item (ideal induction)"][name] = float(
            (nn_lab == b["target"]).float().mean()
        )
    return out


def _mean_sd(values: list[float]) -> tuple[float, float]:
    return statistics.fmean(values), (statistics.stdev(values) if len(values) > 1 else 0.0)


def _spearman(x: list[float], y: list[float]) -> float:
    from scipy.stats import spearmanr

    if len(set(x)) < 2 or len(set(y)) < 2:
        return float("nan")
    return float(spearmanr(x, y).statistic)


def reproduce(out: Path, quick: bool = False, seed: int = 0) -> Report:
    """Run the stage-1 / stage-2 / circuit / knockout comparisons and return the report."""
    torch.set_num_threads(1)  # tiny models: threads only add contention on small CPUs
    s = QUICK if quick else FULL
    report = Report("mmicl", out)
    t0 = time.perf_counter()
    workdir = tempfile.TemporaryDirectory(prefix="mmicl-")
    ckdir = Path(workdir.name)

    # ------------------------------------------------------------ stage 1
    jobs = [(pos, K, seed + r) for K in s.Ks for pos in s.positions for r in range(_seeds(s, K))]
    runs: dict[tuple[str, int, int], dict] = {}
    sets_by: dict[tuple[int, int], dict] = {}
    for pos, K, sd in progress(jobs, desc="stage 1", total=len(jobs)):
        pl.seed_everything(sd, verbose=False)
        dm = _unimodal_data(s, K, sd)
        sets = sets_by.setdefault((K, sd), dm.sets("test"))
        module = Stage1Module(s.D, s.L, s.d_model, n_layers=2, n_heads=1, pos=pos)
        rec = CurveRecorder(sets, s.eval_every)
        trainer = _trainer(s.steps, [rec])
        trainer.fit(module, datamodule=dm)
        ckpt = ckdir / f"stage1-{pos}-{K}-{sd}.ckpt"
        trainer.save_checkpoint(ckpt)
        onset = next((r["step"] for r in rec.rows if r["IC"] >= ONSET), None)
        runs[(pos, K, sd)] = {
            "final": rec.rows[-1],
            "curve": rec.rows,
            "onset": onset,
            "ckpt": ckpt,
        }

    t1 = Table(
        "Stage 1: ICL vs IWL by position encoding and class count K",
        ["model", "K", "test", "IC", "IC sd", "IC2", "IW", "IH (last layer)", "ICL onset step"],
        notes=(
            f"{s.steps} AdamW steps (lr 1e-3) of {s.batch_size} sequences; 2-layer, 1-head "
            f"pre-RMSNorm SwiGLU decoder, d_model={s.d_model}; D={s.D}, L={s.L}, N={s.N}, "
            f"B={s.B}, eps={s.eps}, p_B=1, alpha=0. Means over {s.seeds} seed(s) at K={s.Ks[-1]} "
            "and one seed at smaller K (each seed its own bank, stream and initialisation; "
            f"IC sd = standard deviation over seeds), {s.eval_sequences} test sequences per "
            "split. IC: "
            "novel classes, bursty; IC2: labels shifted +1; IW: non-bursty. ICL onset = first "
            f"evaluated step (every {s.eval_every}) with IC >= {ONSET} (mean over the seeds "
            "that reach it, with how many did; '-' = none). Anchors are computed on the "
            "same sets."
        ),
    )
    for K in s.Ks:
        for pos in s.positions:
            n_seeds = _seeds(s, K)
            finals = [runs[(pos, K, seed + r)]["final"] for r in range(n_seeds)]
            onsets = [runs[(pos, K, seed + r)]["onset"] for r in range(n_seeds)]
            reached = [o for o in onsets if o is not None]
            ic_m, ic_sd = _mean_sd([f["IC"] for f in finals])
            t1.add_row(
                model=pos,
                K=K,
                test=_mean_sd([f["test"] for f in finals])[0],
                IC=ic_m,
                **{"IC sd": ic_sd},
                IC2=_mean_sd([f["IC2"] for f in finals])[0],
                IW=_mean_sd([f["IW"] for f in finals])[0],
                **{"IH (last layer)": _mean_sd([f["ih"] for f in finals])[0]},
                **{
                    "ICL onset step": (
                        f"{statistics.fmean(reached):.0f} ({len(reached)}/{n_seeds})"
                        if reached
                        else "-"
                    )
                },
            )
        anchors = [_anchors(sets_by[(K, seed + r)], s.N) for r in range(_seeds(s, K))]
        for name in anchors[0]:
            vals = {k: statistics.fmean(a[name][k] for a in anchors) for k in anchors[0][name]}
            t1.add_row(model=f"anchor: {name}", K=K, **vals)
    report.add_table(t1)

    # ------------------------------------------------------------ stage 2
    K_top = s.Ks[-1]
    best_pos = max(s.positions, key=lambda p: (runs[(p, K_top, seed)]["final"]["IC"], p == "rope"))
    dec_ckpt = runs[(best_pos, K_top, seed)]["ckpt"]
    t2 = Table(
        "Stage 2: multimodal IC accuracy vs secondary-modality class count K2",
        ["decoder", "M2", "K2", "control", "test", "IC", "IC2", "IW", "IH (last layer)"],
        notes=(
            f"Secondary modality: a GMM bank with D2=16 and K2 classes (L2 = min(K2, L1) labels, "
            f"a subset of the L1={s.L} labels), sequences [M1, M2, y] x {s.N} + [M1_q, M2_q], "
            f"bursty (B={s.B}). pretrained = the stage-1 {best_pos} decoder (K={K_top}, seed "
            f"{seed}), frozen, only the projector trained; scratch = a fresh {best_pos} decoder "
            f"trained jointly with the projector. {s.stage2_steps} AdamW steps each. control "
            "m1_random: the M1 query comes from a class unrelated to the context, so only the "
            "M2 association can solve the task (the authors' generator has no such control). "
            "IC: novel M2 classes with random labels."
        ),
    )
    variants = [("pretrained", "none"), ("pretrained", "m1_random"), ("scratch", "m1_random")]
    s2_jobs = [(K2, dec, ctl) for K2 in s.K2s for dec, ctl in variants]
    for K2, dec, ctl in progress(s2_jobs, desc="stage 2", total=len(s2_jobs)):
        pl.seed_everything(seed, verbose=False)
        dm = MultimodalICLDataModule(
            K1=K_top, L1=s.L, D1=s.D, bank1_seed=seed, K2=K2, D2=16, N=s.N, B=s.B, eps=s.eps,
            control=ctl, batch_size=s.batch_size, train_batches=s.stage2_steps,
            eval_sequences=s.eval_sequences, seed=seed,
        )  # fmt: skip
        if dec == "pretrained":
            module = Stage2Module(s.D, s.L, 16, decoder_checkpoint=str(dec_ckpt))
        else:
            module = Stage2Module(
                s.D, s.L, 16, freeze_decoder=False, decoder_d_model=s.d_model, decoder_pos=best_pos
            )
        _trainer(s.stage2_steps).fit(module, datamodule=dm)
        sets = dm.sets("test")
        acc = split_accuracies(module, sets)
        t2.add_row(
            decoder=dec, M2="gmm", K2=K2, control=ctl, **acc,
            **{"IH (last layer)": circuit_measures(module, sets["IC"])["ih"]},
        )  # fmt: skip
    if s.digits:
        for dec in ("pretrained", "scratch"):
            pl.seed_everything(seed, verbose=False)
            dm = MultimodalICLDataModule(
                K1=K_top, L1=s.L, D1=s.D, bank1_seed=seed, modality2="digits", K2=5, N=s.N,
                B=s.B, eps=s.eps, control="m1_random", batch_size=s.batch_size,
                train_batches=s.stage2_steps, eval_sequences=s.eval_sequences, seed=seed,
            )  # fmt: skip
            module = Stage3Module(
                s.D, s.L, 64, decoder_checkpoint=str(dec_ckpt) if dec == "pretrained" else None,
                encoder="cnn", decoder_d_model=s.d_model, decoder_pos=best_pos,
            )  # fmt: skip
            _trainer(s.stage2_steps).fit(module, datamodule=dm)
            sets = dm.sets("test")
            t2.add_row(
                decoder=f"{dec} (stage 3, CNN encoder)", M2="digits", K2=5, control="m1_random",
                **split_accuracies(module, sets),
                **{"IH (last layer)": circuit_measures(module, sets["IC"])["ih"]},
            )  # fmt: skip
        t2.notes += (
            " Digits rows: scikit-learn 8x8 digits 0-4 train, IC on digits 5-9 with random "
            "labels; CNN encoder, projector and decoder trained jointly (stage 3)."
        )
    report.add_table(t2)

    # ------------------------------------------------------------ circuits vs IC accuracy
    t3 = Table(
        "Circuit measures vs IC accuracy across stage-1 checkpoints (Spearman rho)",
        ["measure", "rho with IC acc", "checkpoints"],
        notes=(
            "Pooled over every recorded checkpoint of every stage-1 run; measures from the "
            "final token's attention on the IC set: IH strength, TILA and TLA of the last "
            "layer, previous-token strength of the first layer, CLA."
        ),
    )
    rows = [r for run in runs.values() for r in run["curve"]]
    for key in ("ih", "tila", "tla", "prev", "cla"):
        t3.add_row(
            measure=key, **{"rho with IC acc": _spearman([r[key] for r in rows], [r["IC"] for r in rows])},
            checkpoints=len(rows),
        )  # fmt: skip
    report.add_table(t3)

    # ------------------------------------------------------------ knockout
    pl.seed_everything(seed, verbose=False)
    dm = _unimodal_data(s, K_top, seed)
    module = Stage1Module(s.D, s.L, s.d_model, n_layers=2, n_heads=2, pos=best_pos)
    _trainer(s.knockout_steps).fit(module, datamodule=dm)
    t4 = Table(
        "Head knockout in a 2-layer, 2-head decoder",
        ["knockout", "heads", "IC acc", "IC2 acc", "IW acc"],
        notes=(
            f"{best_pos} decoder, K={K_top}, {s.knockout_steps} steps; heads ranked by IH "
            "strength / previous-token strength on the IC set; knocking out zeroes the head's "
            "slice of the input to the output projection; the random head is drawn (seeded) "
            "among the heads that are neither the top induction nor the top previous-token "
            "head."
        ),
    )
    t4.extend(knockout_table(module.model, sets_by[(K_top, seed)], seed))
    report.add_table(t4)

    # ------------------------------------------------------------ figure
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
    for pos in s.positions:
        curve = runs[(pos, K_top, seed)]["curve"]
        steps = [r["step"] for r in curve]
        axes[0].plot(steps, [r["IC"] for r in curve], label=f"{pos} IC")
        axes[0].plot(steps, [r["IW"] for r in curve], ls="--", label=f"{pos} IW")
        axes[1].plot(steps, [r["ih"] for r in curve], label=pos)
    axes[0].axhline(0.25, color="grey", lw=0.8, ls=":", label="random context label")
    axes[0].set(xlabel="step", ylabel="accuracy", title=f"IC / IW accuracy, K={K_top}")
    axes[1].set(xlabel="step", ylabel="IH strength", title="induction strength (last layer)")
    axes[0].legend(fontsize=7)
    axes[1].legend(fontsize=7)
    report.save_figure(fig, "training_curves.png")

    report.note(
        f"Stage 1 trained {len(jobs)} decoders; stage 2 used the {best_pos} decoder. "
        f"Wall time of the runs {time.perf_counter() - t0:.0f} s; isnan(rho) marks a "
        "constant measure."
    )
    report.metadata["setting"] = {k: getattr(s, k) for k in s.__dataclass_fields__}
    workdir.cleanup()
    return report
