"""The stage-1 sweep: ICL vs IWL and the ICL onset by position encoding, class count and seed.

Paper: "Dissecting Multimodal In-Context Learning", Huang et al., ICML 2026 (arXiv 2601.20796).

Decoders with absolute (APE), RoPE and ALiBi positions in the authors' layout (raw tokens;
for APE fixed one-hot position channels concatenated, :func:`mmicl.transformer.concat_width`)
are trained on :class:`~mmicl.lightning.UnimodalICLDataModule` for a fixed step budget at
several class counts ``K``, plus controls at the largest ``K`` (:func:`controls`). Each run
(:func:`train_stage1`) records the split accuracies and circuit measures every
``eval_every`` steps (:class:`mmicl.evaluation.CurveRecorder`). From the runs:

1. the ICL / IWL table, next to the context-only anchors (:mod:`mmicl.anchors`)
   -> :func:`icl_iwl_table`;
2. the ICL onset: the first evaluated step with IC accuracy ``>= ONSET``, per seed, and the
   threshold ``K* = min{K : mean final IC(K) >= ONSET}`` -> :func:`onset_step`,
   :func:`onset_table`, :func:`training_curves_figure`;
3. Spearman's rho between each circuit measure and IC accuracy over every recorded
   checkpoint -> :func:`circuit_correlation_table`.

:func:`run_sweep` trains every run once per process (in :func:`mmicl.workers.run_in_workers`)
and keeps the result, so the sections of ``reproduce`` built on the same sweep share it;
:func:`best_run` is the decoder that stage 2 and the knockout build on.
"""

from __future__ import annotations

import dataclasses
import statistics
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from icml26_shared.results import Table

from mmicl.transformer import concat_width

ONSET = 0.5  # IC accuracy that marks the ICL onset (twice the random-context-label level)
MAX_POSITIONS = 65  # 2 * N_max + 1 one-hot slots, N_max = 32 (authors' main_stage1.py)
MEASURES = ("ih", "tila", "tla", "prev", "cla")


@dataclass(frozen=True, kw_only=True)
class SweepSetting:
    """Sizes of the stage-1 sweep (the global keys of a ``reproduce`` preset).

    ``Ks`` ascending; all ``seeds`` run at the largest ``K`` (the headline), one elsewhere;
    the linear-embedding controls get ``linear_seeds``; ``workers`` processes train the
    independent runs (the numbers do not depend on it); ``accelerator`` is the Trainer's.
    """

    positions: tuple[str, ...]
    Ks: tuple[int, ...]
    seeds: int
    steps: int
    eval_every: int
    eval_sequences: int
    batch_size: int = 64
    D: int = 32
    L: int = 32
    N: int = 8
    B: int = 2
    eps: float = 0.1
    controls: bool = True
    linear_seeds: int = 1
    workers: int = 1
    accelerator: str = "cpu"

    def __post_init__(self) -> None:
        for name in ("positions", "Ks"):  # YAML lists -> tuples (hashable, comparable)
            object.__setattr__(self, name, tuple(getattr(self, name)))
        if not self.Ks or list(self.Ks) != sorted(self.Ks):
            raise ValueError(f"Ks must be a non-empty ascending list, got {list(self.Ks)}")
        if min(self.seeds, self.steps, self.eval_every, self.workers) < 1:
            raise ValueError("seeds, steps, eval_every and workers must be >= 1")

    def sweep_part(self) -> SweepSetting:
        """The :class:`SweepSetting` fields of this (possibly extended) setting."""
        names = [f.name for f in dataclasses.fields(SweepSetting)]
        return SweepSetting(**{n: getattr(self, n) for n in names})


@dataclass(frozen=True)
class DecoderVariant:
    """A stage-1 decoder: position encoding, input layout and width (``None``: the layout's)."""

    name: str
    pos: str
    embedding: str = "concat"
    d_model: int | None = None

    @property
    def layout(self) -> str:
        return "paper (one-hot concat)" if self.embedding == "concat" else "linear embedding"

    def width(self, D: int) -> int:
        """Residual width for token dimension ``D``."""
        return self.d_model or concat_width(D, self.pos, MAX_POSITIONS)


