"""G-OPL's face guidance: weak face-presence supervision and the cosine alignment objective.

Paper: Wang et al., ICML 2026 (G-OPL). Face presence ``f_t in [0, 1]`` per snippet (the
fraction of its frames where a face detector fires; noisy) is the only face signal: no
identity labels, no adversarial training. Reconstruction (the paper's exact forms are not
public; both weights are configurable):

- :func:`face_presence_loss`: ``BCE(sigmoid(v^T Q_face^T x_t + c), f_t)``: the face
  coefficients must predict face presence, so face information is captured in
  ``span(Q_face)`` and therefore removed from the kept features
- :func:`cosine_alignment_loss`: over face-present snippets, ``1 - cos(Q_f Q_f^T x_t, u)``
  with ``u`` an exponential moving average of the mean removed face component: the face
  component is captured consistently
- :func:`face_contrast_loss` (our addition, weight ``contrast_weight``, 0 = the paper's two
  terms only): ``1 - sum_v |Q_f^T d_v|^2 / sum_v |d_v|^2`` with ``d_v`` the difference of the
  mean features of face-present and face-absent snippets *within* video ``v``. A readout
  saturates once one face direction predicts presence, so the face block stops short of the
  identity directions; this term keeps pulling until ``span(Q_face)`` holds all of the
  within-video face contrast. Per-video scene nuisance cancels in ``d_v``; only face presence
  is used, no identity labels
- :func:`face_contrast_spectrum` / :func:`suggest_face_rank`: the cumulative share of the
  within-video face contrast ``d_v`` carried by its top principal directions, from the weak
  signal only: how many face directions (``rank_face``) the features need
- :class:`FaceGuidance`: the readout and the anchor ``u``. Readouts (the ablation of
  ``opl-vad reproduce``, section ``ablation``): ``linear`` (one presence logit
  ``v^T c + b``), ``mlp`` (one presence logit from a small MLP on ``c`` and ``c^2``) and
  ``per_direction`` (:class:`PerDirectionReadout`: every face coefficient ``c_j`` predicts
  presence on its own, ``a_j c_j + b_j c_j^2 + e_j``, BCE averaged over ``j``, so a block
  that holds one face direction and ``k - 1`` others does not saturate the loss). Anchors of
  :func:`cosine_alignment_loss`: ``ema`` (one global ``u``) or ``video``
  (:func:`video_anchors`: the detached mean removed face component of the face-present
  snippets of the same video, i.e. consistency within one person)
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

__all__ = [
    "FaceGuidance",
    "PerDirectionReadout",
    "check_face_signal",
    "cosine_alignment_loss",
    "face_contrast_loss",
    "face_contrast_basis",
    "face_contrast_spectrum",
    "face_presence_loss",
    "suggest_face_rank",
    "video_anchors",
]


def check_face_signal(face: torch.Tensor, shape: tuple[int, ...]) -> None:
    """Face signal must have the snippets' shape ``(B, T)`` and values in ``[0, 1]``."""
    if tuple(face.shape) != tuple(shape):
        raise ValueError(f"face signal has shape {tuple(face.shape)}, expected {tuple(shape)}")
    if not bool(torch.isfinite(face).all()) or bool((face < 0).any() | (face > 1).any()):
        raise ValueError("face signal values must lie in [0, 1]")


def face_presence_loss(logits: torch.Tensor, face: torch.Tensor) -> torch.Tensor:
    """Binary cross-entropy of the face readout against the (soft) face presence."""
    return F.binary_cross_entropy_with_logits(logits, face.to(logits.dtype))


def cosine_alignment_loss(
    face_removed: torch.Tensor, face: torch.Tensor, anchor: torch.Tensor, threshold: float = 0.5
) -> torch.Tensor:
    """``mean(1 - cos(r_f(t), anchor))`` over snippets with ``face > threshold`` (0 if none).

    ``face_removed`` ``(..., D)``, ``face`` ``(...)``, ``anchor`` ``(D,)`` (one anchor) or
    ``(..., D)`` (one per snippet, :func:`video_anchors`; snippets whose anchor is 0 are
    skipped).
    """
    r = face_removed.reshape(-1, face_removed.shape[-1])
    keep = face.reshape(-1) > threshold
    if anchor.dim() > 1:  # one anchor per snippet, (..., D)
        a = anchor.reshape(-1, anchor.shape[-1])
        keep = keep & (a.norm(dim=-1) > 0)
        if not bool(keep.any()):
            return r.sum() * 0.0
        return (1.0 - F.cosine_similarity(r[keep], a[keep], dim=-1)).mean()
    if not bool(keep.any()) or float(anchor.norm()) == 0.0:
        return r.sum() * 0.0
    return (1.0 - F.cosine_similarity(r[keep], anchor[None, :], dim=-1)).mean()


