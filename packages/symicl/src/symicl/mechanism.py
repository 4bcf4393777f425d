"""The mechanism behind the extracted recursion: class-wise update terms and inert coefficients.

Paper: "Symmetry Reveals Layerwise Dynamics: How Transformers Perform In-Context
Classification", Lutz et al., ICML 2026 (arXiv 2604.11613), Sec. 4. The paper writes the
test-probe update of each layer as an attention-weighted sum over context points split into
the points of the probe's *true class* ``S_{c*}`` and the rest; this module measures that
split on trained models, for the probe and for the training (context) points.

Map of this module (the recursion's notation, :mod:`symicl.recursion`):

* value of context point ``i`` in one head, split as
  ``v_i = p_i + r_i`` with the class-carrying part ``p_i = [a' x_i; f' y_i]`` and the
  class-blind part ``r_i = [(b' s(x_i) + c' t(y_i)) 1_d; (e' s(x_i) + h' t(y_i)) 1_C]``;
  the update of token ``j`` (true class ``c*``) is then exactly
  ``sum_i A_ji v_i = T_j + O_j + R_j`` with the true-class term
  ``T_j = sum_{i in S_{c*}} A_ji p_i``, the other-class terms
  ``O_j = sum_{c != c*} sum_{i in S_c} A_ji p_i`` and the residual
  ``R_j = sum_i A_ji r_i`` (+ the ``p_i`` of unlabeled points)   -> :func:`decompose_updates`
* per-layer summary (attention mass on the true class against its
  share of the context, norm shares of the three terms, the probe's
  margin gain)                                                    -> :func:`decomposition_summary`
* coefficients the cross-entropy of the probe never reaches (zero
  gradient at the trained weights *and* at random weights, in
  float64): they are not learned, whatever value they hold        -> :func:`inert_parameters`
* the recursion with those coefficients set to zero (it gives the
  same class probabilities: inert coefficients shift all logits of
  an episode by one constant at most)                              -> :func:`prune_recursion`
* the symmetry defect over trained entries only                   -> :func:`trained_defects`

What the decomposition does *not* show: the recursion is an algebraic rewrite of the forward
pass (it reproduces any symmetric model, trained or not, to float precision), so the
existence of the split is not a finding; what is measured here is how a *trained* model
weights the three terms.
"""

from __future__ import annotations

import copy

import numpy as np
import torch
from torch.nn import functional as F

from symicl import symmetry as sym
from symicl.episodes import one_hot_labels
from symicl.recursion import Recursion
from symicl.transformer import EquivariantICLTransformer

#: gradient magnitude (relative to the largest one) below which a coefficient counts as inert
INERT_RTOL = 1e-9


