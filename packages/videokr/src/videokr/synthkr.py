"""The SynthKR benchmark: the paper's claims at micro-world scale, offline.

The micro-world (:func:`videokr.microworld.make_microworld`) is built and run through the quality
filters (:func:`videokr.pipeline.filter_world`) once per size and seed (:func:`filtered_world`);
on its filtered eval split, through :class:`~videokr.harness.EvalHarness`:

1. :func:`methods_table`: chance (``mean 1/|options|``), a seeded random predictor, the blind text
   and single-frame baselines (:class:`~videokr.filters.BlindTextProbe`,
   :class:`~videokr.filters.SingleFrameProbe`, fitted on the filtered train split), SFT on
   perception-only data (VidR items), SFT on the full skill mix, and SFT -> GRPO
   (:class:`~videokr.lightning.SFTModule`, :class:`~videokr.lightning.GRPOModule` through the
   quiet Trainer, greedy decoding), with :func:`accuracy_figure`;
2. :func:`video_dependency_table`: blind / single-frame accuracy on the unfiltered vs the
   filtered eval split;
3. :func:`filter_tables`: planted defects caught and genuine items kept, items removed per filter.

Expected (paper): filtering drives blind accuracy to chance; the full skill mix beats
perception-only data on multi-hop (KnowVidR) items; GRPO adds over SFT.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from icml26_shared.results import Table

SKILL_COLS = ("VidR", "KnowVid", "KnowVidR")


@dataclass
class FilteredWorld:
    """A micro-world with its filtered splits and the filters' reports."""

    n_videos: int
    world: Any
    train: list
    test: list
    reports: dict


_WORLDS: dict[tuple[int, int], FilteredWorld] = {}


def filtered_world(n_videos: int, seed: int = 0) -> FilteredWorld:
    """The micro-world of ``n_videos`` clips and its filtered splits (built once per process)."""
    from .microworld import make_microworld
    from .pipeline import filter_world

    if (n_videos, seed) not in _WORLDS:
        world = make_microworld(n_videos, seed=seed)
        train, test, reports = filter_world(world, seed=seed)
        _WORLDS[(n_videos, seed)] = FilteredWorld(n_videos, world, train, test, reports)
    return _WORLDS[(n_videos, seed)]


def _row(name: str, res) -> dict:
    row = {"method": name, "overall": res.overall, "format": res.format_rate}
    row.update({s: res.by["skill"].get(s) for s in SKILL_COLS})
    return row


def _data(fw: FilteredWorld, seed: int, skills: list[str], batch_size: int):
    from .lightning import SynthKRDataModule

    dm = SynthKRDataModule(fw.n_videos, seed, skills, filtered=False, batch_size=batch_size)
    dm.store = fw.world.store
    dm.set_records(fw.train, fw.test)
    return dm


def _trainer(max_steps: int):
    from icml26_shared.trainer import quiet_trainer

    return quiet_trainer(
        max_epochs=10_000, max_steps=max_steps, limit_val_batches=0, gradient_clip_val=None,
        deterministic=True,
    )  # fmt: skip


def model_outputs(module, dm) -> dict[str, str]:
    """``{item id: completion}`` of ``module`` on the test split (greedy decoding)."""
    module.eval()
    outs = {}
    for batch in dm.test_dataloader():
        for i, o in zip(batch["id"], module.complete(batch), strict=True):
            outs[i] = o
    return outs


def train_sft(fw: FilteredWorld, skills: list[str], steps: int, seed: int = 0):
    """SFT on the filtered train items of ``skills`` for ``steps`` steps; ``(module, data)``."""
    import lightning.pytorch as pl

    from .lightning import SFTModule

    pl.seed_everything(seed, verbose=False)
    dm = _data(fw, seed, skills, batch_size=32)
    module = SFTModule()
    _trainer(steps).fit(module, dm)
    return module, dm


def train_grpo(fw: FilteredWorld, sft, steps: int, group: int, batch: int, seed: int = 0):
    """GRPO from the ``sft`` module (policy and reference) for ``steps`` optimiser steps."""
    import lightning.pytorch as pl

    from .lightning import GRPOModule

    pl.seed_everything(seed, verbose=False)
    grpo = GRPOModule(group_size=group, max_new_tokens=48).start_from(sft)
    dm = _data(fw, seed, list(SKILL_COLS), batch_size=batch)
    _trainer(steps).fit(grpo, dm)
    return grpo, dm


