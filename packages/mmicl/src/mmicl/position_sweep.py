"""The stage-1 sweep: ICL vs IWL and the ICL onset by position encoding, class count and seed.

Paper: "Dissecting Multimodal In-Context Learning", Huang et al., ICML 2026 (arXiv 2601.20796).

Decoders with absolute (APE), RoPE and ALiBi positions in the authors' layout (raw tokens;
for APE fixed one-hot position channels concatenated, :func:`mmicl.transformer.concat_width`)
are trained on :class:`~mmicl.lightning.UnimodalICLDataModule` for a fixed step budget at
several class counts ``K``, plus controls at the largest ``K`` (:func:`controls`). Each run
(:func:`train_stage1`) records the split accuracies and circuit measures every
``eval_every`` steps (:class:`mmicl.evaluation.CurveRecorder`). From the runs:

1. the phase diagram: IC accuracy (ICL) and the query-free in-weights accuracy ``IW0`` (IWL)
   per encoding and K, mean and spread over seeds, next to the context-only anchors
   (:mod:`mmicl.anchors`) -> :func:`icl_iwl_table`;
2. the ICL/IWL transition ``K*_s = min{K : final IC_s(K) >= ONSET}`` per seed, its
   geometric mean, spread and bracketing interval per encoding -> :func:`transition_k`,
   :func:`threshold_table`;
3. the ICL onset: the first evaluated step with IC accuracy ``>= ONSET``, per seed
   -> :func:`onset_step`, :func:`onset_table`, :func:`training_curves_figure`;
4. Spearman's rho between each circuit measure and IC accuracy over every recorded
   checkpoint -> :func:`circuit_correlation_table`.

:func:`run_sweep` trains every run once per process (in :func:`mmicl.workers.run_in_workers`)
and keeps the result, so the sections of ``reproduce`` built on the same sweep share it;
:func:`best_run` is the decoder that stage 2 and the knockout build on.
"""

from __future__ import annotations

import dataclasses
import statistics
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from icml26_shared.results import Table

from mmicl.transformer import concat_width

ONSET = 0.5  # IC accuracy that marks the ICL onset (twice the random-context-label level)
MAX_POSITIONS = 65  # 2 * N_max + 1 one-hot slots, N_max = 32 (authors' main_stage1.py)
MEASURES = ("ih", "tila", "tla", "prev", "cla")
SECONDS_PER_STEP = 0.06  # one stage-1 step (batch 64, D=32) with its evaluations, one idle core


