"""Command line of symicl: ``symicl --help``.

``fit/validate/test/predict`` (LightningCLI over :class:`~symicl.lightning.ICLClassifierModule`
and :class:`~symicl.lightning.LinearTaskDataModule`), ``reproduce``, and the package commands
``extract``, ``verify``, ``evaluate``, ``classify`` (your own episodes from an ``.npz``) and
``benchmark``. Every checkpoint is read with :func:`icml26_shared.cli.load_checkpoint`; nothing
heavy is imported until a command runs (``symicl --help`` imports neither torch nor lightning).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from icml26_shared.cli import PaperCLI, UsageError, load_checkpoint

from .paper import PAPER


def extract(checkpoint: Path, out: Path | None = None, project: bool = False) -> None:
    """Extract the depth-indexed update rule of a trained model as a JSON recursion.

    Args:
        checkpoint: Lightning checkpoint written by ``symicl fit``.
        out: Where to write the recursion JSON (default: print only).
        project: Project an unconstrained (``none``/unprojected ``augment``) model onto the
            commutant first; the recursion then describes the projected model.
    """
    from symicl.lightning import ICLClassifierModule
    from symicl.recursion import extract_recursion

    module = load_checkpoint(ICLClassifierModule, checkpoint)
    rec = extract_recursion(module.model, project=project)
    print(rec.describe())
    if out is not None:
        rec.save(out)
        print(f"wrote {out}")


def verify(
    checkpoint: Path,
    recursion: Path,
    n_context: int = 32,
    episodes: int = 256,
    seed: int = 0,
    tol: float = 1e-5,
) -> None:
    """Check that a recursion reproduces a model's logits on fresh episodes.

    Args:
        checkpoint: Lightning checkpoint of the model.
        recursion: JSON file written by ``symicl extract``.
        n_context: Context length N of the episodes.
        episodes: Number of seeded episodes to compare on.
        seed: Seed of the episodes.
        tol: Largest allowed max |logit difference|; above it the command fails.
    """
    import copy

    from symicl.episodes import LinearTaskSampler
    from symicl.lightning import ICLClassifierModule
    from symicl.recursion import Recursion

    module = load_checkpoint(ICLClassifierModule, checkpoint)
    rec = Recursion.load(recursion)
    data = module.hparams
    model = module.model
    if not bool(model.projected):
        model = copy.deepcopy(model).project_()
    batch = LinearTaskSampler(data.d, data.n_classes, n_context, seed=seed).sample(episodes)
    err = rec.verify(model, batch)
    print(f"max |logit difference| = {err:.3e} over {episodes} episodes")
    if err > tol:
        raise UsageError(f"recursion does not reproduce the model: error {err:.3e} > tol {tol:g}")


def evaluate(
    checkpoint: Path,
    shift: Literal["none", "noise", "semi", "quadratic", "longer"] = "none",
    n_context: int = 32,
    noise: float = 0.2,
    unlabeled: float = 0.5,
    length_factor: int = 2,
    episodes: int = 500,
    seed: int = 0,
    episode_file: Path | None = None,
    table: str | None = None,
    label_column: str | None = None,
) -> None:
    """Probe accuracy of a trained model and of the anchors under a shift or on your own episodes.

    Args:
        checkpoint: Lightning checkpoint written by ``symicl fit``.
        shift: ``none``, ``noise`` (label noise), ``semi`` (unlabeled points),
            ``quadratic`` (nonlinear task) or ``longer`` (longer context).
        n_context: Training context length N.
        noise: Label-flip probability for ``shift=noise``.
        unlabeled: Unlabeled fraction for ``shift=semi``.
        length_factor: Context multiplier for ``shift=longer``.
        episodes: Number of test episodes (synthetic or table-built).
        seed: Seed of the episodes.
        episode_file: Score on your own episodes instead: an ``.npz`` with ``x``, ``y``,
            ``xq`` and ``yq`` (the probes' classes); ``shift`` does not apply.
        table: Score on episodes built from a table: ``sklearn:digits`` (``wine``,
            ``iris``, ``breast_cancer``) or a CSV path (random d-feature subsets,
            standardised, ``n_context`` context points).
        label_column: The CSV's label column (default: the last).
    """
    batch, what = _scoring_batch(
        checkpoint, shift, n_context, noise, unlabeled, length_factor, episodes, seed,
        episode_file, table, label_column,
    )  # fmt: skip
    from symicl.evaluation import anchor_accuracies, model_accuracy

    module, hp = batch.pop("_module"), batch.pop("_hp")
    print(f"{what}: {len(batch['yq'])} episodes, d={hp.d} C={hp.n_classes}")
    print(f"  model ({hp.symmetry}, L={hp.n_layers}): {model_accuracy(module.model, batch):.4f}")
    for name, acc in anchor_accuracies(batch, hp.n_classes).items():
        print(f"  {name}: {acc:.4f}")


def _scoring_batch(
    checkpoint, shift, n_context, noise, unlabeled, length_factor, episodes, seed,
    episode_file, table, label_column,
):  # fmt: skip
    from symicl.episodes import LinearTaskSampler, TableEpisodeSampler, load_episodes
    from symicl.evaluation import shifted_sampler
    from symicl.lightning import ICLClassifierModule

    if episode_file is not None and table is not None:
        raise UsageError("give either --episode_file or --table, not both")
    module = load_checkpoint(ICLClassifierModule, checkpoint)
    hp = module.hparams
    if episode_file is not None:
        batch = load_episodes(episode_file, hp.n_classes)
        if "yq" not in batch:
            raise UsageError(f"{episode_file}: no 'yq' array (the probes' classes) to score")
        what = f"episodes from {episode_file}"
    elif table is not None:
        sampler = TableEpisodeSampler.from_source(
            table, hp.d, hp.n_classes, n_context, seed, label_column
        )
        batch, what = sampler.sample(episodes), f"episodes from table {table}"
    else:
        base = LinearTaskSampler(hp.d, hp.n_classes, n_context, seed=seed)
        batch = shifted_sampler(base, shift, noise, unlabeled, length_factor).sample(episodes)
        what = f"shift={shift}"
    if batch["x"].shape[-1] != hp.d:
        raise UsageError(
            f"feature dimension {batch['x'].shape[-1]} does not match the model's d={hp.d}"
        )
    return {**batch, "_module": module, "_hp": hp}, what


def classify(checkpoint: Path, episodes: Path, out: Path | None = None) -> None:
    """Classify the probes of your own episodes with a trained model.

    Args:
        checkpoint: Lightning checkpoint written by ``symicl fit``.
        episodes: ``.npz`` file with ``x`` ((B, N, d) or (N, d)), ``y`` (integer labels,
            -1 = unlabeled, or one-hot rows), ``xq`` ((B, d) or (d,)) and optionally ``yq``
            (the probes' classes: then the accuracy is reported).
        out: Folder for ``result.json`` (accuracy, per-episode predictions and logits) and
            ``predictions.csv`` (one row per episode).
    """
    import json

    import torch
    from icml26_shared.results import atomic_write_text, ensure_writable_dir

    from symicl.episodes import load_episodes, one_hot_labels
    from symicl.lightning import ICLClassifierModule

    module = load_checkpoint(ICLClassifierModule, checkpoint)
    model = module.model
    batch = load_episodes(episodes, model.n_classes)
    if batch["x"].shape[-1] != model.d:
        raise UsageError(
            f"feature dimension {batch['x'].shape[-1]} does not match the model's d={model.d}"
        )
    if out is not None:
        out = ensure_writable_dir(out)
    with torch.no_grad():
        logits = model(batch["x"], one_hot_labels(batch["y"], model.n_classes), batch["xq"])
    preds = logits.argmax(-1).tolist()
    for i, (row, pred) in enumerate(zip(logits.tolist(), preds, strict=True)):
        print(f"episode {i}: class {pred}  logits " + " ".join(f"{v:.4f}" for v in row))
    truth = batch["yq"].tolist() if "yq" in batch else None
    accuracy = (
        None
        if truth is None
        else sum(p == t for p, t in zip(preds, truth, strict=True)) / len(preds)
    )
    if accuracy is not None:
        print(f"accuracy {accuracy:.4f} over {len(preds)} episodes")
    if out is None:
        return
    result = {
        "checkpoint": str(checkpoint), "episodes": str(episodes), "n_episodes": len(preds),
        "accuracy": accuracy, "predictions": preds, "true_classes": truth,
        "logits": logits.tolist(),
    }  # fmt: skip
    atomic_write_text(out / "result.json", json.dumps(result, indent=1))
    header = ["episode", "predicted", *(["true"] if truth else [])]
    header += [f"logit_{c}" for c in range(model.n_classes)]
    lines = [",".join(header)]
    for i, (pred, row) in enumerate(zip(preds, logits.tolist(), strict=True)):
        cells = [str(i), str(pred), *([str(truth[i])] if truth else [])]
        lines.append(",".join(cells + [f"{v:.6g}" for v in row]))
    atomic_write_text(out / "predictions.csv", "\n".join(lines) + "\n")
    print(f"wrote {out / 'result.json'} and {out / 'predictions.csv'}")


def explain(
    checkpoint: Path,
    n_context: int = 32,
    episodes: int = 512,
    episode_file: Path | None = None,
    gd_steps: list[int] | None = None,
    fit_steps: int = 400,
    seed: int = 0,
    out: Path | None = None,
) -> None:
    """The paper's mechanism analysis of a trained model (Sec. 4).

    Prunes the coefficients that never receive a gradient (reported as inert), splits each
    layer's update of the probe and the context points into the true-class attention term,
    the other-class terms and the residual, and fits k-step in-context GD and a label-aware
    mean shift to the model's logits, reporting held-out logit agreement. ``none``/``augment``
    models are explained through their Reynolds projection.

    Args:
        checkpoint: Lightning checkpoint written by ``symicl fit``.
        n_context: Context length N of the synthetic episodes.
        episodes: Episodes for fitting and, as many again, for testing (synthetic task).
        episode_file: Use your own episodes instead (``.npz`` with ``x``, ``y``, ``xq``,
            ``yq``): the first half fits, the second half tests.
        gd_steps: The k of the k-step GD rules (default 1, 2, 4).
        fit_steps: Adam steps per rule fit.
        seed: Seed of the synthetic episodes.
        out: Folder for ``result.json`` (everything), ``recursion.json`` (the pruned
            recursion) and ``decomposition.csv``.
    """
    import json

    from icml26_shared.results import atomic_write_text, ensure_writable_dir

    from symicl.episodes import LinearTaskSampler, load_episodes
    from symicl.explanation import explain_model
    from symicl.lightning import ICLClassifierModule

    gd_steps = list(gd_steps or [1, 2, 4])
    if any(k < 1 for k in gd_steps) or fit_steps < 1 or episodes < 2:
        raise UsageError("gd_steps and fit_steps must be >= 1 and episodes >= 2")
    module = load_checkpoint(ICLClassifierModule, checkpoint)
    model = module.model
    if out is not None:
        out = ensure_writable_dir(out)
    if episode_file is not None:
        bank = load_episodes(episode_file, model.n_classes)
        if "yq" not in bank or bank["x"].shape[-1] != model.d or len(bank["yq"]) < 4:
            raise UsageError(
                f"{episode_file}: need yq, d={model.d} features and at least 4 episodes"
            )
        half = len(bank["yq"]) // 2
        fit = {k: v[:half] for k, v in bank.items()}
        test = {k: v[half:] for k, v in bank.items()}
    else:
        sampler = LinearTaskSampler(model.d, model.n_classes, n_context, seed=seed)
        fit, test = sampler.sample(episodes), sampler.sample(episodes, start=episodes)
    print(f"explaining {model.symmetry} L={model.n_layers} (fits: {len(gd_steps) + 1} rules)...")
    ex = explain_model(model, fit, test, tuple(gd_steps), fit_steps)
    print(ex.recursion.describe())
    print(f"pruned recursion vs model: max |centred logit difference| {ex.recursion_err:.2e} "
          "(an identity for any weights, not a finding)")  # fmt: skip
    print("layer token    attn-true chance true-share other-share residual-share margin-gain")
    for r in ex.decomposition:
        gain = "" if r["margin_gain"] is None else f"{r['margin_gain']:+.4f}"
        print(f"{r['layer']:5d} {r['token']:8s} {r['attn_true']:9.3f} {r['chance']:6.3f} "
              f"{r['true_share']:10.3f} {r['other_share']:11.3f} {r['residual_share']:14.3f} "
              f"{gain}")  # fmt: skip
    print(f"model accuracy {ex.accuracy:.4f}; fitted rules (held-out):")
    for m in ex.rules:
        print(f"  {m.label:16s} params {m.n_params:2d}  agree {m.agree:.3f}  R2 {m.r2:+.3f}  "
              f"rule acc {m.accuracy:.3f}")  # fmt: skip
    print(f"best match: {ex.best.label}")
    if out is None:
        return
    atomic_write_text(out / "result.json", json.dumps(ex.to_dict(), indent=1))
    atomic_write_text(out / "recursion.json", ex.recursion.to_json())
    cols = list(ex.decomposition[0])
    rows = [",".join(cols)] + [
        ",".join("" if r[c] is None else str(r[c]) for c in cols) for r in ex.decomposition
    ]
    atomic_write_text(out / "decomposition.csv", "\n".join(rows) + "\n")
    print(f"wrote result.json, recursion.json and decomposition.csv to {out}")


def build_episodes(
    table: str,
    out: Path,
    d: int = 8,
    n_classes: int = 2,
    n_context: int = 32,
    episodes: int = 1000,
    seed: int = 0,
    label_column: str | None = None,
) -> None:
    """Build an episode file from a table (for ``fit --data.episodes``, ``classify``, ``explain``).

    Args:
        table: ``sklearn:digits`` (``wine``, ``iris``, ``breast_cancer``: shipped with
            scikit-learn) or a CSV path with a header, numeric features and a label column.
        out: The ``.npz`` to write (``x``, ``y``, ``xq``, ``yq``).
        d: Features per episode (a random subset of the table's columns, standardised).
        n_classes: Classes per episode (a random subset, relabelled 0..C-1).
        n_context: Context points per episode.
        episodes: Number of episodes.
        seed: Seed of the episodes.
        label_column: The CSV's label column (default: the last).
    """
    from symicl.episodes import TableEpisodeSampler, save_episodes

    sampler = TableEpisodeSampler.from_source(table, d, n_classes, n_context, seed, label_column)
    batch = sampler.sample(episodes)
    save_episodes(out, batch)
    print(f"wrote {episodes} episodes (d={d}, C={n_classes}, N={n_context}) from {table} to {out}")


def benchmark(
    d: int = 8,
    n_classes: int = 2,
    n_context: int = 32,
    episodes: int = 500,
    noise: float = 0.0,
    unlabeled: float = 0.0,
    kind: Literal["linear", "quadratic"] = "linear",
    gd_steps: int = 4,
    seed: int = 0,
) -> None:
    """Accuracy and time of the in-context anchors on seeded episodes (no model needed).

    Args:
        d: Feature dimension.
        n_classes: Number of classes C.
        n_context: Context length N.
        episodes: Number of episodes.
        noise: Label-flip probability of the context.
        unlabeled: Fraction of unlabeled context points.
        kind: ``linear`` or ``quadratic`` task.
        gd_steps: Steps of the in-context GD anchor (step size tuned on other episodes).
        seed: Seed of the episodes.
    """
    from icml26_shared.bench import time_it

    from symicl.baselines import tune_gd_lr
    from symicl.episodes import LinearTaskSampler
    from symicl.evaluation import anchor_accuracies

    sampler = LinearTaskSampler(d, n_classes, n_context, noise, unlabeled, kind, seed)
    batch = sampler.sample(episodes)
    val = LinearTaskSampler(d, n_classes, n_context, noise, unlabeled, kind, seed + 1).sample(
        episodes
    )
    lr = tune_gd_lr(val, n_classes, gd_steps)
    print(f"{episodes} episodes, d={d} C={n_classes} N={n_context} kind={kind} noise={noise}")
    for name in ("prototype", f"GD k={gd_steps}", "ridge", "logistic", "1-nn"):
        gd = {gd_steps: lr} if name.startswith("GD") else None
        skl = (name,) if name in ("ridge", "logistic", "1-nn") else ()
        timing = time_it(lambda gd=gd, skl=skl: anchor_accuracies(batch, n_classes, gd, skl), 0, 1)
        acc = timing.result[name]
        print(f"  {name:10s} accuracy {acc:.4f}  time {timing.median:.3f} s")


def build_cli() -> PaperCLI:
    """The package's CLI (nothing heavy is imported until a command runs)."""
    return PaperCLI(
        PAPER,
        model_class="symicl.lightning:ICLClassifierModule",
        datamodule_class="symicl.lightning:LinearTaskDataModule",
        commands={
            **{
                name: f"symicl.cli:{name}"
                for name in ("extract", "verify", "evaluate", "classify", "explain", "benchmark")
            },
            "episodes": "symicl.cli:build_episodes",
        },
    )


def main(args: Sequence[str] | None = None) -> int:
    """Entry point of the ``symicl`` console script."""
    return build_cli().main(args)