def controls(D: int) -> tuple[DecoderVariant, ...]:
    """RoPE at the width of the paper-layout APE decoder (rounded up to even), and APE /
    RoPE behind a learned linear embedding (d_model 64, the usual modern layout).

    >>> [c.name for c in controls(32)]
    ['rope (width 98)', 'ape (linear embedding)', 'rope (linear embedding)']
    """
    w = concat_width(D, "ape", MAX_POSITIONS)
    return (
        DecoderVariant(f"rope (width {w + w % 2})", "rope", "concat", w + w % 2),
        DecoderVariant("ape (linear embedding)", "ape", "linear", 64),
        DecoderVariant("rope (linear embedding)", "rope", "linear", 64),
    )


def variants(s: SweepSetting, K: int) -> list[DecoderVariant]:
    """Paper-layout decoders at every K; the controls at the largest K only (the linear
    ones only when they get seeds)."""
    paper = [DecoderVariant(pos, pos) for pos in s.positions]
    extra = [c for c in controls(s.D) if c.embedding == "concat" or s.linear_seeds > 0]
    return paper + (extra if s.controls and s.Ks[-1] == K else [])


def seed_count(s: SweepSetting, K: int, v: DecoderVariant | None = None) -> int:
    """Seeds per run: all of them at the largest K, one elsewhere; the linear-embedding
    controls get ``s.linear_seeds``."""
    if s.Ks[-1] != K:
        return 1
    return s.linear_seeds if v is not None and v.embedding == "linear" else s.seeds


def stage1_data(s: SweepSetting, K: int, seed: int, steps: int):
    """The seeded :class:`~mmicl.lightning.UnimodalICLDataModule` of one run (bank, stream
    and evaluation sets all from ``seed``)."""
    from mmicl.lightning import UnimodalICLDataModule

    return UnimodalICLDataModule(
        K=K, L=s.L, D=s.D, N=s.N, B=s.B, eps=s.eps, bank_seed=seed, batch_size=s.batch_size,
        train_batches=steps, eval_sequences=s.eval_sequences, seed=seed,
    )  # fmt: skip


def stage1_module(s: SweepSetting, v: DecoderVariant, width: int | None, n_heads: int = 1):
    """A 2-layer :class:`~mmicl.lightning.Stage1Module` of ``v``'s layout."""
    from mmicl.lightning import Stage1Module

    return Stage1Module(
        s.D, s.L, width, n_layers=2, n_heads=n_heads, pos=v.pos, embedding=v.embedding,
        max_positions=MAX_POSITIONS,
    )  # fmt: skip


def onset_step(curve: list[dict], threshold: float = ONSET) -> int | None:
    """First recorded step whose IC accuracy reaches ``threshold`` (``None``: never).

    >>> onset_step([{"step": 0, "IC": 0.2}, {"step": 50, "IC": 0.6}])
    50
    """
    return next((r["step"] for r in curve if r["IC"] >= threshold), None)


def train_stage1(s: SweepSetting, v: DecoderVariant, K: int, seed: int, ckpt: Path) -> dict:
    """Train one stage-1 decoder (seeded: data, initialisation and position offsets) with a
    curve recorder through the quiet Trainer; save its checkpoint to ``ckpt``.

    Returns:
        ``{"final": last curve row, "curve": rows, "onset": onset step or None}``.
    """
    import lightning.pytorch as pl
    import torch
    from icml26_shared.trainer import quiet_trainer

    from mmicl.evaluation import CurveRecorder

    torch.set_num_threads(1)
    pl.seed_everything(seed, verbose=False)
    dm = stage1_data(s, K, seed, s.steps)
    module = stage1_module(s, v, v.d_model)
    rec = CurveRecorder(dm.sets("test"), s.eval_every)
    trainer = quiet_trainer(
        max_epochs=1, max_steps=s.steps, num_sanity_val_steps=0, limit_val_batches=0,
        callbacks=[rec], accelerator=s.accelerator,
    )  # fmt: skip
    trainer.fit(module, datamodule=dm)
    trainer.save_checkpoint(ckpt)
    return {"final": rec.rows[-1], "curve": rec.rows, "onset": onset_step(rec.rows)}