@dataclass(frozen=True, kw_only=True)
class SweepSetting:
    """Sizes of the stage-1 sweep (the global keys of a ``reproduce`` preset).

    ``Ks`` ascending; the paper-layout decoders run ``seeds`` seeds at every ``K`` (the phase
    diagram and K*), the controls ``seeds`` at the largest ``K`` (the linear-embedding ones
    ``linear_seeds``); ``mlp`` is the decoder MLP (``swiglu`` or the authors' ``paper``);
    ``workers`` processes train the independent runs (the numbers do not depend on it);
    ``accelerator`` is the Trainer's.
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
    mlp: str = "swiglu"
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
    """Seeds per run: ``s.seeds`` (every K for the paper layout, the largest K for the
    controls); the linear-embedding controls get ``s.linear_seeds``."""
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
        max_positions=MAX_POSITIONS, mlp=s.mlp,
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
    minutes = len(jobs) * s.steps * SECONDS_PER_STEP * (s.D / 32) / min(s.workers, len(jobs)) / 60
    print(
        f"stage 1: {len(jobs)} decoders x {s.steps} steps in {s.workers} process(es); about "
        f"{minutes:.0f} min on idle CPU cores (several times longer on a loaded machine)",
        file=sys.stderr, flush=True,
    )  # fmt: skip
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


def _regime(ic: float, iw0: float) -> str:
    """``ICL`` / ``IWL`` / ``both`` / ``neither`` from mean IC and query-free IW accuracy."""
    return {(True, False): "ICL", (False, True): "IWL", (True, True): "both"}.get(
        (ic >= ONSET, iw0 >= ONSET), "neither"
    )


def icl_iwl_table(sweep: Stage1Sweep) -> Table:
    """The phase diagram: final accuracies per encoding and K (mean and sd over seeds), the
    regime, and the anchors' rows."""
    from mmicl.anchors import context_anchors

    s = sweep.setting
    t = Table(
        "Stage 1: ICL vs IWL phase diagram by position encoding and class count K",
        ["model", "K", "seeds", "test", "IC", "IC sd", "IC2", "IW", "IW0 (query-free)",
         "IW0 sd", "regime", "IH (last layer)"],
        notes=(
            f"{s.steps} AdamW steps (lr 1e-3, weight decay 1e-6) of {s.batch_size} sequences; "
            f"2-layer, 1-head pre-RMSNorm decoder ({s.mlp} MLP) in the authors' layout: no "
            "learned input map, the residual stream is the raw token (width D) for rope / "
            f"alibi and [one-hot position over {MAX_POSITIONS} slots, token] (width "
            f"{concat_width(s.D, 'ape', MAX_POSITIONS)}) for ape, with a random slot offset per "
            f"training sequence. D={s.D}, L={s.L}, N={s.N}, B={s.B}, eps={s.eps}, p_B=1, "
            f"alpha=0. Means over {s.seeds} seed(s) at every K (each seed its own bank, stream "
            f"and initialisation; sd = standard deviation over seeds), {s.eval_sequences} test "
            "sequences per split. IC: novel classes, bursty; IC2: labels shifted +1; IW: "
            "non-bursty (the context may contain the query's class); IW0: non-bursty and "
            "query-free (no context item has the query's label, so only the weights can answer; "
            f"chance 1/L = {1 / s.L:.3g}). regime: ICL if IC >= {ONSET}, IWL if IW0 >= {ONSET}, "
            "both, or neither. Anchors are computed on the same sets."
        ),
    )  # fmt: skip
    for K in s.Ks:
        for pos in s.positions:
            f = sweep.finals(pos, K)
            ic_m, ic_sd = _mean_sd([x["IC"] for x in f])
            iw0_m, iw0_sd = _mean_sd([x["IW0"] for x in f])
            t.add_row(
                model=pos, K=K, seeds=len(f), test=_mean_sd([x["test"] for x in f])[0],
                IC=ic_m, **{"IC sd": ic_sd}, IC2=_mean_sd([x["IC2"] for x in f])[0],
                IW=_mean_sd([x["IW"] for x in f])[0],
                **{"IW0 (query-free)": iw0_m, "IW0 sd": iw0_sd, "regime": _regime(ic_m, iw0_m),
                   "IH (last layer)": _mean_sd([x["ih"] for x in f])[0]},
            )  # fmt: skip
        anchors = [context_anchors(sweep.sets[k[1:]], s.N) for k in sweep.keys("", K)]
        for name in anchors[0]:
            keys = [k for k in anchors[0][name] if k != "IW0"]
            vals = {k: statistics.fmean(a[name][k] for a in anchors) for k in keys}
            if "IW0" in anchors[0][name]:
                vals["IW0 (query-free)"] = statistics.fmean(a[name]["IW0"] for a in anchors)
            t.add_row(model=f"anchor: {name}", K=K, **vals)
    return t


def transition_k(Ks: tuple[int, ...], ic: list[float]) -> int | None:
    """``K* = min{K : IC(K) >= ONSET}`` over the grid ``Ks`` (``None``: not reached).

    >>> transition_k((64, 256, 1024), [0.1, 0.6, 0.9]), transition_k((64, 256), [0.1, 0.2])
    (256, None)
    """
    return next((K for K, a in zip(Ks, ic, strict=True) if a >= ONSET), None)


