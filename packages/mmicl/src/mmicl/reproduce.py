"""``mmicl reproduce``: the paper's headline comparisons at CPU scale.

Paper: "Dissecting Multimodal In-Context Learning: Modality Asymmetries and Circuit Dynamics
in Modern Transformers", Huang et al., ICML 2026 (arXiv 2601.20796).

One run, same data banks and step budgets for every row:

1. stage 1: decoders with absolute (APE), RoPE and ALiBi positions in the authors' layout
   (raw tokens, fixed one-hot position channels concatenated for APE) trained at several
   class counts ``K`` for a fixed step budget; accuracy on ``test/IC/IC2/IW``, next to two
   anchors computed on the same sets: a random context label (what copying without matching
   gives) and the label of the nearest context item (the ideal induction rule); the ICL
   threshold ``K*`` (smallest ``K`` whose final IC accuracy reaches 0.5);
1b. ICL onset at the largest ``K`` over several seeds: the first evaluated step at which the
   IC accuracy reaches 0.5, for the three encodings and three controls (RoPE at APE's
   width; APE and RoPE behind a learned linear input embedding, the usual modern layout);
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

import multiprocessing
import os
import statistics
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import lightning.pytorch as pl
import torch
from icml26_shared.progress import progress
from icml26_shared.results import Report, Table

from mmicl.evaluation import CurveRecorder, circuit_measures, knockout_table, split_accuracies
from mmicl.icl_data import MultimodalICLDataModule, UnimodalICLDataModule
from mmicl.stages import Stage1Module, Stage2Module, Stage3Module
from mmicl.transformer import concat_width

ONSET = 0.5  # IC accuracy that marks the ICL onset (twice the random-context-label level)


@dataclass(frozen=True)
class Model:
    """A stage-1 decoder variant: position encoding, input layout and width."""

    name: str
    pos: str
    embedding: str = "concat"
    d_model: int | None = None

    @property
    def layout(self) -> str:
        return "paper (one-hot concat)" if self.embedding == "concat" else "linear embedding"

    def width(self, D: int) -> int:
        return self.d_model or concat_width(D, self.pos, MAX_POSITIONS)


MAX_POSITIONS = 65  # 2 * N_max + 1 one-hot slots, N_max = 32 (authors' main_stage1.py)
# worker processes for the independent training runs (env MMICL_WORKERS; default: up to 2 CPUs)
WORKERS = int(os.environ.get("MMICL_WORKERS") or min(2, os.cpu_count() or 1))


def controls(D: int) -> tuple[Model, ...]:
    """RoPE at the width of the paper-layout APE decoder (rounded up to even), and APE /
    RoPE behind a learned linear embedding (d_model 64, the usual modern layout)."""
    w = concat_width(D, "ape", MAX_POSITIONS)
    return (
        Model(f"rope (width {w + w % 2})", "rope", "concat", w + w % 2),
        Model("ape (linear embedding)", "ape", "linear", 64),
        Model("rope (linear embedding)", "rope", "linear", 64),
    )


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
    controls: bool = True
    linear_seeds: int = 1  # seeds of the linear-embedding controls at the largest K
    workers: int = 1  # processes for the independent stage-1 runs


QUICK = Setting(
    positions=("ape", "rope", "alibi"),
    Ks=(8192,),
    seeds=1,
    steps=400,
    eval_every=50,
    K2s=(4,),
    stage2_steps=150,
    knockout_steps=400,
    digits=False,
    eval_sequences=300,
    workers=WORKERS,
)
FULL = Setting(
    positions=("ape", "rope", "alibi"),
    Ks=(1024, 8192),
    seeds=3,
    steps=500,
    eval_every=50,
    K2s=(4, 64),
    stage2_steps=150,
    knockout_steps=500,
    digits=True,
    eval_sequences=300,
    linear_seeds=0,  # the linear-embedding controls are in the quick run
    workers=WORKERS,
)


def _seeds(s: Setting, K: int, m: Model | None = None) -> int:
    """Seeds per run: all of them at the largest K (the headline), one elsewhere; the
    linear-embedding controls get ``s.linear_seeds``."""
    if s.Ks[-1] != K:
        return 1
    return s.linear_seeds if m is not None and m.embedding == "linear" else s.seeds


def _models(s: Setting, K: int) -> list[Model]:
    """Paper-layout decoders at every K; the controls at the largest K only."""
    paper = [Model(pos, pos) for pos in s.positions]
    extra = [c for c in controls(s.D) if c.embedding == "concat" or s.linear_seeds > 0]
    return paper + (extra if s.controls and s.Ks[-1] == K else [])


def _onset_text(onsets: list[int | None], steps: int) -> str:
    return ", ".join(str(o) if o is not None else f">{steps}" for o in onsets)


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


def _stage1_run(s: Setting, m: Model, K: int, sd: int, ckpt: Path) -> dict:
    """Train one stage-1 decoder (seeded: data, initialisation and position offsets) with a
    curve recorder; save its checkpoint; return the curve, final row and ICL onset step."""
    torch.set_num_threads(1)
    pl.seed_everything(sd, verbose=False)
    dm = _unimodal_data(s, K, sd)
    module = Stage1Module(
        s.D, s.L, m.d_model, n_layers=2, n_heads=1, pos=m.pos, embedding=m.embedding,
        max_positions=MAX_POSITIONS,
    )  # fmt: skip
    rec = CurveRecorder(dm.sets("test"), s.eval_every)
    trainer = _trainer(s.steps, [rec])
    trainer.fit(module, datamodule=dm)
    trainer.save_checkpoint(ckpt)
    onset = next((r["step"] for r in rec.rows if r["IC"] >= ONSET), None)
    return {"final": rec.rows[-1], "curve": rec.rows, "onset": onset}


def _stage2_run(
    s: Setting, seed: int, K1: int, K2: int, dec: str, ctl: str, ckpt: Path, arch: dict
) -> dict:
    """Stage 2 on a GMM secondary modality: projector only on the frozen pretrained decoder
    (``dec="pretrained"``) or a fresh decoder trained jointly (``"scratch"``); one row."""
    torch.set_num_threads(1)
    pl.seed_everything(seed, verbose=False)
    dm = MultimodalICLDataModule(
        K1=K1, L1=s.L, D1=s.D, bank1_seed=seed, K2=K2, D2=16, N=s.N, B=s.B, eps=s.eps,
        control=ctl, batch_size=s.batch_size, train_batches=s.stage2_steps,
        eval_sequences=s.eval_sequences, seed=seed,
    )  # fmt: skip
    if dec == "pretrained":
        module = Stage2Module(s.D, s.L, 16, decoder_checkpoint=str(ckpt))
    else:
        module = Stage2Module(s.D, s.L, 16, freeze_decoder=False, **arch)
    _trainer(s.stage2_steps).fit(module, datamodule=dm)
    sets = dm.sets("test")
    return {
        "decoder": dec, "M2": "gmm", "K2": K2, "control": ctl, **split_accuracies(module, sets),
        "IH (last layer)": circuit_measures(module, sets["IC"])["ih"],
    }  # fmt: skip


def _stage3_run(s: Setting, seed: int, K1: int, dec: str, ckpt: Path, arch: dict) -> dict:
    """Stage 3 on scikit-learn digits through a CNN encoder trained jointly; one row."""
    torch.set_num_threads(1)
    pl.seed_everything(seed, verbose=False)
    dm = MultimodalICLDataModule(
        K1=K1, L1=s.L, D1=s.D, bank1_seed=seed, modality2="digits", K2=5, N=s.N, B=s.B,
        eps=s.eps, control="m1_random", batch_size=s.batch_size, train_batches=s.stage2_steps,
        eval_sequences=s.eval_sequences, seed=seed,
    )  # fmt: skip
    module = Stage3Module(
        s.D, s.L, 64, decoder_checkpoint=str(ckpt) if dec == "pretrained" else None,
        encoder="cnn", **arch,
    )  # fmt: skip
    _trainer(s.stage2_steps).fit(module, datamodule=dm)
    sets = dm.sets("test")
    return {
        "decoder": f"{dec} (stage 3, CNN encoder)", "M2": "digits", "K2": 5,
        "control": "m1_random", **split_accuracies(module, sets),
        "IH (last layer)": circuit_measures(module, sets["IC"])["ih"],
    }  # fmt: skip


def _knockout_run(s: Setting, seed: int, K: int, m: Model, width: int) -> list[dict]:
    """Train a 2-layer, 2-head decoder of ``m``'s layout and return the knockout rows."""
    torch.set_num_threads(1)
    pl.seed_everything(seed, verbose=False)
    dm = _unimodal_data(s, K, seed)
    module = Stage1Module(
        s.D, s.L, width, n_layers=2, n_heads=2, pos=m.pos, embedding=m.embedding,
        max_positions=MAX_POSITIONS,
    )  # fmt: skip
    _trainer(s.knockout_steps).fit(module, datamodule=dm)
    return knockout_table(module.model, dm.sets("test"), seed)


