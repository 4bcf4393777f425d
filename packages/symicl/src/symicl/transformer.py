"""Symmetry-constrained softmax transformer for in-context classification.

Paper: "Symmetry Reveals Layerwise Dynamics: How Transformers Perform In-Context
Classification", Lutz et al., ICML 2026 (arXiv 2604.11613), Sec. 3.

Architecture (a reconstruction: the paper's code is not public, see the README):

* tokens ``z_i = [x_i; e_{y_i}]`` for the ``N`` context points (zero label row when
  unlabeled) and ``z_q = [x_q; 0]`` for the probe, no positional encoding;
* ``L`` residual attention layers, each a sum of heads
  ``z_j <- z_j + sum_h sum_i A^h_ji W^h_OV z_i`` with scores
  ``S^h_ji = z_j^T W^h_QK z_i`` (one bilinear form per head, the product ``W_Q^T W_K``)
  and ``A = softmax_i(S)`` (or ``S / N`` for ``attention="linear"``); every token attends
  to the context tokens only, so the probe never feeds back into the context;
* logits = label block of the probe token after the last layer.

``symmetry`` selects how ``W_QK`` and ``W_OV`` are parameterised:

* ``"tied"``: in the commutant of ``S_d x S_C`` (6 scalars each, :mod:`symicl.symmetry`),
  so every layer is exactly feature- and label-permutation equivariant;
* ``"augment"``: full matrices; during training each layer of each episode is conjugated by
  its own random block permutation ``g`` (``W -> g^T W g``, "injecting random
  block-permutation symmetry at each attention layer"); :meth:`project_` finishes with the
  Reynolds average;
* ``"none"``: full matrices, the unconstrained baseline.
"""

from __future__ import annotations

import torch
from torch import nn

from symicl import symmetry as sym
from symicl.episodes import check_task_sizes

SYMMETRIES = ("tied", "augment", "none")
ATTENTIONS = ("softmax", "linear")


def _check_finite(name: str, t: torch.Tensor) -> None:
    if not torch.isfinite(t).all():
        raise ValueError(f"{name} contains NaN or inf")


def check_inputs(x: torch.Tensor, y: torch.Tensor, xq: torch.Tensor, d: int, n_classes: int):
    """Validate a batch ``x (B, N, d)``, one-hot ``y (B, N, C)``, ``xq (B, d)``."""
    if x.ndim != 3 or xq.ndim != 2 or y.ndim != 3:
        raise ValueError(
            f"expected x (B, N, d), y (B, N, C) one-hot and xq (B, d); got shapes "
            f"{tuple(x.shape)}, {tuple(y.shape)}, {tuple(xq.shape)}"
        )
    if x.shape[-1] != d or xq.shape[-1] != d:
        raise ValueError(
            f"feature dimension {x.shape[-1]} (probe {xq.shape[-1]}) does not match the "
            f"model's d={d}"
        )
    if y.shape[-1] != n_classes:
        raise ValueError(
            f"labels must be one-hot with C={n_classes} columns, got {y.shape[-1]} columns "
            "(use symicl.episodes.one_hot_labels for integer labels)"
        )
    if x.shape[:2] != y.shape[:2] or x.shape[0] != xq.shape[0]:
        raise ValueError(
            f"batch/context sizes disagree: x {tuple(x.shape)}, y {tuple(y.shape)}, "
            f"xq {tuple(xq.shape)}"
        )
    if x.shape[1] < 1:
        raise ValueError("the context must hold at least one point (N >= 1)")
    for name, t in (("x", x), ("y", y), ("xq", xq)):
        _check_finite(name, t)
    binary = ((y == 0) | (y == 1)).all()
    if not binary or (y.sum(-1) > 1).any():
        raise ValueError("labels y must be one-hot rows (or all-zero rows for unlabeled points)")