def threshold_interval(Ks: tuple[int, ...], per_seed: list[int | None]) -> tuple[str, str]:
    """The transition interval ``(K_lo, K_hi]`` containing every seed's ``K*``: ``K_lo`` the
    grid point below the smallest ``K*_s``, ``K_hi`` the largest (``inf`` when a seed never
    reached ICL; ``<Ks[0]`` when one reached it at the smallest K).

    >>> threshold_interval((64, 256, 1024, 4096), [1024, 4096, 1024])
    ('256', '4096')
    >>> threshold_interval((64, 256), [256, None])
    ('64', 'inf')
    """
    reached = [k for k in per_seed if k is not None]
    if not reached:
        return str(Ks[-1]), "inf"
    lo_i = Ks.index(min(reached)) - 1
    lo = str(Ks[lo_i]) if lo_i >= 0 else f"<{Ks[0]}"
    hi = "inf" if len(reached) < len(per_seed) else str(max(reached))
    return lo, hi


def threshold_table(sweep: Stage1Sweep) -> Table:
    """Per paper-layout encoding: ``K*`` per seed, its geometric mean and log2 spread over the
    seeds that reached ICL, and the transition interval over all seeds."""
    import math

    s = sweep.setting
    t = Table(
        "Stage 1: ICL/IWL transition K* per position encoding (over seeds)",
        ["model", "seeds", "K* (per seed)", "reached", "K* (geometric mean)",
         "log2 K* mean", "log2 K* sd", "interval (K_lo, K_hi]", "IWL at K_lo (IW0)"],
        notes=(
            f"K*_s = the smallest K of the grid {list(s.Ks)} at which seed s's final IC accuracy "
            f"reaches {ONSET} after {s.steps} steps ('>{s.Ks[-1]}' = not within the grid). "
            "Geometric mean and log2 mean / sd over the seeds that reached ICL. Interval: every "
            "seed's transition lies in (K_lo, K_hi], K_lo the grid point below the smallest "
            "K*_s, K_hi the largest (inf when a seed never reached ICL in the grid). IWL at K_lo: "
            "the mean query-free in-weights accuracy there (IWL side of the transition)."
        ),
    )  # fmt: skip
    for pos in s.positions:
        per_seed_ic = [[sweep.runs[(pos, K, sd)]["final"]["IC"] for K in s.Ks]
                       for sd in range(sweep.seed, sweep.seed + s.seeds)]  # fmt: skip
        ks = [transition_k(s.Ks, ic) for ic in per_seed_ic]
        logs = [math.log2(k) for k in ks if k is not None]
        lo, hi = threshold_interval(s.Ks, ks)
        iw_lo = "-"
        if lo.isdigit():
            iw_lo = _mean_sd([f["IW0"] for f in sweep.finals(pos, int(lo))])[0]
        t.add_row(
            model=pos, seeds=len(ks),
            **{"K* (per seed)": ", ".join(str(k) if k else f">{s.Ks[-1]}" for k in ks),
               "reached": f"{len(logs)}/{len(ks)}",
               "K* (geometric mean)": 2 ** statistics.fmean(logs) if logs else "-",
               "log2 K* mean": statistics.fmean(logs) if logs else "-",
               "log2 K* sd": _mean_sd(logs)[1] if logs else "-",
               "interval (K_lo, K_hi]": f"({lo}, {hi}]", "IWL at K_lo (IW0)": iw_lo},
        )  # fmt: skip
    return t


def _onset_text(onsets: list[int | None], steps: int) -> str:
    """Onset steps per seed, ``>steps`` for a seed that never reached the threshold."""
    return ", ".join(str(o) if o is not None else f">{steps}" for o in onsets)


def _controls_note(s: SweepSetting) -> str:
    """The controls that ran, for the onset table's notes ('' when none did).

    >>> _controls_note(SweepSetting(positions=["ape"], Ks=[64], seeds=1, steps=1,
    ...                             eval_every=1, eval_sequences=1, controls=False))
    ''
    """
    if not s.controls:
        return ""
    note = " Controls: rope at the paper-layout ape width (extra channels start at zero)"
    if s.linear_seeds > 0:
        note += (
            ", and ape / rope behind a learned linear input embedding (d_model 64; ape a "
            "learned position embedding added to it, N(0, 0.02) initialisation)"
        )
    return note + "."