def decompose_updates(rec: Recursion, x, y, xq, yq) -> list[dict[str, np.ndarray]]:
    """Split every layer's update of every token into true-class, other-class and residual terms.

    Parameters
    ----------
    rec
        The recursion of a symmetric model (:func:`symicl.recursion.extract_recursion`).
    x, y, xq, yq
        Context ``(B, N, d)``, integer context labels ``(B, N)`` (``-1`` = unlabeled), probe
        ``(B, d)`` and the probe's true class ``(B,)``. Token ``j``'s true class is its own
        label for context points and ``yq`` for the probe.

    Returns
    -------
    list of dict, one per layer, of float64 arrays over tokens ``(B, N+1, d+C)`` (token
    ``N`` is the probe): ``true``, ``other``, ``residual`` (they sum to ``update``),
    ``update`` (the layer's change of the token), and ``attn_true`` ``(B, N+1)``, the
    attention mass on the token's true class averaged over heads.

    Examples
    --------
    >>> from symicl.episodes import LinearTaskSampler
    >>> from symicl.recursion import extract_recursion
    >>> _ = torch.manual_seed(0)
    >>> model = EquivariantICLTransformer(4, 3, n_layers=2, n_heads=2, init_scale=0.5)
    >>> ep = LinearTaskSampler(4, 3, 8, seed=0).sample(5)
    >>> parts = decompose_updates(extract_recursion(model), ep["x"], ep["y"], ep["xq"], ep["yq"])
    >>> p = parts[0]
    >>> bool(np.allclose(p["true"] + p["other"] + p["residual"], p["update"]))
    True
    """
    x, xq = (torch.as_tensor(v).detach().double().numpy() for v in (x, xq))
    labels_int = torch.as_tensor(y).long()
    yq = torch.as_tensor(yq).long().numpy()
    y1 = one_hot_labels(labels_int, rec.n_classes).double().numpy()  # (B, N, C)
    labels_int = labels_int.numpy()
    n, d = x.shape[1], rec.d
    feats = np.concatenate([x, xq[:, None]], axis=1)  # (B, N+1, d)
    labels = np.concatenate([y1, np.zeros_like(y1[:, :1])], axis=1)  # (B, N+1, C)
    own = np.concatenate([labels_int, yq[:, None]], axis=1)  # (B, N+1) true class of token j
    same = (own[:, :, None] == labels_int[:, None, :]) & (labels_int[:, None, :] >= 0)
    other = (own[:, :, None] != labels_int[:, None, :]) & (labels_int[:, None, :] >= 0)
    unlab = ~(same | other)  # (B, N+1, N): unlabeled context point i
    out = []
    for layer_qk, layer_ov in zip(rec.qk, rec.ov, strict=True):
        s, t = feats.sum(-1), labels.sum(-1)
        xk, yk, sk, tk = feats[:, :n], labels[:, :n], s[:, :n], t[:, :n]
        terms = {k: np.zeros(feats.shape[:2] + (d + rec.n_classes,)) for k in ("true", "other")}
        terms["residual"] = np.zeros_like(terms["true"])
        attn_true = np.zeros(feats.shape[:2])
        for (a, b, c, e, f, h), (a2, b2, c2, e2, f2, h2) in zip(layer_qk, layer_ov, strict=True):
            attn = rec.attention_weights((a, b, c, e, f, h), feats, labels, n)
            carry = np.concatenate([a2 * xk, f2 * yk], axis=-1)  # p_i (B, N, D)
            blind = np.concatenate(
                [
                    np.repeat((b2 * sk + c2 * tk)[:, :, None], d, axis=-1),
                    np.repeat((e2 * sk + h2 * tk)[:, :, None], rec.n_classes, axis=-1),
                ],
                axis=-1,
            )  # r_i (B, N, D)
            terms["true"] += (attn * same) @ carry
            terms["other"] += (attn * other) @ carry
            terms["residual"] += attn @ blind + (attn * unlab) @ carry
            attn_true += (attn * same).sum(-1) / len(layer_qk)
        update = terms["true"] + terms["other"] + terms["residual"]
        out.append({**terms, "update": update, "attn_true": attn_true})
        feats, labels = feats + update[..., :d], labels + update[..., d:]
    return out