def methods_table(
    fw: FilteredWorld, sft_steps: int, grpo_steps: int, group: int, grpo_batch: int, seed: int = 0
) -> Table:
    """Accuracy per skill of the anchors, the baselines, both SFT mixes and SFT -> GRPO."""
    from .filters import BlindTextProbe, SingleFrameProbe
    from .harness import EvalHarness, RandomPredictor, chance_accuracy, letters_to_outputs

    train, test = fw.train, fw.test
    main = Table(
        "SynthKR: accuracy on the filtered eval split",
        ["method", *SKILL_COLS, "overall", "format"],
        notes=(
            f"{len(test)} eval items, {len(train)} train items after filtering "
            f"({fw.n_videos} clips); greedy decoding; format = share of outputs that fully "
            "match <think>...</think> <answer>...</answer> (the authors' rule)."
        ),
    )
    harness = EvalHarness(test)
    main.add_row(method="chance (1/|options|)", overall=chance_accuracy(test),
                 **{s: chance_accuracy([r for r in test if r["skill"] == s]) for s in SKILL_COLS})  # fmt: skip
    main.add_row(**_row("random predictor", harness.evaluate(RandomPredictor(seed)(test))))
    blind = BlindTextProbe().fit(train)
    main.add_row(**_row("blind text baseline (BoW logistic)", harness.evaluate(
        letters_to_outputs(test, blind.predict(test)))))  # fmt: skip
    frame = SingleFrameProbe(fw.world.store).fit(train)
    main.add_row(**_row("single-frame baseline (logistic)", harness.evaluate(
        letters_to_outputs(test, frame.predict(test)))))  # fmt: skip
    perception, dm = train_sft(fw, ["VidR"], sft_steps, seed)
    main.add_row(
        **_row("SFT, perception-only data (VidR)", harness.evaluate(model_outputs(perception, dm)))
    )
    full, dm = train_sft(fw, list(SKILL_COLS), sft_steps, seed)
    res_full = harness.evaluate(model_outputs(full, dm))
    main.add_row(**_row("SFT, full skill mix", res_full))
    grpo, gdm = train_grpo(fw, full, grpo_steps, group, grpo_batch, seed)
    res_grpo = harness.evaluate(model_outputs(grpo, gdm))
    main.add_row(**_row("SFT -> GRPO", res_grpo))
    gained = sum(res_grpo.per_item[i] > res_full.per_item[i] for i in res_grpo.per_item)
    lost = sum(res_grpo.per_item[i] < res_full.per_item[i] for i in res_grpo.per_item)
    main.notes += (
        f" Paired on the same items, SFT -> GRPO vs SFT full mix: {gained} items gained, "
        f"{lost} lost."
    )
    return main


def video_dependency_table(fw: FilteredWorld) -> Table:
    """Chance, blind-text and single-frame accuracy on the unfiltered vs filtered eval split."""
    from .filters import BlindTextProbe, SingleFrameProbe
    from .harness import EvalHarness, chance_accuracy, letters_to_outputs

    world = fw.world
    dep = Table(
        "Video dependency: baselines on the unfiltered vs filtered eval split",
        ["eval split", "items", "chance", "blind text", "single frame"],
        notes="Probes fitted on the train split of the same filtering state (unfiltered / filtered).",
    )
    for name, train, recs in (("unfiltered", world.train, world.eval), ("filtered", fw.train, fw.test)):  # fmt: skip
        b = BlindTextProbe().fit(train)
        f = SingleFrameProbe(world.store).fit(train)
        h = EvalHarness(recs)
        dep.add_row(**{
            "eval split": name, "items": len(recs), "chance": chance_accuracy(recs),
            "blind text": h.evaluate(letters_to_outputs(recs, b.predict(recs))).overall,
            "single frame": h.evaluate(letters_to_outputs(recs, f.predict(recs))).overall,
        })  # fmt: skip
    return dep


def filter_tables(fw: FilteredWorld) -> list[Table]:
    """The filter report (planted defects caught, per split) and the items removed per filter."""
    from .pipeline import defect_report

    filt = Table(
        "Filter report: planted defects caught, genuine items kept",
        ["split", "defect", "planted", "caught"],
        notes="caught = planted items absent from the filtered split (for near duplicates: no pair left).",
    )
    filt.extend(defect_report(fw.world, "train", fw.train))
    filt.extend(defect_report(fw.world, "eval", fw.test))
    removed = Table("Items removed per filter", ["split", "filter", "removed"])
    for split, reps in fw.reports.items():
        for rep in reps:
            removed.add_row(split=split, filter=rep.name, removed=len(rep.removed))
    return [filt, removed]


def mean_sd_table(tables: list[Table], key: str, title: str | None = None) -> Table:
    """Per-seed tables with the same rows (by ``key``) -> one table of ``mean ± sd`` cells.

    >>> a, b = Table("t", ["m", "x"]), Table("t", ["m", "x"])
    >>> a.add_row(m="u", x=0.5); b.add_row(m="u", x=0.7)
    >>> mean_sd_table([a, b], "m").rows[0]["x"]
    '0.6000 ± 0.1000'
    """
    import numpy as np

    first = tables[0]
    out = Table(title or first.title, list(first.columns), notes=first.notes)
    for row in first.rows:
        cells = {key: row[key]}
        for c in first.columns:
            if c == key:
                continue
            vals = [next(r for r in t.rows if r[key] == row[key]).get(c) for t in tables]
            vals = [v for v in vals if isinstance(v, (int, float))]
            if not vals:
                continue
            if all(v == vals[0] for v in vals):
                cells[c] = vals[0]
            else:
                cells[c] = f"{np.mean(vals):.4f} ± {np.std(vals):.4f}"
        out.add_row(**cells)
    return out


