"""Evaluation protocol: probe accuracy of models and anchors under the paper's shifts.

Paper: "Symmetry Reveals Layerwise Dynamics: How Transformers Perform In-Context
Classification", Lutz et al., ICML 2026 (arXiv 2604.11613), Sec. 5 (robustness under
label noise, semi-supervised contexts, nonlinear tasks; longer contexts).

* the shifted test distributions                    -> :data:`SHIFTS`, :func:`shifted_sampler`
* accuracy of a transformer on an episode bank       -> :func:`model_accuracy`
* accuracy of every anchor on the same bank          -> :func:`anchor_accuracies`
"""

from __future__ import annotations

import torch

from symicl.baselines import (
    SKLEARN_BASELINES,
    accuracy,
    gd_scores,
    prototype_scores,
    sklearn_predict,
)
from symicl.episodes import LinearTaskSampler, one_hot_labels
from symicl.transformer import EquivariantICLTransformer

#: name -> what changes relative to the training distribution
SHIFTS = {
    "none": "the training distribution",
    "noise": "each context label flipped to another class with probability `noise`",
    "semi": "a fraction `unlabeled` of the context points carries no label",
    "quadratic": "labels from argmax (W x + V (x*x - 1)/sqrt 2), a nonlinear task",
    "longer": "context `length_factor` times longer than in training",
}


def shifted_sampler(
    base: LinearTaskSampler,
    shift: str,
    noise: float = 0.2,
    unlabeled: float = 0.5,
    length_factor: int = 2,
    seed: int | None = None,
) -> LinearTaskSampler:
    """A sampler like ``base`` with one shift of :data:`SHIFTS` applied."""
    if shift not in SHIFTS:
        raise ValueError(f"unknown shift {shift!r}; expected one of {tuple(SHIFTS)}")
    if length_factor < 1:
        raise ValueError(f"length_factor must be >= 1, got {length_factor}")
    kw = {
        "d": base.d,
        "n_classes": base.n_classes,
        "n_context": base.n_context,
        "noise": base.noise,
        "unlabeled": base.unlabeled,
        "kind": base.kind,
        "seed": base.seed if seed is None else seed,
    }
    if shift == "noise":
        kw["noise"] = noise
    elif shift == "semi":
        kw["unlabeled"] = unlabeled
    elif shift == "quadratic":
        kw["kind"] = "quadratic"
    elif shift == "longer":
        kw["n_context"] = base.n_context * length_factor
    return LinearTaskSampler(**kw)


@torch.no_grad()
def model_accuracy(model: EquivariantICLTransformer, batch: dict[str, torch.Tensor]) -> float:
    """Probe accuracy of ``model`` (in eval mode) on an episode batch."""
    was_training = model.training
    model.eval()
    logits = model(batch["x"], one_hot_labels(batch["y"], model.n_classes), batch["xq"])
    model.train(was_training)
    return accuracy(logits, batch["yq"])


def anchor_accuracies(
    batch: dict[str, torch.Tensor],
    n_classes: int,
    gd: dict[int, float] | None = None,
    sklearn: tuple[str, ...] = SKLEARN_BASELINES,
) -> dict[str, float]:
    """Accuracy of the prototype, k-step GD (``{k: lr}``) and scikit-learn anchors."""
    y = one_hot_labels(batch["y"], n_classes)
    out = {"prototype": accuracy(prototype_scores(batch["x"], y, batch["xq"]), batch["yq"])}
    for k, lr in (gd or {}).items():
        out[f"GD k={k}"] = accuracy(gd_scores(batch["x"], y, batch["xq"], k, lr), batch["yq"])
    for name in sklearn:
        out[name] = accuracy(sklearn_predict(name, batch), batch["yq"])
    return out
