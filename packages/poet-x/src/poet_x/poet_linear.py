"""``POETLinear``: W_eff = R W0 P with block-diagonal Cayley rotations and permutations.

R = Pi_out^T diag(G^out_1..G^out_{m/b}) Pi_out and P = Pi_in^T diag(G^in_1..G^in_{n/b}) Pi_in
(Sec. 3 of POET-X), so W_eff = Pi_out^T B_out W~0 B_in Pi_in with the *permutation reduction*
W~0 = Pi_out W0 Pi_in^T stored once per merge. Paths of :meth:`POETLinear.forward`:

* input-centric (``path="input"``): y = Pi_out^T B_out(W~0 B_in(Pi_in x)), never forming W_eff;
  cost O(N (nb + mn + mb)) per N tokens;
* weight-centric (``path="weight"``): form B_out W~0 B_in by block matmuls, O(mnb), then a
  plain linear; cheaper when N > 2mn/(m+n) ... (``"auto"`` picks by the flop count);
* POET-X_mem (``mode="mem"``): the input-centric path through
  :class:`~poet_x.recompute.InputCentricRecompute` (saves x, the rotation parameters q and the
  base only; recomputes the G's and the activations in backward);
* POET-XQ (``mode="mem"``, ``base_quant="int8"``): the same Function fed the uint8 codes of
  W~0, dequantised inside its forward and its recompute (only the codes are saved);
* POET (``mode="naive"``): the predecessor, dense m x m R and n x n P and R W0 P every step,
  with the Cayley map under plain autograd (the fast and weight paths use the
  memory-efficient :class:`~poet_x.cayley.CayleyMap`, which saves only q).

Bias: by default the bias b0 sits *before* the output rotation, as in the authors' code
(y = R (W0 P x + b0), so the exported bias is R b0, :meth:`POETLinear.effective_bias`);
``cfg.bias_placement="after_rotation"`` gives this package's 0.1 layer, y = R W0 P x + b0.
:meth:`POETLinear.merge_and_reinit` does W0 <- W_eff, b0 <- R b0 (before-rotation placement),
new permutations, Q <- 0.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from .cayley import (
    apply_blocks,
    block_diag_dense,
    n_block_params,
    orthogonality_error,
    rotation_blocks,
)
from .config import POETConfig
from .quantized_base import dequantize_int8, quantize_int8
from .recompute import InputCentricRecompute


class POETLinear(nn.Module):
    """A linear layer trained by orthogonal equivalence transformation (POET-X).

    Parameters
    ----------
    weight:
        Initial weight (m, n) (out x in); copied, row-normalised if ``cfg.normalize_rows``.
    bias:
        Optional bias (m,), kept trainable (as a non-POET parameter); placed before the output
        rotation unless ``cfg.bias_placement == "after_rotation"``.
    cfg:
        :class:`~poet_x.config.POETConfig` (block size, Cayley map, mode, path, quantisation).
    generator:
        Seeded generator for the random permutations.

    Examples
    --------
    >>> torch.manual_seed(0) and None
    >>> layer = POETLinear(torch.randn(8, 12), None, POETConfig(block_size=4))
    >>> x = torch.randn(5, 12)
    >>> bool(torch.allclose(layer(x), x @ layer.effective_weight().t(), atol=1e-6))
    True
    >>> layer.q_out.shape, layer.q_in.shape   # (m/b, b(b-1)/2), (n/b, b(b-1)/2)
    (torch.Size([2, 6]), torch.Size([3, 6]))
    """

    def __init__(
        self,
        weight: torch.Tensor,
        bias: torch.Tensor | None = None,
        cfg: POETConfig | None = None,
        generator: torch.Generator | None = None,
    ) -> None:
        super().__init__()
        cfg = cfg or POETConfig()
        if not weight.is_floating_point():
            raise TypeError(f"POETLinear needs a floating-point weight, got dtype {weight.dtype}")
        if weight.dim() != 2:
            raise ValueError(f"weight must be 2-D (out, in), got shape {tuple(weight.shape)}")
        m, n = weight.shape
        b = int(cfg.block_size)
        for name, dim in (("out_features", m), ("in_features", n)):
            if b > dim:
                raise ValueError(f"block_size {b} is larger than {name}={dim}")
            if dim % b:
                raise ValueError(f"{name}={dim} is not divisible by block_size {b}")
        self.cfg = cfg
        self.in_features, self.out_features, self.block_size = n, m, b
        self.generator = generator
        w = weight.detach().clone()
        if cfg.normalize_rows:
            w = w / w.norm(dim=1, keepdim=True).clamp_min(1e-12)
        dtype = w.dtype
        self.q_out = nn.Parameter(torch.zeros(m // b, n_block_params(b), dtype=dtype))
        self.q_in = nn.Parameter(torch.zeros(n // b, n_block_params(b), dtype=dtype))
        self.bias = None if bias is None else nn.Parameter(bias.detach().clone())
        self.register_buffer("perm_in", torch.arange(n), persistent=True)
        self.register_buffer("perm_out", torch.arange(m), persistent=True)
        self.register_buffer("inv_perm_out", torch.arange(m), persistent=True)
        self.register_buffer("w_tilde", torch.empty(0, dtype=dtype), persistent=True)
        self.register_buffer("w_q", torch.empty(0, dtype=torch.uint8), persistent=True)
        self.register_buffer("w_scale", torch.empty(0), persistent=True)
        self.register_buffer("w_zero", torch.empty(0), persistent=True)
        self.n_merges = 0
        self.export_as = "linear"  # "conv1d" when converted from transformers' Conv1D
        self._set_base(w, self._draw(n), self._draw(m))

    # ------------------------------------------------------------------ state
    def _draw(self, k: int) -> torch.Tensor:
        return torch.randperm(k, generator=self.generator).to(self.q_in.device)

    def _set_base(self, w0: torch.Tensor, perm_in: torch.Tensor, perm_out: torch.Tensor) -> None:
        """Store W~0 = Pi_out W0 Pi_in^T (permutation reduction) and the permutations."""
        self.perm_in = perm_in
        self.perm_out = perm_out
        self.inv_perm_out = torch.argsort(perm_out)
        wt = w0[perm_out][:, perm_in].to(self.q_in.dtype).contiguous()
        if self.cfg.base_quant == "int8":
            self.w_q, self.w_scale, self.w_zero = quantize_int8(wt, self.cfg.quant_group_size)
            self.w_tilde = torch.empty(0, dtype=wt.dtype, device=wt.device)
        else:
            self.w_tilde = wt

    def base_tilde(self) -> torch.Tensor:
        """W~0 (dequantised in POET-XQ)."""
        if self.cfg.base_quant == "int8":
            return dequantize_int8(
                self.w_q, self.w_scale, self.w_zero, self.cfg.quant_group_size, self.q_in.dtype
            )
        return self.w_tilde

    def base_weight(self) -> torch.Tensor:
        """W0 in the original (unpermuted) coordinates."""
        inv_in = torch.argsort(self.perm_in)
        return self.base_tilde()[self.inv_perm_out][:, inv_in]

    def rotations(self) -> tuple[torch.Tensor, torch.Tensor]:
        """The orthogonal blocks ``(G_in (n/b, b, b), G_out (m/b, b, b))``.

        Through :class:`~poet_x.cayley.CayleyMap` (only q saved for backward), except in
        ``mode="naive"``, which keeps the predecessor POET's plain-autograd map.
        """
        c, t, b = self.cfg.cayley, self.cfg.neumann_terms, self.block_size
        ag = self.cfg.mode == "naive"
        return (
            rotation_blocks(self.q_in, b, c, t, autograd=ag),
            rotation_blocks(self.q_out, b, c, t, autograd=ag),
        )

    def dense_rotations(self) -> tuple[torch.Tensor, torch.Tensor]:
        """Dense R (m x m) and P (n x n) = Pi^T diag(G) Pi (the naive POET factors).

        With Pi = I[perm], (Pi^T D Pi)[i, j] = D[perm^-1[i], perm^-1[j]]: a gather, no matmul.
        """
        g_in, g_out = self.rotations()
        inv_in = torch.argsort(self.perm_in)
        r = block_diag_dense(g_out)[self.inv_perm_out][:, self.inv_perm_out]
        p = block_diag_dense(g_in)[inv_in][:, inv_in]
        return r, p

    def effective_weight(self) -> torch.Tensor:
        """W_eff = R W0 P = Pi_out^T B_out W~0 B_in Pi_in (by block matmuls, O(mnb))."""
        g_in, g_out = self.rotations()
        # apply_blocks(X, G) = X B^T, hence W~0 B_in = apply_blocks(W~0, G_in^T) and
        # B_out M = apply_blocks(M^T, G_out)^T
        core = apply_blocks(self.base_tilde(), g_in.transpose(1, 2))
        core = apply_blocks(core.t(), g_out).t()
        inv_in = torch.argsort(self.perm_in)
        return core[self.inv_perm_out][:, inv_in]

    @property
    def bias_before_rotation(self) -> bool:
        """Whether the bias sits before the output rotation (the authors' placement)."""
        return self.cfg.bias_placement == "before_rotation"

    def effective_bias(self) -> torch.Tensor | None:
        """The bias of the equivalent plain linear layer: R b0 (before-rotation placement) or b0."""
        if self.bias is None or not self.bias_before_rotation:
            return self.bias
        _, g_out = self.rotations()
        return self._rotate_out(self.bias, g_out)

    def _rotate_out(self, v: torch.Tensor, g_out: torch.Tensor) -> torch.Tensor:
        """R v = Pi_out^T B_out Pi_out v for a vector v (m,)."""
        vp = v.index_select(0, self.perm_out)[None]
        return apply_blocks(vp, g_out)[0].index_select(0, self.inv_perm_out)

    # ------------------------------------------------------------------ forward
    def choose_path(self, n_tokens: int) -> str:
        """``"input"`` if N (nb + mn + mb) < mnb + N mn flops, else ``"weight"``."""
        if self.cfg.path != "auto":
            return self.cfg.path
        m, n, b = self.out_features, self.in_features, self.block_size
        return "input" if n_tokens * (n + m) * b < m * n * b * 2 else "weight"

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # noqa: D102
        before = self.bias is not None and self.bias_before_rotation
        if self.cfg.mode == "naive":
            r, p = self.dense_rotations()
            bias = r @ self.bias if before else self.bias
            return F.linear(x, r @ self.base_weight() @ p, bias)
        n_tokens = x.numel() // max(x.shape[-1], 1)
        if self.cfg.mode == "mem":
            if self.cfg.base_quant == "int8":
                stored = (self.w_q, self.w_scale, self.w_zero)
            else:
                stored = (self.w_tilde,)
            rot = (self.block_size, self.cfg.cayley, self.cfg.neumann_terms)
            return InputCentricRecompute.apply(
                x, self.q_in, self.q_out, self.bias, self.perm_in, self.perm_out,
                self.inv_perm_out, self.bias_before_rotation, self.cfg.quant_group_size, rot,
                *stored,
            )  # fmt: skip
        if self.choose_path(n_tokens) == "weight":
            return F.linear(x, self.effective_weight(), self.effective_bias())
        g_in, g_out = self.rotations()
        xp = x.index_select(-1, self.perm_in)
        h = apply_blocks(xp, g_in) @ self.base_tilde().t()
        if before:
            h = h + self.bias.index_select(0, self.perm_out)
        y = apply_blocks(h, g_out).index_select(-1, self.inv_perm_out)
        return y if self.bias is None or before else y + self.bias

    # ------------------------------------------------------------------ merge
    @torch.no_grad()
    def merge_and_reinit(self, generator: torch.Generator | None = None) -> None:
        """W0 <- R W0 P (and b0 <- R b0 when the bias sits before R), draw new permutations,
        reset Q to 0 (the function is unchanged).

        Raises ``RuntimeError`` if the rotation parameters hold pending gradients.
        """
        for p in (self.q_in, self.q_out):
            if p.grad is not None and bool(p.grad.abs().sum() > 0):
                raise RuntimeError(
                    "cannot merge POETLinear with pending gradients; call optimizer.step() "
                    "and zero_grad(set_to_none=True) first"
                )
        gen = generator if generator is not None else self.generator
        w = self.effective_weight()
        if self.bias is not None and self.bias_before_rotation:
            self.bias.copy_(self.effective_bias())  # b0 <- R b0: R is reset to I below
        self.q_in.zero_()
        self.q_out.zero_()
        old = self.generator
        self.generator = gen
        try:
            self._set_base(w, self._draw(self.in_features), self._draw(self.out_features))
        finally:
            self.generator = old
        self.n_merges += 1

    # ------------------------------------------------------------------ diagnostics
    @torch.no_grad()
    def orthogonality_error(self) -> float:
        """max over all blocks of ||G^T G - I||_F / sqrt(b)."""
        g_in, g_out = self.rotations()
        return max(orthogonality_error(g_in), orthogonality_error(g_out))

    @torch.no_grad()
    def singular_values(self) -> torch.Tensor:
        """Singular values of W_eff (equal to those of W0 up to the Cayley map's error)."""
        return torch.linalg.svdvals(self.effective_weight())

    def to_linear(self) -> nn.Module:
        """A plain ``nn.Linear`` holding W_eff (and the bias): the export for inference.

        A layer converted from ``transformers``' ``Conv1D`` (``export_as == "conv1d"``) is
        exported as a ``Conv1D`` holding W_eff^T, the layout of the model it came from.
        The exported bias is :meth:`effective_bias`.
        """
        bias = self.effective_bias()
        if self.export_as == "conv1d":
            from transformers.pytorch_utils import Conv1D

            conv = Conv1D(self.out_features, self.in_features)
            conv = conv.to(dtype=self.q_in.dtype, device=self.q_in.device)
            with torch.no_grad():
                conv.weight.copy_(self.effective_weight().t())
                if bias is not None:
                    conv.bias.copy_(bias)
                else:
                    conv.bias.zero_()
            return conv
        lin = nn.Linear(
            self.in_features, self.out_features, bias=self.bias is not None,
            dtype=self.q_in.dtype, device=self.q_in.device,
        )  # fmt: skip
        with torch.no_grad():
            lin.weight.copy_(self.effective_weight())
            if bias is not None:
                lin.bias.copy_(bias)
        return lin

    def extra_repr(self) -> str:  # noqa: D102
        c = self.cfg
        return (
            f"in={self.in_features}, out={self.out_features}, b={self.block_size}, "
            f"mode={c.mode}, cayley={c.cayley}, base={c.base_quant}, bias={c.bias_placement}"
        )
