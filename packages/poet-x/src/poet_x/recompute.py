"""POET-X_mem and POET-XQ: the input-centric forward as a custom autograd Function that recomputes.

Paper: "POET-X: Memory-efficient LLM Training by Scaling Orthogonal Transformation",
Qiu et al., ICML 2026 (arXiv 2603.05500), Sec. 3 (POET-X_mem, POET-XQ). Forward (row
vectors, W~0 = Pi_out W0 Pi_in^T stored once per merge, bias b0 in the layer's own output
coordinates):

    xp = x[:, perm_in]          (Pi_in x)
    z  = xp diag(G_in)^T        (P's block rotation)
    h  = z W~0^T  (+ b0[perm_out] when the bias sits before the output rotation, as the
                   authors place it: y = R (W0 P x + b0))
    u  = h diag(G_out)^T        (R's block rotation)
    y  = u[:, inv_perm_out]     (+ b0 when the bias sits after the rotation: y = R W0 P x + b0)

The Function takes the rotation *parameters* q_in, q_out (b(b-1)/2 per block) and applies the
Cayley(-Neumann) map q -> G itself (:func:`~poet_x.cayley.cayley_map`). Only ``x``, q_in,
q_out, the permutations and the *stored* base are saved: in POET-X_mem the base is W~0
itself; in POET-XQ it is the uint8 codes with their group scales and zeros
(:mod:`~poet_x.quantized_base`), dequantised inside the forward and again inside the
backward, so no full-precision copy of the base is kept alive between the two passes.
Backward rebuilds the G's from q, recomputes z and h and forms
dL/dG_out,k = sum_tokens g_k^T h_k and dL/dG_in,k = sum_tokens (dz)_k^T xp_k (the four phases
of the authors' memory mode), then maps them to dL/dq with the map's exact analytic backward
(:func:`~poet_x.cayley.cayley_vjp`, :func:`~poet_x.cayley.skew_params_grad`); W0 gets no
gradient. Neither the G's nor the powers of Q are kept between the passes.
"""

from __future__ import annotations

import torch

from .cayley import (
    apply_blocks,
    cayley_exact,
    cayley_neumann,
    cayley_vjp,
    skew_from_params,
    skew_params_grad,
)
from .quantized_base import dequantize_int8


def _block_outer(a: torch.Tensor, c: torch.Tensor, k: int) -> torch.Tensor:
    """sum over rows of a_blk^T c_blk per block: (N, K b) x (N, K b) -> (K, b, b)."""
    b = a.shape[-1] // k
    ab = a.reshape(-1, k, b).transpose(0, 1)  # (K, N, b)
    cb = c.reshape(-1, k, b).transpose(0, 1)
    return torch.bmm(ab.transpose(1, 2), cb)


def _base(stored: tuple, group_size: int, dtype: torch.dtype) -> torch.Tensor:
    """W~0 from what is stored: ``(w_tilde,)`` or ``(w_q, scale, zero)`` (dequantised here)."""
    if len(stored) == 1:
        return stored[0]
    w_q, scale, zero = stored
    return dequantize_int8(w_q, scale, zero, group_size, dtype)


def _rotations(q_in, q_out, rot, warn=True):
    """(G_in, G_out) from the flat parameters; ``rot = (b, cayley, terms)``."""
    b, cayley, terms = rot
    gs = []
    for q in (q_in, q_out):
        skew = skew_from_params(q, b)
        gs.append(cayley_exact(skew) if cayley == "exact" else cayley_neumann(skew, terms, warn))
    return gs[0], gs[1]


