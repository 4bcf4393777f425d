"""The paper's comparison: every weight-space family on every task, and the output ensemble.

Families (:mod:`wsnets.architectures`): flat MLP, flat MLP + permutation augmentation,
canonicalise-then-MLP, StatNN, DWS (= HNP-NFN here), NP-NFN+PE, NF-Transformer, GMN.

* :func:`zoo_datamodule`: the zoo of one task (digit SIRENs for classification and editing,
  sine SIRENs, trained MLPs), split by ``seed`` (the zoo itself is fixed by ``zoo_seed``);
* :func:`train_task`: one family on one task through its LightningModule
  (:class:`~wsnets.lightning.INRClassifier`, :class:`~wsnets.lightning.WeightRegressor`,
  :class:`~wsnets.lightning.INREditor` with ``F`` output-ensemble members, width reduced
  until its parameters are at most the ``F = 1`` editor's) and the reported protocol
  (:func:`~wsnets.training.fit_and_test`: test metrics at the best-validation epoch);
* :func:`output_ensemble_table` (edit MSE / PSNR per family and ``F``, with the "no edit"
  anchor :func:`no_edit_mse`), :func:`edit_figure` and :func:`invariant_table` (digit-INR
  accuracy, sine-frequency R^2, zoo Kendall tau): cells are ``mean ± std`` over seeds.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import torch
from icml26_shared.results import Table

from wsnets.architectures import LABELS

# invariant tasks: every family; HNP-NFN is built from the DWS layer (same commutant), so at
# the same seed it *is* the DWS network -- it is not trained twice (tests check the identity).
INVARIANT_MODELS = ("mlp", "mlp_aug", "canon", "statnn", "dws", "np_pe", "nft", "gmn")
EDIT_MODELS = ("mlp", "mlp_aug", "canon", "dws", "np_pe", "nft", "gmn")  # StatNN cannot edit
#: The same families built from the ``nfn`` package (``bench`` extra), run beside ours.
NFN_EDIT_MODELS = ("nfn_hnp", "nfn_np_pe", "nfn_nft")
#: Default width of each family (``wsnets f-sweep``; ``reproduce`` reads its widths from YAML).
DEFAULT_WIDTHS = {"dws": 6, "np_pe": 6, "nft": 6, "gmn": 12, "mlp": 64, "mlp_aug": 64,
                  "canon": 64, "statnn": 64}  # fmt: skip
TASKS = ("cls", "sine", "zoo", "edit")


def nfn_available() -> bool:
    """Whether the ``nfn`` package (the ``bench`` extra) is importable."""
    import importlib.util

    return importlib.util.find_spec("nfn") is not None


def edit_models() -> tuple[str, ...]:
    """Our editing families, plus the ``nfn`` ones when the package is installed."""
    return EDIT_MODELS + (NFN_EDIT_MODELS if nfn_available() else ())


def invariant_models() -> tuple[str, ...]:
    """Our invariant-task families, plus the ``nfn`` ones when the package is installed."""
    return INVARIANT_MODELS + (NFN_EDIT_MODELS if nfn_available() else ())


def width_of(widths: Mapping[str, int], name: str) -> int:
    """A family's width; an ``nfn_*`` family without its own entry takes its twin's (HNP: DWS).

    >>> width_of({"dws": 6}, "nfn_hnp")
    6
    """
    if name in widths:
        return int(widths[name])
    twin = {"nfn_hnp": "dws", "nfn_np_pe": "np_pe", "nfn_nft": "nft"}.get(name)
    if twin in widths:
        return int(widths[twin])
    raise KeyError(f"no width for family {name!r} in {sorted(widths)}")


def model_depth(name: str) -> int:
    """Layers of a family's network: 2 for the flat MLP baselines, 3 for the others."""
    return 2 if name in ("mlp", "mlp_aug", "canon") else 3


def t_interval(values: Sequence[float], level: float = 0.95) -> tuple[float, float] | None:
    """Student-t interval of the mean of ``values`` (None for fewer than two values).

    >>> lo, hi = t_interval([1.0, 2.0, 3.0]); round(lo, 3), round(hi, 3)
    (-0.484, 4.484)
    """
    from scipy import stats

    vals = torch.tensor([float(v) for v in values], dtype=torch.float64)
    if len(vals) < 2:
        return None
    half = float(stats.t.ppf(0.5 + level / 2, len(vals) - 1)) * float(vals.std()) / len(vals) ** 0.5
    return float(vals.mean()) - half, float(vals.mean()) + half


