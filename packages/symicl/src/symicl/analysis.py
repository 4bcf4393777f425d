"""Layerwise analysis of the in-context computation (Lutz et al., ICML 2026, Sec. 4-5).

Paper: "Symmetry Reveals Layerwise Dynamics: How Transformers Perform In-Context
Classification" (arXiv 2604.11613).

* class-separation ratio of the context features at every depth (the paper's claim:
  the extracted update rule amplifies class separation)   -> :func:`separation_ratio`,
  :func:`trajectory_separation`
* expected class alignment of the probe with its true
  class mean versus the best other class                   -> :func:`class_alignment`,
  :func:`trajectory_alignment`
* symmetry defect of each weight matrix                    -> :func:`model_defects`

Both trajectory measures are computed on the feature block of the token states with the
*clean* context labels, so label noise does not change what "separation" means.
"""

from __future__ import annotations

import torch

from symicl.episodes import one_hot_labels
from symicl.transformer import EquivariantICLTransformer


def _class_means(feats: torch.Tensor, labels: torch.Tensor, n_classes: int):
    onehot = one_hot_labels(labels, n_classes).to(feats.dtype)  # (B, N, C)
    counts = onehot.sum(1)  # (B, C)
    means = torch.einsum("bnc,bnd->bcd", onehot, feats) / counts.clamp_min(1)[..., None]
    return onehot, counts, means  # means (B, C, d)


def separation_ratio(feats: torch.Tensor, labels: torch.Tensor, n_classes: int) -> torch.Tensor:
    """Between- over within-class scatter ``tr(S_B) / tr(S_W)`` per episode, shape ``(B,)``.

    ``feats (B, N, d)``, integer ``labels (B, N)``. Invariant to a common translation and
    scaling of the points; larger means better separated classes.

    >>> x = torch.tensor([[[0.0], [0.2], [5.0], [5.2]]])
    >>> round(float(separation_ratio(x, torch.tensor([[0, 0, 1, 1]]), 2)[0]), 1)
    625.0
    """
    onehot, counts, means = _class_means(feats, labels, n_classes)
    grand = feats.mean(1, keepdim=True)  # (B, 1, d)
    between = (counts * ((means - grand) ** 2).sum(-1)).sum(-1)  # (B,)
    fitted = torch.einsum("bnc,bcd->bnd", onehot, means)
    within = ((feats - fitted) ** 2).sum((-2, -1))
    return between / within.clamp_min(1e-12)


def class_alignment(
    feats: torch.Tensor,
    labels: torch.Tensor,
    probe: torch.Tensor,
    target: torch.Tensor,
    n_classes: int,
) -> torch.Tensor:
    """Normalised alignment margin of the probe with its true class, shape ``(B,)``.

    With centred probe ``u = x_q - m`` and class directions ``v_c = mu_c - m`` (``m`` the
    context mean, ``mu_c`` the class means of ``feats``)::

        (<u, v_{c*}> - max_{c != c*, c present} <u, v_c>) / (||u|| * rms_c ||v_c||)

    Positive means the probe points towards its own class. Scale- and shift-invariant;
    episodes where the true class or all others are absent from the context give ``nan``.
    """
    onehot, counts, means = _class_means(feats, labels, n_classes)
    grand = feats.mean(1)  # (B, d)
    u = probe - grand
    v = means - grand[:, None]  # (B, C, d)
    present = counts > 0
    dots = torch.einsum("bd,bcd->bc", u, v)
    own = dots.gather(1, target[:, None])[:, 0]
    others = dots.masked_fill(~present, float("-inf"))
    others = others.scatter(1, target[:, None], float("-inf")).max(1).values
    rms = torch.sqrt(((v**2).sum(-1) * present).sum(1) / present.sum(1).clamp_min(1))
    margin = (own - others) / (u.norm(dim=-1) * rms).clamp_min(1e-12)
    valid = present.gather(1, target[:, None])[:, 0] & torch.isfinite(others)
    return torch.where(valid, margin, torch.full_like(margin, float("nan")))


@torch.no_grad()
def model_trajectory(
    model: EquivariantICLTransformer, batch: dict[str, torch.Tensor]
) -> torch.Tensor:
    """Token states of every depth ``(L+1, B, N+1, d+C)`` for an episode batch."""
    y = one_hot_labels(batch["y"], model.n_classes)
    was_training = model.training
    model.eval()
    _, states = model(batch["x"], y, batch["xq"], return_trajectory=True)
    model.train(was_training)
    return states


def trajectory_separation(
    model: EquivariantICLTransformer, batch: dict[str, torch.Tensor]
) -> torch.Tensor:
    """Median separation ratio of the context features at depth ``0..L``, shape ``(L+1,)``."""
    states = model_trajectory(model, batch)
    n = batch["x"].shape[1]
    return torch.stack(
        [
            separation_ratio(s[:, :n, : model.d], batch["y_clean"], model.n_classes).median()
            for s in states
        ]
    )


def trajectory_alignment(
    model: EquivariantICLTransformer, batch: dict[str, torch.Tensor]
) -> torch.Tensor:
    """Mean probe alignment margin at depth ``0..L``, shape ``(L+1,)``."""
    states = model_trajectory(model, batch)
    n = batch["x"].shape[1]
    out = []
    for s in states:
        m = class_alignment(
            s[:, :n, : model.d], batch["y_clean"], s[:, n, : model.d], batch["yq"], model.n_classes
        )
        out.append(m.nanmean())
    return torch.stack(out)


def model_defects(model: EquivariantICLTransformer) -> dict[str, float]:
    """Mean and max symmetry defect over all ``W_QK`` / ``W_OV`` matrices of ``model``."""
    defects = model.symmetry_defects()  # (L, H, 2)
    return {
        "qk_mean": float(defects[..., 0].mean()),
        "ov_mean": float(defects[..., 1].mean()),
        "max": float(defects.max()),
    }
