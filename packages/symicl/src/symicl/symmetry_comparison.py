"""The headline comparison: symmetric vs unconstrained transformers next to in-context anchors.

Paper: "Symmetry Reveals Layerwise Dynamics: How Transformers Perform In-Context
Classification", Lutz et al., ICML 2026 (arXiv 2604.11613). Its claims, checked on one set of
seeded episode banks shared by every row:

* symmetrised models (``tied``: weights in the commutant; ``augment``: random block
  permutations at every layer, Reynolds-projected at the end) match the unconstrained one
  (``none``) in accuracy, and keep it under label noise, unlabeled context points, a nonlinear
  task and a longer context -> the accuracy table of :func:`symmetry_comparison`
* their weights are structured: symmetry defect ``||W - P(W)|| / ||W||`` (:mod:`.symmetry`)
* the extracted depth recursion reproduces the (projected) model: max |logit| error
  (:func:`symicl.recursion.extract_recursion`)
* class separation ``tr(S_B) / tr(S_W)`` of the context grows with depth, and the probe aligns
  with its class mean (:mod:`.analysis`) -> :func:`depth_table`, :func:`separation_figure`

Every transformer is trained through :func:`symicl.lightning.train_classifier` (the
LightningModule and the quiet Trainer); the anchors are :func:`.evaluation.anchor_accuracies`.
"""

from __future__ import annotations

import copy
import statistics
from dataclasses import dataclass, field

from icml26_shared.progress import progress
from icml26_shared.results import Table

from symicl.analysis import trajectory_alignment, trajectory_separation
from symicl.baselines import tune_gd_lr
from symicl.episodes import LinearTaskSampler, TableEpisodeSampler
from symicl.evaluation import anchor_accuracies, model_accuracy, shifted_sampler
from symicl.explanation import mean_sd
from symicl.mechanism import inert_parameters, trained_defects
from symicl.recursion import extract_recursion

MODES = ("none", "augment", "tied")
SHIFT_COLUMNS = {
    "noise": "label noise 0.2",
    "semi": "50% unlabeled",
    "quadratic": "quadratic task",
    "longer": "2x context",
}

Task = tuple[int, int, int]


def task_name(task: Task) -> str:
    """Column name of a ``(d, C, N)`` task.

    >>> task_name((8, 2, 32))
    'acc d=8 C=2 N=32'
    """
    d, c, n = task
    return f"acc d={d} C={c} N={n}"


def row_order(name: str) -> tuple[int, int]:
    """Sort key of a ``"<mode> L=<depth>"`` row: by mode (:data:`MODES`), then depth."""
    mode, depth = name.split(" L=")
    return MODES.index(mode), int(depth)


@dataclass
class Comparison:
    """What :func:`symmetry_comparison` measured."""

    accuracy: Table
    depth: Table
    curves: dict[str, tuple[list, list]]  # model -> (separation, alignment): per layer, per seed
    gd_lr: dict[Task, dict[int, float]]  # tuned step size of k-step GD per task
    summary: list[str] = field(default_factory=list)