def interval_cell(values: Sequence[float], fmt: str = ".4g") -> str | None:
    """``"[lo, hi]"`` of :func:`t_interval` as a table cell."""
    ci = t_interval(values)
    return None if ci is None else f"[{ci[0]:{fmt}}, {ci[1]:{fmt}}]"


def mean_std(values: Sequence[float | None]):
    """One value: the value; several: ``"mean ± std"`` (sample std) as a string cell.

    >>> mean_std([0.5]), mean_std([1.0, 3.0])
    (0.5, '2 ± 1.4')
    """
    vals = [float(v) for v in values if v is not None]
    if not vals:
        return None
    if len(vals) == 1:
        return vals[0]
    t = torch.tensor(vals, dtype=torch.float64)
    return f"{float(t.mean()):.4g} ± {float(t.std()):.2g}"


def zoo_datamodule(
    task: str,
    seed: int,
    zoo_seed: int,
    n: int,
    fit_steps: int,
    init: str = "shared",
    batch_size: int = 16,
    cache_dir: str | None = None,
):
    """The (set-up) datamodule of ``task`` (``cls``, ``edit``, ``sine``, ``zoo``) on ``n`` networks.

    ``fit_steps`` and ``init`` apply to the digit SIRENs (the sine SIRENs keep their 300 steps).
    """
    from wsnets.lightning import DigitsINRDataModule, MLPZooDataModule, SineINRDataModule

    common = dict(seed=seed, zoo_seed=zoo_seed, batch_size=batch_size, cache_dir=cache_dir)
    if task in ("cls", "edit"):
        dm = DigitsINRDataModule("classify" if task == "cls" else "edit", n_images=n,
                                 fit_steps=fit_steps, init=init, **common)  # fmt: skip
    elif task == "sine":
        dm = SineINRDataModule(n=n, init=init, **common)
    elif task == "zoo":
        dm = MLPZooDataModule(n=n, **common)
    else:
        raise ValueError(f"unknown task {task!r}; choose from {', '.join(TASKS)}")
    dm.setup()
    return dm


@dataclass
class TaskRun:
    """Test metrics (best-validation epoch), parameter count and width of one trained model."""

    metrics: dict
    params: int
    width: int


def train_task(
    name: str, task: str, datamodule, width: int, epochs: int, lr: float, seed: int, F: int = 1
) -> TaskRun:
    """Train family ``name`` on ``task`` with seed ``seed`` and test it (see the module docstring)."""
    from wsnets.lightning import INRClassifier, INREditor, WeightRegressor
    from wsnets.training import fit_and_test

    meta, depth = datamodule.meta, model_depth(name)
    torch.manual_seed(seed)
    if task == "cls":
        module = INRClassifier(meta["arch"], name, width, depth, 10, lr=lr)
    elif task in ("sine", "zoo"):
        module = WeightRegressor(meta["arch"], name, width, depth, lr=lr)
    elif task == "edit":
        module = INREditor(meta["arch"], name, width, depth, F=F, image_size=meta["size"],
                           w0=meta["w0"], offset=meta["offset"], lr=lr)  # fmt: skip
    else:
        raise ValueError(f"unknown task {task!r}; choose from {', '.join(TASKS)}")
    res = fit_and_test(module, datamodule, epochs)
    return TaskRun(res, module.n_params(), int(getattr(module, "width", width)))


def no_edit_mse(datamodule) -> float:
    """MSE of the *input* INRs of the test split rendered against the edit target (the anchor)."""
    from wsnets.weight_space import WeightSpace, image_coords

    meta, idx, zoo = datamodule.meta, datamodule.idx["test"], datamodule.zoo
    v = WeightSpace([w[idx] for w in zoo.params.weights], [b[idx] for b in zoo.params.biases])
    with torch.no_grad():
        rend = v.render(image_coords(meta["size"]), "sine", meta["w0"], meta["offset"])[..., 0, 0]
    target = zoo.targets["edit"][idx].reshape(len(idx), -1)
    return float(((rend - target) ** 2).mean())