@dataclass
class Stage1Sweep:
    """The trained runs of one sweep: ``runs[(variant name, K, seed)]`` holds the
    variant, its checkpoint, final row, curve and onset; ``sets[(K, seed)]`` the test sets."""

    setting: SweepSetting
    seed: int
    runs: dict[tuple[str, int, int], dict[str, Any]] = field(default_factory=dict)
    sets: dict[tuple[int, int], dict] = field(default_factory=dict)
    workdir: Any = None  # TemporaryDirectory holding the checkpoints

    def keys(self, name: str, K: int, v: DecoderVariant | None = None) -> list[tuple]:
        return [(name, K, self.seed + r) for r in range(seed_count(self.setting, K, v))]

    def finals(self, name: str, K: int) -> list[dict]:
        return [self.runs[k]["final"] for k in self.keys(name, K)]


_SWEEPS: dict[tuple[SweepSetting, int], Stage1Sweep] = {}


def run_sweep(s: SweepSetting, seed: int = 0) -> Stage1Sweep:
    """Train every decoder of the sweep (once per process and setting; later calls with the
    same setting and seed return the same :class:`Stage1Sweep`)."""
    from mmicl.workers import run_in_workers

    s = s.sweep_part()
    if (s, seed) in _SWEEPS:
        return _SWEEPS[(s, seed)]
    workdir = tempfile.TemporaryDirectory(prefix="mmicl-")
    sweep = Stage1Sweep(s, seed, workdir=workdir)
    jobs = [(v, K, seed + r) for K in s.Ks for v in variants(s, K)
            for r in range(seed_count(s, K, v))]  # fmt: skip
    for _, K, sd in jobs:  # fixed, seeded evaluation sets: the same in every worker
        if (K, sd) not in sweep.sets:
            sweep.sets[(K, sd)] = stage1_data(s, K, sd, s.steps).sets("test")
    ckpts = [Path(workdir.name) / f"stage1-{v.pos}-{v.embedding}-{v.width(s.D)}-{K}-{sd}.ckpt"
             for v, K, sd in jobs]  # fmt: skip
    results = run_in_workers(
        [(train_stage1, s, v, K, sd, ck) for (v, K, sd), ck in zip(jobs, ckpts, strict=True)],
        s.workers, "stage 1",
    )  # fmt: skip
    for (v, K, sd), ck, res in zip(jobs, ckpts, results, strict=True):
        sweep.runs[(v.name, K, sd)] = {"variant": v, "ckpt": ck, **res}
    _SWEEPS[(s, seed)] = sweep
    return sweep


def best_run(sweep: Stage1Sweep) -> dict[str, Any]:
    """The run with the highest final IC accuracy at the largest K and the base seed (the
    first of equals: the paper layout)."""
    s, K = sweep.setting, sweep.setting.Ks[-1]
    top = [sweep.runs[(v.name, K, sweep.seed)] for v in variants(s, K)]
    return max(top, key=lambda r: r["final"]["IC"])


def _mean_sd(values: list[float]) -> tuple[float, float]:
    return statistics.fmean(values), (statistics.stdev(values) if len(values) > 1 else 0.0)


