"""``symicl reproduce``: the paper's headline comparison at CPU scale.

Paper: "Symmetry Reveals Layerwise Dynamics: How Transformers Perform In-Context
Classification", Lutz et al., ICML 2026 (arXiv 2604.11613).

One run trains ``none`` / ``augment`` / ``tied`` transformers (same data, same steps, same
seed) and evaluates them next to the anchors (prototype, k-step in-context GD, ridge,
logistic regression, 1-NN) on the *same* seeded episode banks:

* accuracy at a few ``(d, C, N)``, under 20 % label noise, with 50 % unlabeled context
  points, on the quadratic task and at twice the training context length;
* per model: mean symmetry defect of its weights, accuracy after Reynolds projection and
  the max |logit| error of the extracted recursion against the (projected) model;
* a plot of the class-separation ratio and the probe alignment against depth.
"""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass
from pathlib import Path

import torch
from icml26_shared.progress import progress
from icml26_shared.results import Report, Table

from symicl.analysis import model_defects, trajectory_alignment, trajectory_separation
from symicl.baselines import tune_gd_lr
from symicl.classifier_module import train_classifier
from symicl.episodes import LinearTaskSampler
from symicl.evaluation import anchor_accuracies, model_accuracy, shifted_sampler
from symicl.recursion import extract_recursion

MODES = ("none", "augment", "tied")
SHIFT_COLUMNS = {
    "noise": "label noise 0.2",
    "semi": "50% unlabeled",
    "quadratic": "quadratic task",
    "longer": "2x context",
}


@dataclass(frozen=True)
class Setting:
    """Sizes of one reproduce run."""

    tasks: tuple[tuple[int, int, int], ...]  # (d, C, N); the first one gets the shift columns
    depths: tuple[int, ...]  # depths trained on the first task
    other_depth: int  # depth trained on the other tasks
    steps: int
    episodes: int
    gd_steps: tuple[int, ...]
    n_heads: int = 2
    batch_size: int = 64
    lr: float = 1e-2


QUICK = Setting(
    tasks=((8, 2, 32),), depths=(2,), other_depth=2, steps=500, episodes=300, gd_steps=(4,)
)
FULL = Setting(
    tasks=((8, 2, 32), (8, 4, 64), (16, 4, 64)),
    depths=(1, 2, 4),
    other_depth=2,
    steps=2000,
    episodes=1000,
    gd_steps=(4, 16),
)


def _task_name(task: tuple[int, int, int]) -> str:
    d, c, n = task
    return f"acc d={d} C={c} N={n}"


def reproduce(out: Path, quick: bool = False, seed: int = 0) -> Report:
    """Train the three symmetry modes, evaluate them with the anchors, return the report."""
    torch.set_num_threads(1)  # matrices are tiny; threads only add contention on small CPUs
    cpu_start = time.process_time()
    setting = QUICK if quick else FULL
    report = Report("symicl", out)
    base = setting.tasks[0]
    task_cols = [_task_name(t) for t in setting.tasks]
    shift_cols = list(SHIFT_COLUMNS.values())
    table = Table(
        "Probe accuracy of symmetric / unconstrained transformers and in-context anchors",
        ["method", *task_cols, *shift_cols, "defect", "acc projected", "recursion err"],
        notes=(
            f"{setting.episodes} test episodes per column, the same episodes for every row. "
            f"Transformers: {setting.n_heads} heads, {setting.steps} Adam steps of "
            f"{setting.batch_size} episodes on the clean linear task; shift columns evaluate "
            f"the models trained at d={base[0]} C={base[1]} N={base[2]} (no retraining). "
            "Accuracy and defect columns use the weights as trained (augment: before its "
            "end-of-fit projection). defect = mean ||W - P(W)||/||W|| over W_QK, W_OV; "
            f"acc projected = accuracy at d={base[0]} C={base[1]} N={base[2]} after the "
            "Reynolds projection; recursion err = max |logit| difference between the "
            "extracted recursion and the projected model, float64."
        ),
    )

    # one bank per column, shared by every row
    banks = {}
    for i, task in enumerate(setting.tasks):
        sampler = LinearTaskSampler(*task, seed=seed + 1000 + i)
        banks[_task_name(task)] = sampler.sample(setting.episodes)
        if i == 0:
            for shift, col in SHIFT_COLUMNS.items():
                banks[col] = shifted_sampler(sampler, shift).sample(setting.episodes)
    val = {
        t: LinearTaskSampler(*t, seed=seed + 2000).sample(setting.episodes) for t in setting.tasks
    }
    gd_lr = {t: {k: tune_gd_lr(val[t], t[1], k) for k in setting.gd_steps} for t in setting.tasks}

    # ---------------------------------------------------------------- transformers
    runs = [(base, depth) for depth in setting.depths]
    runs += [(t, setting.other_depth) for t in setting.tasks[1:]]
    jobs = [(task, depth, mode) for task, depth in runs for mode in MODES]
    rows: dict[str, dict] = {}
    curves = {}
    for task, depth, mode in progress(jobs, desc="training", total=len(jobs)):
        module = train_classifier(
            *task,
            n_layers=depth,
            n_heads=setting.n_heads,
            symmetry=mode,
            steps=setting.steps,
            batch_size=setting.batch_size,
            lr=setting.lr,
            seed=seed,
        )
        model = module.model
        # the weights as trained: augment was projected at the end of fit, undo that here
        raw_model = model
        if module.state_before_projection is not None:
            raw_model = copy.deepcopy(model)
            raw_model.load_state_dict(module.state_before_projection)
        row = rows.setdefault(f"{mode} L={depth}", {"method": f"{mode} L={depth}"})
        row[_task_name(task)] = model_accuracy(raw_model, banks[_task_name(task)])
        if task != base:
            continue
        raw = model_defects(raw_model)
        row["defect"] = (raw["qk_mean"] + raw["ov_mean"]) / 2
        for col in shift_cols:
            row[col] = model_accuracy(raw_model, banks[col])
        rec = extract_recursion(model, project=True)
        projected = model if bool(model.projected) else _projected_copy(model)
        row["acc projected"] = model_accuracy(projected, banks[_task_name(base)])
        row["recursion err"] = rec.verify(projected, banks[_task_name(base)])
        # trajectory of the model as trained (augment: its projection, which it now is)
        probe_bank = banks[_task_name(base)]
        curves[f"{mode} L={depth}"] = (
            trajectory_separation(model, probe_bank).tolist(),
            trajectory_alignment(model, probe_bank).tolist(),
        )
    table.extend(rows[k] for k in sorted(rows, key=_row_order))

    # ---------------------------------------------------------------- anchors
    anchor_rows: dict[str, dict] = {}
    for col, bank in progress(list(banks.items()), desc="anchors", total=len(banks)):
        task = next((t for t in setting.tasks if _task_name(t) == col), base)
        for name, acc in anchor_accuracies(bank, task[1], gd_lr[task]).items():
            anchor_rows.setdefault(name, {"method": name})[col] = acc
    table.extend(anchor_rows.values())
    report.add_table(table)

    report.add_table(_depth_table(curves, setting, base))
    _plot_curves(report, curves)
    _summarise(report, table, base, setting, gd_lr, curves)
    report.note(f"CPU time of this run (one thread): {time.process_time() - cpu_start:.0f} s.")
    return report


