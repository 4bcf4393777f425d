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
) -> None:
    """Probe accuracy of a trained model and of the anchors under a distribution shift.

    Args:
        checkpoint: Lightning checkpoint written by ``symicl fit``.
        shift: ``none``, ``noise`` (label noise), ``semi`` (unlabeled points),
            ``quadratic`` (nonlinear task) or ``longer`` (longer context).
        n_context: Training context length N.
        noise: Label-flip probability for ``shift=noise``.
        unlabeled: Unlabeled fraction for ``shift=semi``.
        length_factor: Context multiplier for ``shift=longer``.
        episodes: Number of test episodes.
        seed: Seed of the episodes.
    """
    from symicl.episodes import LinearTaskSampler
    from symicl.evaluation import anchor_accuracies, model_accuracy, shifted_sampler
    from symicl.lightning import ICLClassifierModule

    module = load_checkpoint(ICLClassifierModule, checkpoint)
    hp = module.hparams
    base = LinearTaskSampler(hp.d, hp.n_classes, n_context, seed=seed)
    batch = shifted_sampler(base, shift, noise, unlabeled, length_factor).sample(episodes)
    print(f"shift={shift}: {episodes} episodes, d={hp.d} C={hp.n_classes}")
    print(f"  model ({hp.symmetry}, L={hp.n_layers}): {model_accuracy(module.model, batch):.4f}")
    for name, acc in anchor_accuracies(batch, hp.n_classes).items():
        print(f"  {name}: {acc:.4f}")


def classify(checkpoint: Path, episodes: Path) -> None:
    """Classify the probes of your own episodes with a trained model.

    Args:
        checkpoint: Lightning checkpoint written by ``symicl fit``.
        episodes: ``.npz`` file with ``x`` ((B, N, d) or (N, d)), ``y`` (integer labels,
            -1 = unlabeled, or one-hot rows) and ``xq`` ((B, d) or (d,)).
    """
    import torch

    from symicl.episodes import load_episodes, one_hot_labels
    from symicl.lightning import ICLClassifierModule

    module = load_checkpoint(ICLClassifierModule, checkpoint)
    model = module.model
    batch = load_episodes(episodes, model.n_classes)
    if batch["x"].shape[-1] != model.d:
        raise UsageError(
            f"feature dimension {batch['x'].shape[-1]} does not match the model's d={model.d}"
        )
    with torch.no_grad():
        logits = model(batch["x"], one_hot_labels(batch["y"], model.n_classes), batch["xq"])
    for i, (row, pred) in enumerate(zip(logits.tolist(), logits.argmax(-1).tolist(), strict=True)):
        print(f"episode {i}: class {pred}  logits " + " ".join(f"{v:.4f}" for v in row))


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
            name: f"symicl.cli:{name}"
            for name in ("extract", "verify", "evaluate", "classify", "benchmark")
        },
    )


def main(args: Sequence[str] | None = None) -> int:
    """Entry point of the ``symicl`` console script."""
    return build_cli().main(args)