class InputCentricRecompute(torch.autograd.Function):
    """y = Pi_out^T B_out (W~0 B_in Pi_in x [+ Pi_out b0]) [+ b0] with B = diag(Cayley(q)),
    saving only x, the rotation parameters q and the stored (possibly uint8) base.

    ``apply(x, q_in, q_out, bias, perm_in, perm_out, inv_perm_out, bias_before_rotation,
    group_size, (b, cayley, terms), *stored)`` with ``stored = (w_tilde,)`` (POET-X_mem) or
    ``(w_q, scale, zero)`` (POET-XQ).
    """

    @staticmethod
    def forward(ctx, x, q_in, q_out, bias, perm_in, perm_out, inv_perm_out, before, gs, rot,
                *stored):  # noqa: D102  # fmt: skip
        g_in, g_out = _rotations(q_in, q_out, rot)
        w_tilde = _base(stored, gs, g_in.dtype)
        xp = x.index_select(-1, perm_in)
        h = apply_blocks(xp, g_in) @ w_tilde.t()
        del w_tilde  # POET-XQ: the dequantised copy dies here; only the codes are saved
        if bias is not None and before:
            h = h + bias.index_select(0, perm_out)
        y = apply_blocks(h, g_out).index_select(-1, inv_perm_out)
        if bias is not None and not before:
            y = y + bias
        del g_in, g_out  # rebuilt from q in backward
        ctx.save_for_backward(x, q_in, q_out, bias, perm_in, perm_out, inv_perm_out, *stored)
        ctx.before, ctx.gs, ctx.rot = before, gs, rot
        return y

    @staticmethod
    def backward(ctx, grad_y):  # noqa: D102
        x, q_in, q_out, bias, perm_in, perm_out, inv_perm_out, *stored = ctx.saved_tensors
        g_in, g_out = _rotations(q_in, q_out, ctx.rot, warn=False)  # phase 0: G from q
        k_in, k_out = g_in.shape[0], g_out.shape[0]
        w_tilde = _base(tuple(stored), ctx.gs, g_in.dtype)  # XQ: dequantised in the recompute
        # phase 1: recompute the input side
        xp = x.index_select(-1, perm_in)
        z = apply_blocks(xp, g_in)
        # phase 2: output rotation gradient (grad wrt u is grad_y un-permuted)
        gu = torch.empty_like(grad_y).index_copy_(-1, inv_perm_out, grad_y)
        h = z @ w_tilde.t()
        del z
        if bias is not None and ctx.before:
            h = h + bias.index_select(0, perm_out)
        grad_g_out = _block_outer(gu, h, k_out)
        del h
        # phase 3: back through W~0 (gh is also the gradient of the bias placed before R)
        gh = apply_blocks(gu, g_out.transpose(1, 2))
        del gu
        grad_bias = None
        if bias is not None and ctx.needs_input_grad[3]:
            if ctx.before:
                g_sum = gh.reshape(-1, gh.shape[-1]).sum(0)
                grad_bias = torch.empty_like(g_sum).index_copy_(0, perm_out, g_sum)
            else:
                grad_bias = grad_y.reshape(-1, grad_y.shape[-1]).sum(0)
        gz = gh @ w_tilde
        del gh, w_tilde
        # phase 4: input rotation gradient and input gradient
        grad_g_in = _block_outer(gz, xp, k_in)
        del xp
        gxp = apply_blocks(gz, g_in.transpose(1, 2))
        grad_x = torch.empty_like(gxp).index_copy_(-1, perm_in, gxp)
        del gxp
        # phase 5: through the Cayley(-Neumann) map to the parameters (analytic, recomputed)
        b, cayley, terms = ctx.rot
        grad_q_in = grad_q_out = None
        if ctx.needs_input_grad[1]:
            grad_q_in = skew_params_grad(
                cayley_vjp(skew_from_params(q_in, b), grad_g_in, cayley, terms)
            )
        if ctx.needs_input_grad[2]:
            grad_q_out = skew_params_grad(
                cayley_vjp(skew_from_params(q_out, b), grad_g_out, cayley, terms)
            )
        return (grad_x, grad_q_in, grad_q_out, grad_bias) + (None,) * (6 + len(stored))