def _avg(runs: Sequence[TaskRun], get) -> float:
    return sum(get(r) for r in runs) / len(runs)


def output_ensemble_table(
    runs: Mapping[tuple[str, int], Sequence[TaskRun]],
    F_values: Sequence[int],
    no_edit: Sequence[float],
    notes: str = "",
    kept: Sequence[Mapping] = (),
) -> Table:
    """One row per (family, ``F``) editor in ``runs``, plus the "no edit (anchor)" row.

    ``kept``: finished rows of other families (:func:`kept_rows`), placed in family order.
    """
    table = Table(
        "Output ensemble: INR editing (3x3 dilation) at matched parameters "
        "(best-validation epoch, test split)",
        ["model", "F", "width", "params", "seeds", "edit MSE", "edit MSE 95% CI",
         "change vs F=1", "change 95% CI", "edit PSNR", "s/epoch"],
        units={"edit PSNR": "dB", "change vs F=1": "%", "change 95% CI": "%"},
        notes=notes,
    )  # fmt: skip
    names = [n for n in (*EDIT_MODELS, *NFN_EDIT_MODELS) if any(k[0] == n for k in runs)]
    for name in names:
        base = [x.metrics["test/loss"] for x in runs.get((name, 1), [])]
        for F in F_values:
            r = runs.get((name, F))
            if not r:
                continue
            mse = [x.metrics["test/loss"] for x in r]
            change = [100 * (m / b - 1) for m, b in zip(mse, base, strict=False)] if base else []
            row = {"edit MSE": mean_std(mse), "edit MSE 95% CI": interval_cell(mse),
                   "edit PSNR": mean_std([x.metrics["test/psnr"] for x in r]),
                   "s/epoch": _avg(r, lambda x: x.metrics["s_per_epoch"])}  # fmt: skip
            if F != 1 and change:
                row["change vs F=1"] = mean_std(change)
                row["change 95% CI"] = interval_cell(change, ".3g")
            table.add_row(model=LABELS[name], F=F, width=int(_avg(r, lambda x: x.width)),
                          params=int(_avg(r, lambda x: x.params)), seeds=len(r), **row)  # fmt: skip
    order = [LABELS[n] for n in (*EDIT_MODELS, *NFN_EDIT_MODELS)]
    rows = sorted([*table.rows, *kept], key=lambda r: (order.index(r["model"]), int(r["F"])))
    table.rows.clear()
    table.extend(rows)
    table.add_row(model="no edit (anchor)", **{"edit MSE": mean_std(list(no_edit))})
    return table