def video_anchors(
    face_removed: torch.Tensor, face: torch.Tensor, threshold: float = 0.5
) -> torch.Tensor:
    """Per-video anchors ``(B, T, D)``: the detached mean of ``face_removed`` ``(B, T, D)`` over
    the face-present snippets of each video (0 for a video without any), repeated over ``T``.

    >>> import torch
    >>> r = torch.tensor([[[1.0, 0.0], [3.0, 0.0], [0.0, 9.0]]])
    >>> video_anchors(r, torch.tensor([[1.0, 1.0, 0.0]]))[0, 0].tolist()
    [2.0, 0.0]
    """
    on = (face > threshold).to(face_removed.dtype)[..., None]  # (B, T, 1)
    mean = (on * face_removed).sum(1) / on.sum(1).clamp(min=1)  # (B, D)
    return mean.detach()[:, None, :].expand_as(face_removed)


def face_contrast_loss(
    face_coeffs: torch.Tensor, x: torch.Tensor, face: torch.Tensor, threshold: float = 0.5
) -> torch.Tensor:
    """Share of the within-video face contrast *not* captured by the face block, in ``[0, 1]``.

    ``face_coeffs`` ``(B, T, k_f)`` are ``Q_f^T x`` of the features ``x`` ``(B, T, D)``;
    ``face`` ``(B, T)``. Videos without both face-present and face-absent snippets are
    skipped (0 if none qualifies). With orthonormal ``Q_f`` the captured share is
    ``sum_v |Q_f^T d_v|^2 / sum_v |d_v|^2`` (module docstring).
    """
    on = (face > threshold).to(x.dtype)  # (B, T)
    n_on, n_off = on.sum(1), (1 - on).sum(1)
    valid = (n_on > 0) & (n_off > 0)
    if not bool(valid.any()):
        return face_coeffs.sum() * 0.0

    def contrast(v: torch.Tensor) -> torch.Tensor:  # (B, T, k) -> (B, k)
        mean_on = (on[..., None] * v).sum(1) / n_on.clamp(min=1)[:, None]
        mean_off = ((1 - on)[..., None] * v).sum(1) / n_off.clamp(min=1)[:, None]
        return (mean_on - mean_off)[valid]

    total = contrast(x).pow(2).sum()
    if float(total) == 0.0:
        return face_coeffs.sum() * 0.0
    return 1.0 - contrast(face_coeffs).pow(2).sum() / total


def _within_video_contrast(features: np.ndarray, face: np.ndarray, threshold: float) -> np.ndarray:
    """``(n, D)``: ``d_v`` of every video with both face-present and face-absent snippets."""
    X = np.asarray(features, dtype=np.float64)
    on = np.asarray(face) > threshold
    if X.ndim != 3 or on.shape != X.shape[:2]:
        raise ValueError(f"need features (V, T, D) and face (V, T); got {X.shape}, {on.shape}")
    rows = [X[v][on[v]].mean(0) - X[v][~on[v]].mean(0) for v in range(len(X))
            if on[v].any() and (~on[v]).any()]  # fmt: skip
    if not rows:
        raise ValueError("no video has both face-present and face-absent snippets")
    return np.stack(rows)


def face_contrast_spectrum(
    features: np.ndarray, face: np.ndarray, threshold: float = 0.5
) -> np.ndarray:
    """Cumulative share of the within-video face contrast in its top-``k`` directions.

    ``features`` ``(V, T, D)``, ``face`` ``(V, T)`` (the weak signal is enough); returns
    ``(min(n, D),)`` non-decreasing values ending at 1: entry ``k - 1`` is
    ``sum_{i<=k} s_i^2 / sum_i s_i^2`` for the singular values ``s`` of the stacked ``d_v``.
    The best ``k``-dimensional face block captures exactly that share
    (:func:`face_contrast_loss` at its optimum is one minus it).

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> face = (rng.random((30, 10)) < 0.5).astype(float)
    >>> X = rng.standard_normal((30, 10, 8)) * 0.01
    >>> X[..., 0] += 3 * face                      # one face direction
    >>> share = face_contrast_spectrum(X, face)
    >>> round(float(share[0]), 3), suggest_face_rank(X, face)
    (1.0, 1)
    """
    d = _within_video_contrast(features, face, threshold)
    s2 = np.linalg.svd(d, compute_uv=False) ** 2
    total = s2.sum()
    return np.cumsum(s2) / total if total > 0 else np.ones_like(s2)


def face_contrast_basis(
    features: np.ndarray, face: np.ndarray, k: int, threshold: float = 0.5
) -> np.ndarray:
    """``(D, k)`` orthonormal top-``k`` directions of the within-video face contrast."""
    d = _within_video_contrast(features, face, threshold)
    return np.linalg.svd(d, full_matrices=False)[2][:k].T


def suggest_face_rank(
    features: np.ndarray, face: np.ndarray, energy: float = 0.9, threshold: float = 0.5
) -> int:
    """Smallest ``k`` whose top-``k`` directions carry ``energy`` of the face contrast."""
    if not 0 < energy <= 1:
        raise ValueError(f"energy must be in (0, 1], got {energy}")
    share = face_contrast_spectrum(features, face, threshold)
    return int(np.searchsorted(share, energy - 1e-12) + 1)