def _depth_table(curves: dict, setting: Setting, base) -> Table:
    depth_max = max(setting.depths)
    sep_cols = [f"sep l={layer}" for layer in range(depth_max + 1)]
    align_cols = [f"align l={layer}" for layer in range(depth_max + 1)]
    table = Table(
        "Class separation and probe alignment along depth",
        ["model", *sep_cols, *align_cols],
        notes=(
            f"d={base[0]} C={base[1]} N={base[2]} test episodes; l = 0 is the input, l = L "
            "the last layer. sep = median over episodes of tr(S_B)/tr(S_W) of the context "
            "features (clean labels); align = mean normalised margin "
            "(<u, v_c*> - max_c <u, v_c>)/(|u| rms|v|) of the probe towards its true class "
            "mean. Models as trained (augment after its Reynolds projection, none raw)."
        ),
    )
    for name in sorted(curves, key=_row_order):
        sep, align = curves[name]
        row = {"model": name}
        row.update({sep_cols[i]: v for i, v in enumerate(sep)})
        row.update({align_cols[i]: v for i, v in enumerate(align)})
        table.add_row(**row)
    return table


def _projected_copy(model):
    return copy.deepcopy(model).project_()


def _row_order(name: str) -> tuple[int, int]:
    mode, depth = name.split(" L=")
    return MODES.index(mode), int(depth)


def _plot_curves(report: Report, curves: dict) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(9, 3.4))
    for name, (sep, align) in curves.items():
        style = {"tied": "-", "augment": "--", "none": ":"}[name.split(" ")[0]]
        axes[0].plot(range(len(sep)), sep, style, marker="o", label=name)
        axes[1].plot(range(len(align)), align, style, marker="o", label=name)
    axes[0].set(xlabel="depth (layer)", ylabel="median tr(S_B)/tr(S_W)", title="class separation")
    axes[0].set_yscale("log")
    axes[1].set(xlabel="depth (layer)", ylabel="mean alignment margin", title="probe alignment")
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    report.save_figure(fig, "separation_vs_depth.png")


def _summarise(report: Report, table: Table, base, setting: Setting, gd_lr, curves) -> None:
    col = _task_name(base)
    acc = {row["method"]: row.get(col) for row in table.rows}
    lines = []
    for depth in setting.depths:
        tied, none, aug = (acc.get(f"{m} L={depth}") for m in ("tied", "none", "augment"))
        lines.append(
            f"L={depth}: tied - none = {100 * (tied - none):+.1f} points, "
            f"augment - none = {100 * (aug - none):+.1f} points, "
            f"tied - prototype = {100 * (tied - acc['prototype']):+.1f} points"
        )
    grows = [name for name, (sep, _) in curves.items() if sep[-1] > sep[0]]
    lines.append(
        f"separation ratio larger at the last layer than at the input for {len(grows)} of "
        f"{len(curves)} models ({', '.join(sorted(grows, key=_row_order)) or 'none'})"
    )
    errs = [row["recursion err"] for row in table.rows if row.get("recursion err") is not None]
    lines.append(f"max recursion error over all models: {max(errs):.2e}")
    lr_text = "; ".join(
        f"d={t[0]} C={t[1]} N={t[2]}: " + ", ".join(f"k={k} lr={v}" for k, v in lrs.items())
        for t, lrs in gd_lr.items()
    )
    lines.append(f"GD step sizes tuned on separate validation episodes: {lr_text}")
    report.note("Summary (from this run): " + " | ".join(lines))