def icl_iwl_table(sweep: Stage1Sweep) -> Table:
    """Final accuracies per encoding and K (means over seeds), with the anchors' rows."""
    from mmicl.anchors import context_anchors

    s = sweep.setting
    t = Table(
        "Stage 1: ICL vs IWL by position encoding and class count K (fixed step budget)",
        ["model", "K", "test", "IC", "IC sd", "IC2", "IW", "IH (last layer)"],
        notes=(
            f"{s.steps} AdamW steps (lr 1e-3, weight decay 1e-6) of {s.batch_size} sequences; "
            "2-layer, 1-head pre-RMSNorm SwiGLU decoder in the authors' layout: no learned "
            "input map, the residual stream is the raw token (width D) for rope / alibi and "
            f"[one-hot position over {MAX_POSITIONS} slots, token] (width "
            f"{concat_width(s.D, 'ape', MAX_POSITIONS)}) for ape, with a random slot offset per "
            f"training sequence. D={s.D}, L={s.L}, N={s.N}, B={s.B}, eps={s.eps}, p_B=1, "
            f"alpha=0. Means over {s.seeds} seed(s) at K={s.Ks[-1]} and one seed at smaller K "
            "(each seed its own bank, stream and initialisation; IC sd = standard deviation "
            f"over seeds), {s.eval_sequences} test sequences per split. IC: novel classes, "
            "bursty; IC2: labels shifted +1; IW: non-bursty. Anchors are computed on the same "
            "sets."
        ),
    )
    for K in s.Ks:
        for pos in s.positions:
            f = sweep.finals(pos, K)
            ic_m, ic_sd = _mean_sd([x["IC"] for x in f])
            t.add_row(
                model=pos, K=K, test=_mean_sd([x["test"] for x in f])[0], IC=ic_m,
                **{"IC sd": ic_sd}, IC2=_mean_sd([x["IC2"] for x in f])[0],
                IW=_mean_sd([x["IW"] for x in f])[0],
                **{"IH (last layer)": _mean_sd([x["ih"] for x in f])[0]},
            )  # fmt: skip
        anchors = [context_anchors(sweep.sets[k[1:]], s.N) for k in sweep.keys("", K)]
        for name in anchors[0]:
            vals = {k: statistics.fmean(a[name][k] for a in anchors) for k in anchors[0][name]}
            t.add_row(model=f"anchor: {name}", K=K, **vals)
    return t


def _onset_text(onsets: list[int | None], steps: int) -> str:
    """Onset steps per seed, ``>steps`` for a seed that never reached the threshold."""
    return ", ".join(str(o) if o is not None else f">{steps}" for o in onsets)


