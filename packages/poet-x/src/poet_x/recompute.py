"""POET-X_mem: the input-centric forward as a custom autograd Function that recomputes.

Forward (row vectors, W~0 = Pi_out W0 Pi_in^T stored once per merge):

    xp = x[:, perm_in]          (Pi_in x)
    z  = xp diag(G_in)^T        (P's block rotation)
    h  = z W~0^T
    u  = h diag(G_out)^T        (R's block rotation)
    y  = u[:, inv_perm_out] + bias

Only ``x``, the small G's and the permutations are saved. Backward recomputes z and h and
forms dL/dG_out,k = sum_tokens g_k^T h_k, dL/dG_in,k = sum_tokens (dz)_k^T xp_k; W0 gets no
gradient. The Q -> G Cayley map stays outside, under ordinary autograd.
"""

from __future__ import annotations

import torch

from .cayley import apply_blocks


def _block_outer(a: torch.Tensor, c: torch.Tensor, k: int) -> torch.Tensor:
    """sum over rows of a_blk^T c_blk per block: (N, K b) x (N, K b) -> (K, b, b)."""
    b = a.shape[-1] // k
    ab = a.reshape(-1, k, b).transpose(0, 1)  # (K, N, b)
    cb = c.reshape(-1, k, b).transpose(0, 1)
    return torch.bmm(ab.transpose(1, 2), cb)


class InputCentricRecompute(torch.autograd.Function):
    """y = Pi_out^T B_out W~0 B_in Pi_in x + bias, saving only x and the rotations."""

    @staticmethod
    def forward(ctx, x, g_in, g_out, w_tilde, perm_in, inv_perm_out, bias):  # noqa: D102
        xp = x.index_select(-1, perm_in)
        h = apply_blocks(xp, g_in) @ w_tilde.t()
        y = apply_blocks(h, g_out).index_select(-1, inv_perm_out)
        if bias is not None:
            y = y + bias
        ctx.save_for_backward(x, g_in, g_out, w_tilde, perm_in, inv_perm_out)
        ctx.has_bias = bias is not None
        return y

    @staticmethod
    def backward(ctx, grad_y):  # noqa: D102
        x, g_in, g_out, w_tilde, perm_in, inv_perm_out = ctx.saved_tensors
        k_in, k_out = g_in.shape[0], g_out.shape[0]
        # phase 1: recompute the input side
        xp = x.index_select(-1, perm_in)
        z = apply_blocks(xp, g_in)
        # phase 2: output rotation gradient (grad wrt u is grad_y un-permuted)
        gu = torch.empty_like(grad_y).index_copy_(-1, inv_perm_out, grad_y)
        h = z @ w_tilde.t()
        grad_g_out = _block_outer(gu, h, k_out)
        del h
        # phase 3: back through W~0
        gh = apply_blocks(gu, g_out.transpose(1, 2))
        del gu
        gz = gh @ w_tilde
        del gh
        # phase 4: input rotation gradient and input gradient
        grad_g_in = _block_outer(gz, xp, k_in)
        del xp
        gxp = apply_blocks(gz, g_in.transpose(1, 2))
        grad_x = torch.empty_like(gxp).index_copy_(-1, perm_in, gxp)
        grad_bias = None
        if ctx.has_bias and ctx.needs_input_grad[6]:
            grad_bias = grad_y.reshape(-1, grad_y.shape[-1]).sum(0)
        return grad_x, grad_g_in, grad_g_out, None, None, None, grad_bias