def _run_job(job: tuple):
    """Run one ``(kind, *args)`` job."""
    kind, *args = job
    return {"stage1": _stage1_run, "stage2": _stage2_run, "stage3": _stage3_run,
            "knockout": _knockout_run}[kind](*args)  # fmt: skip


def _run_all(s: Setting, jobs: list[tuple], desc: str) -> list:
    """Run ``(kind, *args)`` jobs, in ``s.workers`` processes when more than one (every job
    seeds itself, so the numbers do not depend on the number of workers)."""
    if s.workers > 1 and len(jobs) > 1:
        ctx = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(min(s.workers, len(jobs)), mp_context=ctx) as pool:
            return list(progress(pool.map(_run_job, jobs), desc=desc, total=len(jobs)))
    return [_run_job(j) for j in progress(jobs, desc=desc, total=len(jobs))]


def reproduce(out: Path, quick: bool = False, seed: int = 0) -> Report:
    """Run the stage-1 / stage-2 / circuit / knockout comparisons and return the report."""
    torch.set_num_threads(1)  # tiny models: threads only add contention on small CPUs
    s = QUICK if quick else FULL
    report = Report("mmicl", out)
    t0 = time.perf_counter()
    workdir = tempfile.TemporaryDirectory(prefix="mmicl-")
    ckdir = Path(workdir.name)

    # ------------------------------------------------------------ stage 1
    K_top = s.Ks[-1]
    jobs = [(m, K, seed + r) for K in s.Ks for m in _models(s, K) for r in range(_seeds(s, K, m))]
    runs: dict[tuple[str, int, int], dict] = {}
    sets_by = {
        (K, sd): _unimodal_data(s, K, sd).sets("test") for _, K, sd in jobs
    }  # fixed, seeded evaluation sets: the same in every worker
    args = [(s, m, K, sd, ckdir / f"stage1-{m.pos}-{m.embedding}-{m.width(s.D)}-{K}-{sd}.ckpt")
            for m, K, sd in jobs]  # fmt: skip
    results = _run_all(s, [("stage1", *a) for a in args], "stage 1")
    for (m, K, sd), a, res in zip(jobs, args, results, strict=True):
        runs[(m.name, K, sd)] = {"model": m, "ckpt": a[-1], **res}

    def finals(name: str, K: int) -> list[dict]:
        return [runs[(name, K, seed + r)]["final"] for r in range(_seeds(s, K))]

    t1 = Table(
        "Stage 1: ICL vs IWL by position encoding and class count K (fixed step budget)",
        ["model", "K", "test", "IC", "IC sd", "IC2", "IW", "IH (last layer)"],
        notes=(
            f"{s.steps} AdamW steps (lr 1e-3, weight decay 1e-6) of {s.batch_size} sequences; "
            "2-layer, 1-head pre-RMSNorm SwiGLU decoder in the authors' layout: no learned "
            "input map, the residual stream is the raw token (width D) for rope / alibi and "
            f"[one-hot position over {MAX_POSITIONS} slots, token] (width "
            f"{concat_width(s.D, 'ape', MAX_POSITIONS)}) for ape, with a random slot offset per "
            f"training sequence. D={s.D}, L={s.L}, N={s.N}, B={s.B}, eps={s.eps}, p_B=1, "
            f"alpha=0. Means over {s.seeds} seed(s) at K={K_top} and one seed at smaller K "
            "(each seed its own bank, stream and initialisation; IC sd = standard deviation "
            f"over seeds), {s.eval_sequences} test sequences per split. IC: novel classes, "
            "bursty; IC2: labels shifted +1; IW: non-bursty. Anchors are computed on the same "
            "sets."
        ),
    )
    for K in s.Ks:
        for pos in s.positions:
            f = finals(pos, K)
            ic_m, ic_sd = _mean_sd([x["IC"] for x in f])
            t1.add_row(
                model=pos, K=K, test=_mean_sd([x["test"] for x in f])[0], IC=ic_m,
                **{"IC sd": ic_sd}, IC2=_mean_sd([x["IC2"] for x in f])[0],
                IW=_mean_sd([x["IW"] for x in f])[0],
                **{"IH (last layer)": _mean_sd([x["ih"] for x in f])[0]},
            )  # fmt: skip
        anchors = [_anchors(sets_by[(K, seed + r)], s.N) for r in range(_seeds(s, K))]
        for name in anchors[0]:
            vals = {k: statistics.fmean(a[name][k] for a in anchors) for k in anchors[0][name]}
            t1.add_row(model=f"anchor: {name}", K=K, **vals)
    report.add_table(t1)

    t1b = Table(
        f"Stage 1: ICL onset at K={K_top} over seeds",
        ["model", "layout", "width", "seeds", "onset steps (per seed)", "onset mean", "onset sd",
         "reached", "final IC", "final IC sd", "final IW", "threshold K*"],
        notes=(
            f"Onset = first evaluated step (every {s.eval_every}) at which IC accuracy reaches "
            f"{ONSET} (the random-context-label anchor is about 0.25, the plateau 1); "
            f">{s.steps} = not within the budget; onset mean / sd over the seeds that reached "
            "it. threshold K* = the smallest K of the sweep whose final IC accuracy (mean over "
            f"seeds) reaches {ONSET} after {s.steps} steps (paper-layout rows; '-' = none). "
            "Controls: rope at the paper-layout ape width (extra channels start at zero)"
            + (
                ", and ape / rope behind a learned linear input embedding (d_model 64; ape a "
                "learned position embedding added to it, N(0, 0.02) initialisation)."
                if s.linear_seeds > 0
                else "."
            )
        ),
    )  # fmt: skip
    for m in _models(s, K_top):
        keys = [(m.name, K_top, seed + r) for r in range(_seeds(s, K_top, m))]
        onsets = [runs[k]["onset"] for k in keys]
        reached = [o for o in onsets if o is not None]
        ic_m, ic_sd = _mean_sd([runs[k]["final"]["IC"] for k in keys])
        threshold = "-"
        if m.embedding == "concat" and m.name in s.positions:
            ok = [K for K in s.Ks if _mean_sd([f["IC"] for f in finals(m.name, K)])[0] >= ONSET]
            threshold = str(min(ok)) if ok else "-"
        t1b.add_row(
            model=m.name, layout=m.layout, width=m.width(s.D), seeds=len(keys),
            **{"onset steps (per seed)": _onset_text(onsets, s.steps),
               "onset mean": statistics.fmean(reached) if reached else "-",
               "onset sd": _mean_sd(reached)[1] if reached else "-",
               "reached": f"{len(reached)}/{len(onsets)}",
               "final IC": ic_m, "final IC sd": ic_sd,
               "final IW": _mean_sd([runs[k]["final"]["IW"] for k in keys])[0],
               "threshold K*": threshold},
        )  # fmt: skip
    report.add_table(t1b)

    # ------------------------------------------------------------ stage 2
    top = [runs[(m.name, K_top, seed)] for m in _models(s, K_top)]
    best = max(top, key=lambda r: r["final"]["IC"])  # first of equals: the paper layout
    bm: Model = best["model"]
    dec_ckpt, best_pos = best["ckpt"], bm.name
    arch = {"decoder_d_model": bm.d_model, "decoder_pos": bm.pos, "decoder_embedding": bm.embedding}
    t2 = Table(
        "Stage 2: multimodal IC accuracy vs secondary-modality class count K2",
        ["decoder", "M2", "K2", "control", "test", "IC", "IC2", "IW", "IH (last layer)"],
        notes=(
            f"Secondary modality: a GMM bank with D2=16 and K2 classes (L2 = min(K2, L1) labels, "
            f"a subset of the L1={s.L} labels), sequences [M1, M2, y] x {s.N} + [M1_q, M2_q], "
            f"bursty (B={s.B}). pretrained = the stage-1 {best_pos} decoder ({bm.layout}; the "
            f"highest final IC at K={K_top}, seed "
            f"{seed}), frozen, only the projector trained; scratch = a fresh {best_pos} decoder "
            f"trained jointly with the projector. {s.stage2_steps} AdamW steps each. control "
            "m1_random: the M1 query comes from a class unrelated to the context, so only the "
            "M2 association can solve the task (the authors' generator has no such control). "
            "IC: novel M2 classes with random labels."
        ),
    )
    variants = [("pretrained", "none"), ("pretrained", "m1_random"), ("scratch", "m1_random")]
    width = -(-bm.width(s.D) // 4) * 4  # knockout decoder: two heads, even (RoPE) head dim
    later = [("stage2", s, seed, K_top, K2, dec, ctl, dec_ckpt, arch)
             for K2 in s.K2s for dec, ctl in variants]  # fmt: skip
    if s.digits:
        later += [
            ("stage3", s, seed, K_top, dec, dec_ckpt, arch) for dec in ("pretrained", "scratch")
        ]
    later.append(("knockout", s, seed, K_top, bm, width))
    *stage2_rows, knockout_rows = _run_all(s, later, "stages 2-3, knockout")
    t2.extend(stage2_rows)
    if s.digits:
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
    t4 = Table(
        "Head knockout in a 2-layer, 2-head decoder",
        ["knockout", "heads", "IC acc", "IC2 acc", "IW acc"],
        notes=(
            f"{best_pos} decoder ({bm.layout}, width {width}), K={K_top}, {s.knockout_steps} "
            "steps; heads ranked by IH "
            "strength / previous-token strength on the IC set; knocking out zeroes the head's "
            "slice of the input to the output projection; the random head is drawn (seeded) "
            "among the heads that are neither the top induction nor the top previous-token "
            "head."
        ),
    )
    t4.extend(knockout_rows)
    report.add_table(t4)

    # ------------------------------------------------------------ figure
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 3.8))
    for m in _models(s, K_top):
        curves = [runs[(m.name, K_top, seed + r)]["curve"] for r in range(_seeds(s, K_top, m))]
        steps = [r["step"] for r in curves[0]]
        for ax, key in ((axes[0], "IC"), (axes[1], "ih")):
            vals = torch.tensor([[r[key] for r in c] for c in curves])  # (seeds, evals)
            (line,) = ax.plot(steps, vals.mean(0), label=m.name)
            ax.fill_between(steps, vals.min(0).values, vals.max(0).values, alpha=0.15,
                            color=line.get_color())  # fmt: skip
    axes[0].axhline(ONSET, color="grey", lw=0.8, ls=":", label=f"onset threshold {ONSET}")
    axes[0].set(xlabel="step", ylabel="IC accuracy", title=f"IC accuracy, K={K_top}")
    axes[1].set(xlabel="step", ylabel="IH strength", title="induction strength (last layer)")
    axes[0].legend(fontsize=7)
    axes[1].legend(fontsize=7)
    report.save_figure(fig, "training_curves.png")

    report.note(
        f"Stage 1 trained {len(jobs)} decoders; stage 2 used the {best_pos} decoder. Figure: "
        f"mean IC accuracy and IH strength over the seeds at K={K_top} (band: min-max). "
        f"Wall time of the runs {time.perf_counter() - t0:.0f} s; isnan(rho) marks a "
        "constant measure."
    )
    report.metadata["setting"] = {k: getattr(s, k) for k in s.__dataclass_fields__}
    workdir.cleanup()
    return report