def onset_table(sweep: Stage1Sweep) -> Table:
    """Onset step per seed at the largest K, its mean and spread, final IC / IW, and K*."""
    s, K_top = sweep.setting, sweep.setting.Ks[-1]
    t = Table(
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
    for v in variants(s, K_top):
        keys = sweep.keys(v.name, K_top, v)
        onsets = [sweep.runs[k]["onset"] for k in keys]
        reached = [o for o in onsets if o is not None]
        ic_m, ic_sd = _mean_sd([sweep.runs[k]["final"]["IC"] for k in keys])
        threshold = "-"
        if v.embedding == "concat" and v.name in s.positions:
            ok = [K for K in s.Ks if _mean_sd([f["IC"] for f in sweep.finals(v.name, K)])[0] >= ONSET]  # fmt: skip
            threshold = str(min(ok)) if ok else "-"
        t.add_row(
            model=v.name, layout=v.layout, width=v.width(s.D), seeds=len(keys),
            **{"onset steps (per seed)": _onset_text(onsets, s.steps),
               "onset mean": statistics.fmean(reached) if reached else "-",
               "onset sd": _mean_sd(reached)[1] if reached else "-",
               "reached": f"{len(reached)}/{len(onsets)}",
               "final IC": ic_m, "final IC sd": ic_sd,
               "final IW": _mean_sd([sweep.runs[k]["final"]["IW"] for k in keys])[0],
               "threshold K*": threshold},
        )  # fmt: skip
    return t


def training_curves_figure(sweep: Stage1Sweep):
    """Mean IC accuracy and last-layer IH strength against step at the largest K, per
    variant, with a min-max band over seeds."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import torch

    s, K_top = sweep.setting, sweep.setting.Ks[-1]
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.8))
    for v in variants(s, K_top):
        curves = [sweep.runs[k]["curve"] for k in sweep.keys(v.name, K_top, v)]
        steps = [r["step"] for r in curves[0]]
        for ax, key in ((axes[0], "IC"), (axes[1], "ih")):
            vals = torch.tensor([[r[key] for r in c] for c in curves])  # (seeds, evals)
            (line,) = ax.plot(steps, vals.mean(0), label=v.name)
            ax.fill_between(steps, vals.min(0).values, vals.max(0).values, alpha=0.15,
                            color=line.get_color())  # fmt: skip
    axes[0].axhline(ONSET, color="grey", lw=0.8, ls=":", label=f"onset threshold {ONSET}")
    axes[0].set(xlabel="step", ylabel="IC accuracy", title=f"IC accuracy, K={K_top}")
    axes[1].set(xlabel="step", ylabel="IH strength", title="induction strength (last layer)")
    axes[0].legend(fontsize=7)
    axes[1].legend(fontsize=7)
    return fig


def spearman(x: list[float], y: list[float]) -> float:
    """Spearman's rho, NaN when either side is constant.

    >>> spearman([1, 2, 3], [2, 4, 9])
    1.0
    """
    from scipy.stats import spearmanr

    if len(set(x)) < 2 or len(set(y)) < 2:
        return float("nan")
    return float(spearmanr(x, y).statistic)


def circuit_correlation_table(sweep: Stage1Sweep) -> Table:
    """Spearman rho of each circuit measure with IC accuracy over every recorded checkpoint."""
    t = Table(
        "Circuit measures vs IC accuracy across stage-1 checkpoints (Spearman rho)",
        ["measure", "rho with IC acc", "checkpoints"],
        notes=(
            "Pooled over every recorded checkpoint of every stage-1 run; measures from the "
            "final token's attention on the IC set: IH strength, TILA and TLA of the last "
            "layer, previous-token strength of the first layer, CLA."
        ),
    )
    rows = [r for run in sweep.runs.values() for r in run["curve"]]
    for key in MEASURES:
        rho = spearman([r[key] for r in rows], [r["IC"] for r in rows])
        t.add_row(measure=key, **{"rho with IC acc": rho}, checkpoints=len(rows))
    return t


def knockout_rows(s: SweepSetting, v: DecoderVariant, K: int, seed: int, steps: int) -> list:
    """Train a 2-layer, 2-head decoder of ``v``'s layout (width: ``v``'s rounded up to a
    multiple of 4, so RoPE heads have an even dimension) for ``steps`` steps and return
    :func:`mmicl.evaluation.knockout_table` on its test sets."""
    import lightning.pytorch as pl
    import torch
    from icml26_shared.trainer import quiet_trainer

    from mmicl.evaluation import knockout_table

    torch.set_num_threads(1)
    pl.seed_everything(seed, verbose=False)
    dm = stage1_data(s, K, seed, steps)
    module = stage1_module(s, v, knockout_width(s, v), n_heads=2)
    quiet_trainer(
        max_epochs=1, max_steps=steps, num_sanity_val_steps=0, limit_val_batches=0,
        accelerator=s.accelerator,
    ).fit(module, datamodule=dm)  # fmt: skip
    return knockout_table(module.model, dm.sets("test"), seed)


def knockout_width(s: SweepSetting, v: DecoderVariant) -> int:
    """``v``'s width rounded up to a multiple of 4 (two heads of even dimension).

    >>> knockout_width(SweepSetting(positions=["ape"], Ks=[64], seeds=1, steps=1,
    ...                             eval_every=1, eval_sequences=1), DecoderVariant("ape", "ape"))
    100
    """
    return -(-v.width(s.D) // 4) * 4