class EquivariantICLTransformer(nn.Module):
    """Softmax transformer over ``[x; onehot(y)]`` tokens with optional permutation symmetry.

    Parameters
    ----------
    d
        Feature dimension (``>= 1``).
    n_classes
        Number of classes ``C >= 2``.
    n_layers
        Depth ``L`` (the iteration count of the extracted recursion).
    n_heads
        Attention heads per layer.
    symmetry
        ``"tied"`` (commutant-parameterised), ``"augment"`` (full matrices + random block
        permutations in training, Reynolds projection at the end) or ``"none"``.
    attention
        ``"softmax"`` (the paper's model) or ``"linear"`` (``A = S / N``, used to show that
        one hand-set layer is exactly the prototype classifier).
    init_scale
        Standard deviation of the initial coefficients / matrix entries.

    References
    ----------
    Lutz et al., "Symmetry Reveals Layerwise Dynamics: How Transformers Perform
    In-Context Classification", ICML 2026 (arXiv 2604.11613).

    Examples
    --------
    >>> from symicl.episodes import LinearTaskSampler, one_hot_labels
    >>> _ = torch.manual_seed(0)
    >>> model = EquivariantICLTransformer(d=4, n_classes=3, n_layers=2, n_heads=2)
    >>> ep = LinearTaskSampler(4, 3, 8, seed=0).sample(5)
    >>> logits = model(ep["x"], one_hot_labels(ep["y"], 3), ep["xq"])
    >>> tuple(logits.shape)
    (5, 3)
    >>> sum(p.numel() for p in model.parameters())  # 2 layers x 2 heads x (6 + 6) scalars
    48
    """

    def __init__(
        self,
        d: int,
        n_classes: int,
        n_layers: int = 2,
        n_heads: int = 2,
        symmetry: str = "tied",
        attention: str = "softmax",
        init_scale: float = 0.1,
    ) -> None:
        super().__init__()
        check_task_sizes(d, n_classes)
        if symmetry not in SYMMETRIES:
            raise ValueError(f"unknown symmetry mode {symmetry!r}; expected one of {SYMMETRIES}")
        if attention not in ATTENTIONS:
            raise ValueError(f"unknown attention {attention!r}; expected one of {ATTENTIONS}")
        if n_layers < 1 or n_heads < 1:
            raise ValueError(f"n_layers and n_heads must be >= 1, got {n_layers}, {n_heads}")
        self.d, self.n_classes = d, n_classes
        self.n_layers, self.n_heads = n_layers, n_heads
        self.symmetry, self.attention = symmetry, attention
        size = d + n_classes
        if symmetry == "tied":
            n_coef = len(sym.COEFFICIENT_NAMES)
            shape = (n_layers, n_heads, n_coef)
            self.qk_coef = nn.Parameter(init_scale * torch.randn(shape))  # (L, H, 6)
            self.ov_coef = nn.Parameter(init_scale * torch.randn(shape))  # (L, H, 6)
            if d == 1:  # I_1 == 1 1^T: the b coordinate is redundant, keep it at zero
                with torch.no_grad():
                    self.qk_coef[..., 1] = 0.0
                    self.ov_coef[..., 1] = 0.0
                self.qk_coef.register_hook(_zero_b_grad)
                self.ov_coef.register_hook(_zero_b_grad)
        else:
            shape = (n_layers, n_heads, size, size)
            self.qk = nn.Parameter(init_scale * torch.randn(shape))  # (L, H, D, D)
            self.ov = nn.Parameter(init_scale * torch.randn(shape))  # (L, H, D, D)
        # set by project_(); kept in the state dict so a checkpoint remembers it
        self.register_buffer("projected", torch.tensor(symmetry == "tied"))

    # ------------------------------------------------------------------ weights
    def weight_matrices(self) -> tuple[torch.Tensor, torch.Tensor]:
        """``(W_QK, W_OV)``, each ``(L, H, d+C, d+C)``, as used at evaluation time."""
        if self.symmetry == "tied":
            return (
                sym.from_coefficients(self.qk_coef, self.d, self.n_classes),
                sym.from_coefficients(self.ov_coef, self.d, self.n_classes),
            )
        return self.qk, self.ov

    @torch.no_grad()
    def project_(self) -> EquivariantICLTransformer:
        """Replace every ``W_QK``/``W_OV`` by its Reynolds projection (in place)."""
        if self.symmetry != "tied":
            self.qk.copy_(sym.project(self.qk, self.d, self.n_classes))
            self.ov.copy_(sym.project(self.ov, self.d, self.n_classes))
        self.projected.fill_(True)
        return self

    def symmetry_defects(self) -> torch.Tensor:
        """Defect ``||W - P(W)|| / ||W||`` of every matrix, shape ``(L, H, 2)`` (QK, OV)."""
        qk, ov = self.weight_matrices()
        out = torch.zeros(self.n_layers, self.n_heads, 2)
        for layer in range(self.n_layers):
            for head in range(self.n_heads):
                out[layer, head, 0] = sym.defect(qk[layer, head].detach(), self.d, self.n_classes)
                out[layer, head, 1] = sym.defect(ov[layer, head].detach(), self.d, self.n_classes)
        return out

    # ------------------------------------------------------------------ forward
    def tokens(self, x: torch.Tensor, y: torch.Tensor, xq: torch.Tensor) -> torch.Tensor:
        """Token matrix ``(B, N+1, d+C)``: context ``[x_i; y_i]`` then the probe ``[x_q; 0]``."""
        probe = torch.cat([xq, torch.zeros_like(xq[:, :1]).expand(-1, self.n_classes)], dim=-1)
        return torch.cat([torch.cat([x, y.to(x.dtype)], dim=-1), probe[:, None]], dim=1)

    def forward(
        self,
        x: torch.Tensor,
        y: torch.Tensor,
        xq: torch.Tensor,
        return_trajectory: bool = False,
    ) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
        """Probe logits ``(B, C)`` for context ``x (B, N, d)``, one-hot ``y (B, N, C)``, ``xq (B, d)``.

        With ``return_trajectory=True`` also returns the token states of every depth,
        ``(L+1, B, N+1, d+C)`` (index 0 = input tokens).
        """
        check_inputs(x, y, xq, self.d, self.n_classes)
        z = self.tokens(x, y, xq)  # (B, N+1, D)
        n_ctx = x.shape[1]
        qk, ov = self.weight_matrices()  # (L, H, D, D)
        perms = None
        if self.symmetry == "augment" and self.training:
            size = self.d + self.n_classes
            perms = sym.random_block_permutation(
                self.d, self.n_classes, self.n_layers * x.shape[0]
            ).view(self.n_layers, x.shape[0], size)
        states = [z]
        for layer in range(self.n_layers):
            w_qk, w_ov = qk[layer], ov[layer]  # (H, D, D)
            if perms is not None:  # conjugate by this episode's block permutation g
                p = perms[layer]  # (B, D)
                w_qk = w_qk[:, p[:, :, None], p[:, None, :]].transpose(0, 1)  # (B, H, D, D)
                w_ov = w_ov[:, p[:, :, None], p[:, None, :]].transpose(0, 1)
            else:
                w_qk, w_ov = w_qk[None], w_ov[None]  # (1, H, D, D)
            ctx = z[:, :n_ctx]  # (B, N, D) keys / values
            queries = z[:, None] @ w_qk  # (B, H, N+1, D): z_j^T W_QK
            scores = queries @ ctx[:, None].mT  # (B, H, N+1, N): S_ji = z_j^T W_QK z_i
            linear = self.attention == "linear"
            attn = scores / n_ctx if linear else torch.softmax(scores, dim=-1)  # (B, H, N+1, N)
            values = ctx[:, None] @ w_ov.mT  # (B, H, N, D): W_OV z_i
            z = z + (attn @ values).sum(1)  # (B, N+1, D)
            states.append(z)
        logits = z[:, -1, self.d :]  # (B, C) label block of the probe
        if return_trajectory:
            return logits, torch.stack(states)
        return logits


def _zero_b_grad(grad: torch.Tensor) -> torch.Tensor:
    grad = grad.clone()
    grad[..., 1] = 0.0
    return grad


def prototype_model(d: int, n_classes: int) -> EquivariantICLTransformer:
    """A hand-set one-layer linear-attention model equal to the prototype classifier.

    ``W_QK`` has ``a = 1`` (scores ``<x_q, x_i>``, probe label row is zero) and ``W_OV`` has
    ``f = 1`` (values copy the labels), so the probe's label block becomes
    ``(1/N) sum_i <x_i, x_q> y_i``, i.e. :func:`symicl.baselines.prototype_scores`.
    """
    model = EquivariantICLTransformer(d, n_classes, 1, 1, symmetry="tied", attention="linear")
    with torch.no_grad():
        model.qk_coef.zero_()
        model.ov_coef.zero_()
        model.qk_coef[0, 0, 0] = 1.0  # a: feature Gram <x_j, x_i>
        model.ov_coef[0, 0, 4] = 1.0  # f: copy the label block
    return model


__all__ = ["EquivariantICLTransformer", "prototype_model", "check_inputs"]