def decomposition_summary(rec: Recursion, x, y, xq, yq, y_clean=None) -> list[dict[str, float]]:
    """Per-layer means of :func:`decompose_updates` for the probe and for the context points.

    For each layer ``l`` and token kind (``"probe"``, ``"context"``): ``attn_true`` (attention
    mass on the token's true class, mean over heads and episodes), ``chance`` (the true
    class's share of the labelled context, what uniform attention would give), the shares
    ``true_share``, ``other_share``, ``residual_share`` of the three terms' norms
    (``|T| / (|T| + |O| + |R|)`` etc., mean over tokens) and, for the probe, ``margin_gain``:
    the layer's mean change of the probe's logit margin ``y_q[c*] - max_{c != c*} y_q[c]``.
    ``y_clean`` (if given) defines the context points' true classes; ``y`` what the model sees.
    """
    parts = decompose_updates(rec, x, y, xq, yq)
    y_int = torch.as_tensor(y).long().numpy()
    yq_np = torch.as_tensor(yq).long().numpy()
    n, d = y_int.shape[1], rec.d
    labelled = y_int >= 0
    counts = np.stack([(y_int == c).sum(1) for c in range(rec.n_classes)], axis=1)  # (B, C)
    n_lab = labelled.sum(1).clip(min=1)
    chance_probe = counts[np.arange(len(yq_np)), yq_np] / n_lab
    own_ctx = np.where(labelled, y_int, 0)
    chance_ctx = np.take_along_axis(counts, own_ctx, axis=1) / n_lab[:, None]
    rows = []
    margin_before = np.zeros(len(yq_np))
    for layer, p in enumerate(parts):
        norms = {k: np.linalg.norm(p[k], axis=-1) for k in ("true", "other", "residual")}
        total = sum(norms.values())
        total = np.where(total > 0, total, 1.0)
        shares = {k: v / total for k, v in norms.items()}
        labels_after = sum(q["update"][:, n, d:] for q in parts[: layer + 1])  # probe labels
        truth = labels_after[np.arange(len(yq_np)), yq_np]
        rest = labels_after.copy()
        rest[np.arange(len(yq_np)), yq_np] = -np.inf
        margin = truth - rest.max(-1)
        rows.append(
            {
                "layer": layer,
                "token": "probe",
                "attn_true": float(p["attn_true"][:, n].mean()),
                "chance": float(chance_probe.mean()),
                **{f"{k}_share": float(v[:, n].mean()) for k, v in shares.items()},
                "margin_gain": float((margin - margin_before).mean()),
            }
        )
        margin_before = margin
        ctx = labelled  # context points with a label
        rows.append(
            {
                "layer": layer,
                "token": "context",
                "attn_true": float(p["attn_true"][:, :n][ctx].mean()),
                "chance": float(chance_ctx[ctx].mean()),
                **{f"{k}_share": float(v[:, :n][ctx].mean()) for k, v in shares.items()},
                "margin_gain": None,
            }
        )
    return rows


def _parameters(model: EquivariantICLTransformer) -> dict[str, torch.nn.Parameter]:
    if model.symmetry == "tied":
        return {"qk": model.qk_coef, "ov": model.ov_coef}
    return {"qk": model.qk, "ov": model.ov}


def _max_abs_grad(model: EquivariantICLTransformer, batch: dict[str, torch.Tensor]):
    model.zero_grad()
    y = one_hot_labels(batch["y"], model.n_classes).double()
    logits = model(batch["x"].double(), y, batch["xq"].double())
    F.cross_entropy(logits, batch["yq"]).backward()
    return {k: p.grad.detach().abs().clone() for k, p in _parameters(model).items()}


def inert_parameters(
    model: EquivariantICLTransformer,
    batch: dict[str, torch.Tensor],
    n_random: int = 3,
    rtol: float = INERT_RTOL,
    seed: int = 0,
) -> dict[str, torch.Tensor]:
    """Boolean masks of the coefficients (``tied``) or matrix entries that get no gradient.

    The probe's cross-entropy on ``batch`` is differentiated in float64 at the model's weights
    and at ``n_random`` random weight draws; an entry is *inert* when its largest absolute
    gradient over all of these stays below ``rtol`` times the largest gradient of any entry.
    Such an entry cannot be learned by any gradient-based training on this task
    distribution (it keeps its initial value, up to float32 rounding amplified by Adam), so
    its value must not be reported as learned. Returns ``{"qk": mask, "ov": mask}`` with the
    shapes of the model's parameters ``(L, H, 6)`` or ``(L, H, D, D)``.

    Examples
    --------
    >>> from symicl.episodes import LinearTaskSampler
    >>> _ = torch.manual_seed(0)
    >>> model = EquivariantICLTransformer(4, 2, n_layers=1, n_heads=1, init_scale=0.3)
    >>> masks = inert_parameters(model, LinearTaskSampler(4, 2, 8, seed=0).sample(64))
    >>> masks["ov"][0, 0].tolist()   # one layer: the feature updates a', b', c' never matter
    [True, True, True, True, False, True]
    """
    probe = copy.deepcopy(model).double().eval()
    gen = torch.Generator().manual_seed(seed)
    worst = _max_abs_grad(probe, batch)
    for _ in range(n_random):
        with torch.no_grad():
            for p in _parameters(probe).values():
                p.copy_(0.5 * torch.randn(p.shape, generator=gen, dtype=p.dtype))
                if probe.symmetry == "tied" and probe.d == 1:
                    p[..., 1] = 0.0
        grads = _max_abs_grad(probe, batch)
        worst = {k: torch.maximum(worst[k], grads[k]) for k in worst}
    scale = max(float(g.max()) for g in worst.values())
    if scale == 0.0:
        return {k: torch.ones_like(g, dtype=torch.bool) for k, g in worst.items()}
    return {k: g <= rtol * scale for k, g in worst.items()}