class _WithSquares(nn.Module):
    def forward(self, c: torch.Tensor) -> torch.Tensor:
        return torch.cat([c, c * c], dim=-1)


class PerDirectionReadout(nn.Module):
    """One face-presence logit per face direction: ``a_j c_j + b_j c_j^2 + e_j``.

    Each face coefficient must predict presence by itself (its sign or its energy: identity
    directions change sign from person to person, so ``c_j^2`` carries them), and the BCE
    is averaged over the ``k`` directions: every column of the face block is pulled towards a
    presence-predictive direction, not only the first one.

    Parameters
    ----------
    rank_face:
        Number of face directions ``k``.

    Examples
    --------
    >>> import torch
    >>> PerDirectionReadout(3)(torch.randn(2, 5, 3)).shape   # (..., k) logits
    torch.Size([2, 5, 3])
    """

    def __init__(self, rank_face: int):
        super().__init__()
        self.a = nn.Parameter(torch.zeros(rank_face))
        self.b = nn.Parameter(torch.zeros(rank_face))
        self.e = nn.Parameter(torch.zeros(rank_face))

    def forward(self, c: torch.Tensor) -> torch.Tensor:
        return self.a * c + self.b * c * c + self.e


READOUTS = ("linear", "mlp", "per_direction")
ANCHORS = ("ema", "video")


class FaceGuidance(nn.Module):
    """Readout from the face coefficients and the face anchor of the cosine alignment.

    Parameters
    ----------
    dim, rank_face:
        Feature size and face-subspace dimension.
    momentum:
        EMA momentum of the global anchor ``u`` (updated in training only).
    readout:
        ``linear`` (``v^T c + b``), ``mlp`` (one hidden layer of 32 ReLU units on the
        coefficients and their squares) or ``per_direction`` (:class:`PerDirectionReadout`).
        A single presence logit (``linear``, ``mlp``) needs only one face direction to
        predict presence; ``per_direction`` asks it of every direction.
    anchor:
        ``ema`` (one global anchor, the moving mean removed face component) or ``video``
        (:func:`video_anchors`).

    Examples
    --------
    >>> import torch
    >>> _ = torch.manual_seed(0)
    >>> g = FaceGuidance(8, 2)
    >>> cf, rf, face = torch.randn(3, 5, 2), torch.randn(3, 5, 8), torch.rand(3, 5)
    >>> l_face, l_cos = g(cf, rf, face)   # first call: the anchor is still 0, no L_cos yet
    >>> bool(l_face > 0), abs(float(l_cos)) < 1e-6
    (True, True)
    >>> g = FaceGuidance(8, 2, readout="per_direction", anchor="video")
    >>> l_face, l_cos = g(cf, rf, face)
    >>> round(float(l_face), 4), bool(l_cos > 0)     # zero-initialised readout: log 2
    (0.6931, True)
    """

    def __init__(self, dim: int, rank_face: int, momentum: float = 0.9, readout: str = "mlp",
                 anchor: str = "ema"):  # fmt: skip
        super().__init__()
        if readout == "linear":
            self.readout = nn.Linear(rank_face, 1)
        elif readout == "mlp":
            self.readout = nn.Sequential(
                _WithSquares(), nn.Linear(2 * rank_face, 32), nn.ReLU(), nn.Linear(32, 1)
            )
        elif readout == "per_direction":
            self.readout = PerDirectionReadout(rank_face)
        else:
            raise ValueError(f"unknown face readout {readout!r}; choose one of {READOUTS}")
        if anchor not in ANCHORS:
            raise ValueError(f"unknown cosine anchor {anchor!r}; choose one of {ANCHORS}")
        self.per_direction = readout == "per_direction"
        self.anchor_kind = anchor
        self.momentum = float(momentum)
        self.register_buffer("anchor", torch.zeros(dim))

    def forward(
        self, face_coeffs: torch.Tensor, face_removed: torch.Tensor, face: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``(L_face, L_cos)`` for ``(B, T, k_f)`` coefficients, ``(B, T, D)`` parts, ``(B, T)``."""
        logits = self.readout(face_coeffs)
        if self.per_direction:
            l_face = face_presence_loss(logits, face[..., None].expand_as(logits))
        else:
            l_face = face_presence_loss(logits.squeeze(-1), face)
        if self.anchor_kind == "video":
            return l_face, cosine_alignment_loss(
                face_removed, face, video_anchors(face_removed, face)
            )
        l_cos = cosine_alignment_loss(face_removed, face, self.anchor)
        if self.training:
            with torch.no_grad():
                present = face.reshape(-1) > 0.5
                if bool(present.any()):
                    mean = face_removed.reshape(-1, face_removed.shape[-1])[present].mean(0)
                    m = self.momentum if float(self.anchor.norm()) > 0 else 0.0
                    self.anchor.mul_(m).add_((1 - m) * mean)
        return l_face, l_cos