def edit_figure(
    runs: Mapping[tuple[str, int], Sequence[TaskRun]],
    F_values,
    no_edit: float,
    kept: Sequence[Mapping] = (),
):
    """Test edit MSE against ``F`` per family (error bars: 95% t-interval over seeds), no edit.

    ``kept`` rows (:func:`kept_rows`) are drawn from their ``edit MSE`` and CI cells.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(4.5, 3.2))
    for name in (*EDIT_MODELS, *NFN_EDIT_MODELS):
        Fs = [F for F in F_values if runs.get((name, F))]
        if not Fs:
            continue
        vals = [[r.metrics["test/loss"] for r in runs[(name, F)]] for F in Fs]
        means = [sum(v) / len(v) for v in vals]
        cis = [t_interval(v) for v in vals]
        err = [[m - c[0] if c else 0.0 for m, c in zip(means, cis, strict=True)],
               [c[1] - m if c else 0.0 for m, c in zip(means, cis, strict=True)]]  # fmt: skip
        ax.errorbar(Fs, means, yerr=err, fmt="o-", capsize=2, label=LABELS[name])
    for label in dict.fromkeys(r["model"] for r in kept):
        pts = sorted(_cell_point(r) for r in kept if r["model"] == label)
        Fs, means = [p[0] for p in pts], [p[1] for p in pts]
        err = [[m - p[2] for m, p in zip(means, pts, strict=True)],
               [p[3] - m for m, p in zip(means, pts, strict=True)]]  # fmt: skip
        ax.errorbar(Fs, means, yerr=err, fmt="o-", capsize=2, label=label)
    ax.axhline(no_edit, color="grey", ls="--", label="no edit")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("output-ensemble size F (matched parameters)")
    ax.set_ylabel("test MSE (dilation)")
    ax.legend(fontsize=6)
    return fig


def output_ensemble_result(s, seed: int):
    """The ``output_ensemble`` section of ``reproduce`` (``s``: its setting).

    Trains every family of ``s.models`` (default :func:`edit_models`; ``[]``: none) at every
    ``F`` on the editing zoo (fixed by ``seed``) split by each of ``s.seeds`` seeds from
    ``seed`` on, one progress line per run on stderr, and keeps the rows of the other families
    from ``s.keep_rows`` (:func:`kept_rows`).
    """
    import sys

    from icml26_shared.experiment import SectionResult, seeds

    seed_list = seeds(s, seed)

    F_values, runs, no_edit = s.F_values or [1, 2, 4, 8], {}, []
    models = edit_models() if s.models is None else s.models
    total, done = len(seed_list) * len(models) * len(F_values), 0
    for k in seed_list:
        dm = s.data("edit", s.n_edit, k, seed)
        no_edit.append(no_edit_mse(dm))
        for name in models:
            for F in F_values:
                run = train_task(name, "edit", dm, width_of(s.widths, name), s.epochs, s.lr, k, F)
                runs.setdefault((name, F), []).append(run)
                done += 1
                print(f"  output_ensemble [{done}/{total}] {name} F={F} seed {k}: test MSE "
                      f"{run.metrics['test/loss']:.4g}", file=sys.stderr, flush=True)  # fmt: skip
    notes = edit_notes(s, dm.meta, no_edit)
    kept = kept_rows(s.keep_rows or [], models, notes, no_edit)
    if kept:
        notes += (f" Rows of {', '.join(dict.fromkeys(r['model'] for r in kept))} kept verbatim "
                  f"from {', '.join(s.keep_rows)} (identical protocol notes and no-edit anchor: "
                  "same zoo, splits and seeds; each run is seeded on its own).")  # fmt: skip
    table = output_ensemble_table(runs, F_values, no_edit, notes, kept)
    figure = edit_figure(runs, F_values, sum(no_edit) / len(no_edit), kept)
    return SectionResult([table], {"edit_mse_vs_F.png": figure})


def kept_rows(
    paths: Sequence[str], rerun: Sequence[str], notes: str, no_edit: Sequence[float]
) -> list[dict]:
    """Output-ensemble rows of the families not in ``rerun``, read from earlier ``results.json``.

    Each file must hold an ``output_ensemble`` table made under the same protocol: its notes
    start with ``notes`` (zoo, seeds, epochs, learning rate, ...) and its no-edit anchor equals
    ours (the same test splits), else ``ValueError`` (one line from the CLI). A family found in
    two files with different rows is ambiguous (``ValueError``); identical rows count once. Lets a sweep rerun one family (or none) into a
    results folder without losing the rows of the others.
    """
    from pathlib import Path

    from icml26_shared.results import Report

    skip = {LABELS[n] for n in rerun} | {"no edit (anchor)"}
    anchor, out, source = mean_std(list(no_edit)), [], {}
    for path in paths:
        folder = Path(path).parent if Path(path).suffix == ".json" else Path(path)
        try:
            table = Report.read(folder).sections["output_ensemble"].tables[0]
        except (OSError, ValueError, KeyError, IndexError, TypeError) as exc:
            raise ValueError(f"keep_rows: no output_ensemble table in {path!r} ({exc})") from None
        if not table.notes.startswith(notes):
            raise ValueError(f"keep_rows: {path!r} was made under another protocol (notes differ)")
        rows = table.rows
        if [r.get("edit MSE") for r in rows if r["model"] == "no edit (anchor)"] != [anchor]:
            raise ValueError(f"keep_rows: {path!r} has another no-edit anchor (other splits)")
        fams: dict[str, list[dict]] = {}
        for r in rows:
            if r["model"] not in skip:
                fams.setdefault(r["model"], []).append(dict(r))
        for label, fam in fams.items():
            if label in source and source[label][1] != fam:
                raise ValueError(f"keep_rows: {label!r} rows in {source[label][0]!r} and {path!r}")
            if label not in source:
                source[label] = (path, fam)
                out += fam
    return out


def _cell_point(row: Mapping) -> tuple[int, float, float, float]:
    """``(F, mean, lo, hi)`` of a table row from its ``edit MSE`` and ``edit MSE 95% CI`` cells.

    >>> _cell_point({"F": 2, "edit MSE": "0.5 ± 0.1", "edit MSE 95% CI": "[0.25, 0.75]"})
    (2, 0.5, 0.25, 0.75)
    """
    mean = float(str(row["edit MSE"]).split("±")[0])
    ci = row.get("edit MSE 95% CI")
    lo, hi = (float(x) for x in ci.strip("[]").split(",")) if ci else (mean, mean)
    return int(row["F"]), mean, lo, hi


def invariant_table(runs: Mapping[tuple[str, str], Sequence[TaskRun]], notes: str = "") -> Table:
    """One row per family: digit-INR accuracy, sine R^2, zoo Kendall tau (best-validation epoch)."""
    table = Table(
        "Invariant tasks: weight-space architectures (best-validation epoch, test split)",
        ["model", "width", "params (cls)", "digit-INR acc", "sine R2", "zoo Kendall tau",
         "s/epoch (cls)"],
        notes=notes,
    )  # fmt: skip
    metric = {"cls": "test/acc", "sine": "test/r2", "zoo": "test/kendall"}
    column = {"cls": "digit-INR acc", "sine": "sine R2", "zoo": "zoo Kendall tau"}
    for name in (*INVARIANT_MODELS, *NFN_EDIT_MODELS):
        cls = runs.get((name, "cls"))
        if not cls:
            continue
        row = {"model": LABELS[name], "width": cls[0].width,
               "params (cls)": int(_avg(cls, lambda x: x.params)),
               "s/epoch (cls)": _avg(cls, lambda x: x.metrics["s_per_epoch"])}  # fmt: skip
        for task, key in metric.items():
            r = runs.get((name, task))
            row[column[task]] = mean_std([x.metrics[key] for x in r]) if r else None
        table.add_row(**row)
    return table


def edit_notes(s, meta: Mapping, no_edit: Sequence[float]) -> str:
    """The protocol under the output-ensemble table (``s``: the section's setting)."""
    return (
        f"{len(no_edit)} seed(s) (split + initialisation; zoo fixed), mean ± std when several. "
        f"{s.n_edit} digit SIRENs 2-{meta['arch'][1]}-{meta['arch'][2]}-1 ({meta['variant']} "
        f"variant, w0={meta['w0']}, {s.init} initialisation + a random hidden permutation per "
        f"INR, {meta['size']}x{meta['size']}, {s.fit_steps} Adam steps, mean fit PSNR "
        f"{meta['fit_psnr_db']:.1f} dB). Target: 3x3 grey dilation. Split 70/15/15, AdamW wd "
        f"1e-3, batch {s.batch_size}, {s.epochs} epochs at lr {s.lr:g}, ReduceLROnPlateau; test "
        "numbers at the best-validation epoch. F>1 rows: width reduced until params <= the F=1 "
        f"editor. 'no edit' anchor = input INR vs target (MSE {sum(no_edit) / len(no_edit):.4g}). "
        "95% CI: Student-t interval of the mean over seeds; change vs F=1: per-seed paired "
        "relative change of the test MSE (same split and zoo), its mean ± std and t-interval."
    )


def invariant_notes(s, seed_list: Sequence[int]) -> str:
    """The protocol under the invariant-task table (``s``: the section's setting)."""
    return (
        f"Seeds {seed_list} (split + initialisation; zoos fixed), mean ± std when several. "
        f"{s.n_images} digit SIRENs ({s.init} initialisation, {s.fit_steps} Adam steps; label: "
        f"digit, chance 0.1); {s.n_sine} sine SIRENs 1-16-16-1 (label omega in [1, 8]); MLP zoo "
        f"2-8-8-2 ({s.n_zoo} trained classifiers, label test accuracy). Split 70/15/15, AdamW wd "
        f"1e-3, batch {s.batch_size}, {s.epochs} epochs at lr {s.lr:g}, ReduceLROnPlateau; test "
        "numbers at the best-validation epoch (classifiers: best val accuracy)."
    )