def prune_recursion(rec: Recursion, masks: dict[str, torch.Tensor]) -> Recursion:
    """The recursion with every inert coefficient set to zero and marked in ``rec.inert``.

    ``masks`` are the ``(L, H, 6)`` masks of :func:`inert_parameters` for a ``tied`` model (or
    of the projected coefficients). The pruned recursion gives the same class probabilities
    as ``rec``; its logits may differ by one constant per episode.
    """
    qk, ov = np.asarray(rec.qk, dtype=float), np.asarray(rec.ov, dtype=float)
    m_qk, m_ov = (np.asarray(masks[k], dtype=bool) for k in ("qk", "ov"))
    if m_qk.shape != qk.shape or m_ov.shape != ov.shape:
        raise ValueError(
            f"masks {m_qk.shape}, {m_ov.shape} do not match the recursion's {qk.shape}"
        )
    out = Recursion(
        rec.d,
        rec.n_classes,
        rec.attention,
        np.where(m_qk, 0.0, qk).tolist(),
        np.where(m_ov, 0.0, ov).tolist(),
    )
    out.inert = {"qk": m_qk.tolist(), "ov": m_ov.tolist()}
    return out


def coefficient_masks(model: EquivariantICLTransformer, masks: dict[str, torch.Tensor]):
    """Masks over the six commutant coefficients from masks over full matrix entries.

    A coefficient of a full-matrix model counts as inert when every matrix entry it is the
    average of (its block of the Reynolds projection) is inert.
    """
    if model.symmetry == "tied":
        return masks
    out = {}
    for key, mask in masks.items():
        # coefficient k is inert iff the basis element B_k touches only inert entries
        basis = sym.commutant_basis(model.d, model.n_classes) != 0  # (k, D, D)
        names = (
            sym.COEFFICIENT_NAMES
            if model.d >= 2
            else tuple(n for n in sym.COEFFICIENT_NAMES if n != "b")
        )
        full = torch.ones(*mask.shape[:2], len(sym.COEFFICIENT_NAMES), dtype=torch.bool)
        for k, name in enumerate(names):
            touched = mask[..., basis[k]]  # (L, H, #entries)
            full[..., sym.COEFFICIENT_NAMES.index(name)] = touched.all(-1)
        out[key] = full
    return out


def trained_defects(
    model: EquivariantICLTransformer, masks: dict[str, torch.Tensor]
) -> dict[str, float]:
    """Mean symmetry defect of ``W_QK`` / ``W_OV`` with their inert entries set to zero.

    Inert entries keep their random initial values, which are not symmetric; counting them
    would measure the initialisation, not what training did. Also returns the fraction of
    inert entries of each matrix (``qk_inert``, ``ov_inert``; coefficients for ``tied``).
    """
    qk, ov = model.weight_matrices()
    out = {}
    for key, w in (("qk", qk.detach()), ("ov", ov.detach())):
        mask = masks[key]
        if model.symmetry != "tied":
            w = torch.where(mask, torch.zeros_like(w), w)
        defects = [
            sym.defect(w[layer, head], model.d, model.n_classes)
            for layer in range(w.shape[0])
            for head in range(w.shape[1])
            if float(w[layer, head].norm()) > 0
        ]
        out[f"{key}_mean"] = float(np.mean(defects)) if defects else 0.0
        out[f"{key}_inert"] = float(mask.float().mean())
    return out