def symmetry_comparison(
    tasks: list[Task],
    depths: list[int],
    other_depth: int,
    steps: int,
    episodes: int,
    gd_steps: list[int],
    n_heads: int = 2,
    batch_size: int = 64,
    lr: float = 1e-2,
    seeds: list[int] | None = None,
    real_tables: list[str] | None = None,
) -> Comparison:
    """Train ``none`` / ``augment`` / ``tied`` per seed and evaluate them with the anchors.

    The first task gets every depth of ``depths``, the shift columns and one column per real
    table of ``real_tables`` (scikit-learn's bundled tables, episodes built by
    :class:`~symicl.episodes.TableEpisodeSampler` at the first task's size; the models are
    the ones trained on the synthetic task); the other tasks get ``other_depth``. Every seed
    trains its own models and draws its own banks; cells show mean ± sd over ``seeds``.
    """
    seeds = list(seeds or [0])
    tasks = [tuple(t) for t in tasks]
    base = tasks[0]
    real_cols = {name: f"{name} (real)" for name in real_tables or []}
    per_seed = [
        _one_seed(tasks, depths, other_depth, steps, episodes, gd_steps, n_heads, batch_size,
                  lr, seed, real_cols)
        for seed in seeds
    ]  # fmt: skip
    shift_cols = list(SHIFT_COLUMNS.values())
    table = Table(
        "Probe accuracy of symmetric / unconstrained transformers and in-context anchors",
        ["method", *map(task_name, tasks), *shift_cols, *real_cols.values(), "defect",
         "inert QK/OV", "acc projected", "recursion err"],
        notes=(
            f"Mean ± sd over {len(seeds)} seeds (each seed trains its own models and draws its "
            f"own banks); {episodes} test episodes per column and seed, the same episodes for "
            f"every row. Transformers: {n_heads} heads, {steps} Adam steps of "
            f"{batch_size} episodes on the clean linear task; shift and real-data columns "
            f"evaluate the models trained at d={base[0]} C={base[1]} N={base[2]} (no "
            "retraining). Real-data columns: episodes from scikit-learn's bundled table "
            f"(random {base[0]}-feature subsets and {base[1]}-class subsets, standardised with "
            f"the context statistics, N={base[2]}). Accuracy columns use the weights as "
            "trained (augment: before its end-of-fit projection). defect = mean "
            "||W - P(W)||/||W|| over W_QK, W_OV with the entries that never receive a "
            "gradient set to 0 (inert QK/OV = their share of the entries, or of the 6 "
            "coefficients for tied; see the mechanism section); acc projected = accuracy "
            f"at d={base[0]} C={base[1]} N={base[2]} after the Reynolds projection; "
            "recursion err = max over seeds of the max |logit| difference between the "
            "extracted recursion and the projected model, float64 (an identity that holds "
            "for any weights)."
        ),
    )  # fmt: skip
    names = list(per_seed[0][0])
    for name in names:
        row = {"method": name}
        for col in table.columns[1:]:
            vals = [rows[name].get(col) for rows, *_ in per_seed]
            if vals[0] is None:
                continue
            if col == "inert QK/OV":
                row[col] = vals[0]
            elif col == "recursion err":
                row[col] = max(vals)
            else:
                row[col] = mean_sd(vals)
        table.add_row(**row)
    curves = {}
    for name in per_seed[0][1]:
        seps = [c[name][0] for _, c, _ in per_seed]
        aligns = [c[name][1] for _, c, _ in per_seed]
        curves[name] = ([list(v) for v in zip(*seps, strict=True)],
                        [list(v) for v in zip(*aligns, strict=True)])  # fmt: skip
    gd_lr = per_seed[0][2]
    result = Comparison(table, depth_table(curves, max(depths), base), curves, gd_lr)
    result.summary = summarise(per_seed, base, depths, len(seeds))
    return result


def _one_seed(tasks, depths, other_depth, steps, episodes, gd_steps, n_heads, batch_size, lr,
              seed, real_cols):  # fmt: skip
    """Every row of the accuracy table and the depth curves for one seed (plain floats)."""
    base = tasks[0]
    shift_cols = list(SHIFT_COLUMNS.values())
    banks = {}  # one bank per column, shared by every row
    for i, task in enumerate(tasks):
        sampler = LinearTaskSampler(*task, seed=seed + 1000 + i)
        banks[task_name(task)] = sampler.sample(episodes)
        if i == 0:
            for shift, col in SHIFT_COLUMNS.items():
                banks[col] = shifted_sampler(sampler, shift).sample(episodes)
    for name, col in real_cols.items():
        tab = TableEpisodeSampler.from_source(f"sklearn:{name}", *base, seed=seed + 4000)
        banks[col] = tab.sample(episodes)
    val = {t: LinearTaskSampler(*t, seed=seed + 2000).sample(episodes) for t in tasks}
    gd_lr = {t: {k: tune_gd_lr(val[t], t[1], k) for k in gd_steps} for t in tasks}

    from symicl.lightning import train_classifier

    runs = [(base, depth) for depth in depths] + [(t, other_depth) for t in tasks[1:]]
    jobs = [(task, depth, mode) for task, depth in runs for mode in MODES]
    rows: dict[str, dict] = {}
    curves = {}
    desc = f"training (seed {seed})"
    for task, depth, mode in progress(jobs, desc=desc, total=len(jobs)):
        module = train_classifier(
            *task, n_layers=depth, n_heads=n_heads, symmetry=mode, steps=steps,
            batch_size=batch_size, lr=lr, seed=seed,
        )  # fmt: skip
        model = module.model
        # the weights as trained: augment was projected at the end of fit, undo that here
        raw_model = model
        if module.state_before_projection is not None:
            raw_model = copy.deepcopy(model)
            raw_model.load_state_dict(module.state_before_projection)
        row = rows.setdefault(f"{mode} L={depth}", {"method": f"{mode} L={depth}"})
        row[task_name(task)] = model_accuracy(raw_model, banks[task_name(task)])
        if task != base:
            continue
        masks = inert_parameters(raw_model, val[base])
        raw = trained_defects(raw_model, masks)
        row["defect"] = (raw["qk_mean"] + raw["ov_mean"]) / 2
        row["inert QK/OV"] = f"{raw['qk_inert']:.0%} / {raw['ov_inert']:.0%}"
        for col in [*shift_cols, *real_cols.values()]:
            row[col] = model_accuracy(raw_model, banks[col])
        rec = extract_recursion(model, project=True)
        projected = model if bool(model.projected) else copy.deepcopy(model).project_()
        row["acc projected"] = model_accuracy(projected, banks[task_name(base)])
        row["recursion err"] = rec.verify(projected, banks[task_name(base)])
        # trajectory of the model as trained (augment: its projection, which it now is)
        probe_bank = banks[task_name(base)]
        curves[f"{mode} L={depth}"] = (
            trajectory_separation(model, probe_bank).tolist(),
            trajectory_alignment(model, probe_bank).tolist(),
        )
    ordered = {k: rows[k] for k in sorted(rows, key=row_order)}
    for col, bank in progress(list(banks.items()), desc="anchors", total=len(banks)):
        task = next((t for t in tasks if task_name(t) == col), base)
        for name, acc in anchor_accuracies(bank, task[1], gd_lr[task]).items():
            ordered.setdefault(name, {"method": name})[col] = acc
    return ordered, curves, gd_lr