def onset_table(sweep: Stage1Sweep) -> Table:
    """Onset step per seed at the largest K, its mean and spread, final IC / IW, and K*."""
    s, K_top = sweep.setting, sweep.setting.Ks[-1]
    t = Table(
        f"Stage 1: ICL onset at K={K_top} over seeds",
        ["model", "layout", "width", "seeds", "onset steps (per seed)", "onset mean", "onset sd",
         "reached", "final IC", "final IC sd", "final IW0"],
        notes=(
            f"Onset = first evaluated step (every {s.eval_every}) at which IC accuracy reaches "
            f"{ONSET} (the random-context-label anchor is about 0.25, the plateau 1); "
            f">{s.steps} = not within the budget; onset mean / sd over the seeds that reached "
            "it; final IW0 = the query-free in-weights accuracy."
            + _controls_note(s)
        ),
    )  # fmt: skip
    for v in variants(s, K_top):
        keys = sweep.keys(v.name, K_top, v)
        onsets = [sweep.runs[k]["onset"] for k in keys]
        reached = [o for o in onsets if o is not None]
        ic_m, ic_sd = _mean_sd([sweep.runs[k]["final"]["IC"] for k in keys])
        t.add_row(
            model=v.name, layout=v.layout, width=v.width(s.D), seeds=len(keys),
            **{"onset steps (per seed)": _onset_text(onsets, s.steps),
               "onset mean": statistics.fmean(reached) if reached else "-",
               "onset sd": _mean_sd(reached)[1] if reached else "-",
               "reached": f"{len(reached)}/{len(onsets)}",
               "final IC": ic_m, "final IC sd": ic_sd,
               "final IW0": _mean_sd([sweep.runs[k]["final"]["IW0"] for k in keys])[0]},
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


def lens_agreement_table(sweep: Stage1Sweep) -> Table:
    """IH strength (last layer) and previous-token strength (first layer) of every final
    stage-1 checkpoint computed by :func:`mmicl.evaluation.circuit_measures` and through the
    TransformerLens export (:func:`mmicl.lens_export.lens_circuit_measures`), per model and
    K (means over seeds), with the largest absolute difference over the seeds."""
    from mmicl.evaluation import circuit_measures

    t = Table(
        "Circuit measures through TransformerLens vs ours (final stage-1 checkpoints)",
        ["model", "K", "seeds", "IH (ours)", "IH (TransformerLens)", "prev (ours)",
         "prev (TransformerLens)", "max abs diff"],
        notes=(
            "TransformerLens: the decoder exported with mmicl.lens_export.to_transformer_lens "
            "(a HookedRootModule), run_with_cache on the IC test set, the measures computed from "
            "cache['pattern', layer]; ours: mmicl.evaluation.circuit_measures (the decoder's own "
            "attention, torchmetrics). max abs diff over seeds and both measures."
        ),
    )  # fmt: skip
    try:
        import transformer_lens  # noqa: F401

        from mmicl.lens_export import lens_circuit_measures
    except ImportError:
        t.notes += " Not computed: transformer-lens is not installed (pip install 'mmicl[lens]')."
        return t
    from mmicl.lightning import Stage1Module

    groups: dict[tuple[str, int], list[tuple[dict, dict]]] = {}
    for (name, K, sd), run in sweep.runs.items():
        module = Stage1Module.load_from_checkpoint(run["ckpt"], map_location="cpu").eval()
        batch = sweep.sets[(K, sd)]["IC"]
        groups.setdefault((name, K), []).append(
            (circuit_measures(module, batch), lens_circuit_measures(module.model, batch))
        )
    for (name, K), pairs in groups.items():
        diff = max(abs(o[m] - x[m]) for o, x in pairs for m in ("ih", "prev"))
        t.add_row(
            model=name, K=K, seeds=len(pairs),
            **{"IH (ours)": statistics.fmean(o["ih"] for o, _ in pairs),
               "IH (TransformerLens)": statistics.fmean(x["ih"] for _, x in pairs),
               "prev (ours)": statistics.fmean(o["prev"] for o, _ in pairs),
               "prev (TransformerLens)": statistics.fmean(x["prev"] for _, x in pairs),
               "max abs diff": diff},
        )  # fmt: skip
    return t


def knockout_rows(
    s: SweepSetting, v: DecoderVariant, K: int, seed: int, steps: int, n_heads: int = 4,
    ks: tuple[int, ...] = (1, 2, 4),
) -> list:  # fmt: skip
    """Train a 2-layer decoder with ``n_heads`` heads per layer of ``v``'s layout (width:
    :func:`knockout_width`) for ``steps`` steps and return
    :func:`mmicl.evaluation.knockout_table`: heads ranked on the validation IC set, scored
    on the test sets (different sequences of the same distributions)."""
    import lightning.pytorch as pl
    import torch
    from icml26_shared.trainer import quiet_trainer

    from mmicl.evaluation import knockout_table

    torch.set_num_threads(1)
    pl.seed_everything(seed, verbose=False)
    dm = stage1_data(s, K, seed, steps)
    module = stage1_module(s, v, knockout_width(s, v, n_heads), n_heads=n_heads)
    quiet_trainer(
        max_epochs=1, max_steps=steps, num_sanity_val_steps=0, limit_val_batches=0,
        accelerator=s.accelerator,
    ).fit(module, datamodule=dm)  # fmt: skip
    rows = knockout_table(module.model, dm.sets("test"), seed, dm.sets("val")["IC"], ks)
    return [{**r, "seed": seed} for r in rows]


def knockout_over_seeds(
    s: SweepSetting, v: DecoderVariant, K: int, seeds: range, steps: int, n_heads: int,
    ks: tuple[int, ...],
) -> Table:  # fmt: skip
    """:func:`knockout_rows` for each seed (in worker processes), as one table of means and
    spreads over the seeds."""
    from mmicl.workers import run_in_workers

    t = Table(
        f"Head knockout in a 2-layer, {n_heads}-head decoder (over seeds)",
        ["knockout", "k", "heads (first seed)", "seeds", "IC acc", "IC sd (seeds)",
         "IC sd (random draws)", "IC2 acc", "IW0 acc"],
        notes=(
            f"{v.name} decoder ({v.layout}, width {knockout_width(s, v, n_heads)}, "
            f"{2 * n_heads} heads), K={K}, {steps} steps, one decoder per seed. Heads ranked by "
            "IH strength / previous-token strength on the validation IC set, accuracies on the "
            "test sets (other sequences); knocking out zeroes the heads' slices of the input "
            "to the output projection. random heads: k heads drawn uniformly across both "
            "layers among those that are not the top-k induction heads (10 seeded draws, or "
            "every such set), mean over draws; IC sd (random draws) = their spread, mean over "
            "seeds. IC sd (seeds) = spread over seeds."
        ),
    )  # fmt: skip
    jobs = [(knockout_rows, s.sweep_part(), v, K, sd, steps, n_heads, ks) for sd in seeds]
    per_seed = run_in_workers(jobs, s.workers, "knockout")
    for i, first in enumerate(per_seed[0]):
        rs = [rows[i] for rows in per_seed]
        ic = [r["IC acc"] for r in rs]
        t.add_row(
            knockout=first["knockout"], k=first["k"],
            **{"heads (first seed)": first["heads"], "seeds": len(rs),
               "IC acc": statistics.fmean(ic), "IC sd (seeds)": _mean_sd(ic)[1],
               "IC sd (random draws)": statistics.fmean(r["IC sd"] for r in rs),
               "IC2 acc": statistics.fmean(r["IC2 acc"] for r in rs),
               "IW0 acc": statistics.fmean(r["IW0 acc"] for r in rs)},
        )  # fmt: skip
    return t


def knockout_width(s: SweepSetting, v: DecoderVariant, n_heads: int = 2) -> int:
    """``v``'s width rounded up to a multiple of ``2 * n_heads`` (heads of even dimension,
    as RoPE needs).

    >>> s = SweepSetting(positions=["ape"], Ks=[64], seeds=1, steps=1, eval_every=1,
    ...                  eval_sequences=1)
    >>> knockout_width(s, DecoderVariant("ape", "ape")), knockout_width(s, DecoderVariant("ape", "ape"), 4)
    (100, 104)
    """
    m = 2 * n_heads
    return -(-v.width(s.D) // m) * m