def sum_table(tables: list[Table], keys: tuple[str, ...], title: str | None = None) -> Table:
    """Per-seed count tables -> one table of counts summed over seeds (rows matched by ``keys``)."""
    first = tables[0]
    out = Table(title or first.title, list(first.columns), notes=first.notes)
    order: list[tuple] = []
    sums: dict[tuple, dict] = {}
    for t in tables:
        for r in t.rows:
            k = tuple(r[c] for c in keys)
            if k not in sums:
                order.append(k)
                sums[k] = {c: r[c] for c in keys}
            for c in first.columns:
                if c not in keys:
                    sums[k][c] = sums[k].get(c, 0) + r.get(c, 0)
    for k in order:
        out.add_row(**sums[k])
    return out


def accuracy_figure(tables: list[Table]):
    """Bars (mean over seeds, sd as error bars) of accuracy per skill and overall per method."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    if isinstance(tables, Table):
        tables = [tables]
    methods = [r["method"] for r in tables[0].rows if r["method"] != "chance (1/|options|)"]
    cols = [*SKILL_COLS, "overall"]
    fig, ax = plt.subplots(figsize=(8, 3.6))
    width = 0.8 / len(methods)
    x = np.arange(len(cols))
    for i, m in enumerate(methods):
        vals = np.array([[next(r for r in t.rows if r["method"] == m).get(c) or 0.0 for c in cols]
                         for t in tables])  # fmt: skip
        ax.bar(x + i * width, vals.mean(0), width, yerr=vals.std(0), label=m, capsize=2)
    ax.axhline(tables[0].rows[0]["overall"], color="k", ls="--", lw=0.8, label="chance")
    ax.set_xticks(x + 0.4 - width / 2, cols)
    ax.set_ylabel(f"accuracy (filtered eval, {len(tables)} seeds)")
    ax.set_ylim(0, 1)
    ax.legend(fontsize=7, ncol=2)
    return fig


# ------------------------------------------------------------------ over seeds


def methods_over_seeds(
    n_videos: int, sft_steps: int, grpo_steps: int, group: int, grpo_batch: int, seeds: list[int]
):
    """:func:`methods_table` per seed -> ``([mean ± sd table, per-seed overall table], figure)``."""
    import sys

    import lightning.pytorch as pl

    tables = []
    for k, sd in enumerate(seeds):
        print(f"methods: seed {sd} ({k + 1}/{len(seeds)}): filtering, SFT x2, GRPO",
              file=sys.stderr, flush=True)  # fmt: skip
        pl.seed_everything(sd, verbose=False)
        fw = filtered_world(n_videos, sd)
        tables.append(methods_table(fw, sft_steps, grpo_steps, group, grpo_batch, sd))
    table = mean_sd_table(tables, "method")
    table.notes = (
        f"{len(tables)} seeds (mean ± sd), one micro-world, filtering and training per seed. "
        + " ".join(f"Seed {sd}: {t.notes}" for sd, t in zip(seeds, tables, strict=True))
    )
    per_seed = Table("Overall accuracy per seed", ["method", *[f"seed {sd}" for sd in seeds]])
    for row in tables[0].rows:
        per_seed.add_row(method=row["method"], **{
            f"seed {sd}": next(r for r in t.rows if r["method"] == row["method"])["overall"]
            for sd, t in zip(seeds, tables, strict=True)
        })  # fmt: skip
    return [table, per_seed], accuracy_figure(tables)


def video_dependency_over_seeds(n_videos: int, seeds: list[int]) -> Table:
    """:func:`video_dependency_table` per seed, as ``mean ± sd``."""
    tables = [video_dependency_table(filtered_world(n_videos, sd)) for sd in seeds]
    table = mean_sd_table(tables, "eval split")
    table.notes += f" {len(tables)} seeds (mean ± sd; items: seed {seeds[0]})."
    return table


def filters_over_seeds(n_videos: int, seeds: list[int]) -> list[Table]:
    """:func:`filter_tables` per seed, counts summed over seeds."""
    per_seed = [filter_tables(filtered_world(n_videos, sd)) for sd in seeds]
    filt = sum_table([p[0] for p in per_seed], ("split", "defect"))
    filt.notes += f" Counts summed over {len(seeds)} seeds."
    removed = sum_table([p[1] for p in per_seed], ("split", "filter"))
    removed.notes = f"Counts summed over {len(seeds)} seeds."
    return [filt, removed]