def depth_table(curves: dict, depth_max: int, base: Task) -> Table:
    """Separation ratio and probe alignment per layer ``l = 0..depth_max``, one row per model."""
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
            "mean. Models as trained (augment after its Reynolds projection, none raw); "
            "mean ± sd over seeds."
        ),
    )
    for name in sorted(curves, key=row_order):
        sep, align = curves[name]  # per layer: the values over seeds
        row = {"model": name}
        row.update({sep_cols[i]: mean_sd(v) for i, v in enumerate(sep)})
        row.update({align_cols[i]: mean_sd(v) for i, v in enumerate(align)})
        table.add_row(**row)
    return table


def separation_figure(curves: dict):
    """Separation ratio (log scale) and alignment margin against depth, one line per model."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(9, 3.4))
    for name, (sep, align) in curves.items():
        sep = [statistics.mean(v) for v in sep]  # mean over seeds
        align = [statistics.mean(v) for v in align]
        style = {"tied": "-", "augment": "--", "none": ":"}[name.split(" ")[0]]
        axes[0].plot(range(len(sep)), sep, style, marker="o", label=name)
        axes[1].plot(range(len(align)), align, style, marker="o", label=name)
    axes[0].set(xlabel="depth (layer)", ylabel="median tr(S_B)/tr(S_W)", title="class separation")
    axes[0].set_yscale("log")
    axes[1].set(xlabel="depth (layer)", ylabel="mean alignment margin", title="probe alignment")
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    return fig


def summarise(per_seed: list, base: Task, depths: list[int], n_seeds: int) -> list[str]:
    """The comparison's headline differences (mean ± sd over seeds), one line each."""
    col = task_name(base)
    lines = []
    for depth in depths:
        diffs = {"tied - none": [], "augment - none": [], "tied - prototype": []}
        for rows, _, _ in per_seed:
            acc = {name: row.get(col) for name, row in rows.items()}
            tied, none, aug = (acc[f"{m} L={depth}"] for m in ("tied", "none", "augment"))
            diffs["tied - none"].append(100 * (tied - none))
            diffs["augment - none"].append(100 * (aug - none))
            diffs["tied - prototype"].append(100 * (tied - acc["prototype"]))
        lines.append(
            f"L={depth}: " + ", ".join(f"{k} = {mean_sd(v, 1)} points" for k, v in diffs.items())
        )
    grows = {}
    for _, curves, _ in per_seed:
        for name, (sep, _) in curves.items():
            grows[name] = grows.get(name, 0) + int(sep[-1] > sep[0])
    lines.append(
        "separation ratio larger at the last layer than at the input: "
        + ", ".join(f"{k} in {v}/{n_seeds} seeds" for k, v in sorted(
            grows.items(), key=lambda kv: row_order(kv[0])))
    )  # fmt: skip
    errs = [row["recursion err"] for rows, _, _ in per_seed for row in rows.values()
            if row.get("recursion err") is not None]  # fmt: skip
    lines.append(f"max recursion error over all models and seeds: {max(errs):.2e}")
    lr_text = "; ".join(
        f"d={t[0]} C={t[1]} N={t[2]}: " + ", ".join(f"k={k} lr={v}" for k, v in lrs.items())
        for t, lrs in per_seed[0][2].items()
    )
    lines.append(f"GD step sizes tuned on separate validation episodes (first seed): {lr_text}")
    return lines
