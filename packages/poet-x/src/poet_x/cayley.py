"""Block-diagonal Cayley rotations (POET-BS primitives, Sec. 3.1 of POET / POET-X).

1. ``skew_from_params``: Q = U - U^T from the b(b-1)/2 strictly-upper entries per block.
2. ``cayley_exact``: G = (I + Q)(I - Q)^{-1} (exactly orthogonal; a linear solve).
3. ``cayley_neumann``: G ~ I + 2 (Q + Q^2 + ... + Q^k), the truncated Neumann series of
   (I - Q)^{-1} multiplied by (I + Q) with the Q^{k+1} term dropped, as in the authors'
   kernel; its orthogonality error is O(||Q||^{k+1}) and the series diverges for ||Q||_2 >= 1.
4. ``apply_blocks``: y_blk = x_blk G_k^T for every block k (a ``torch.bmm`` over blocks), i.e.
   x -> diag(G_1..G_K) x for row-vector inputs.
5. ``block_diag_dense``: the dense (K b) x (K b) matrix, for the naive POET path and tests.
6. ``cayley_vjp`` / ``CayleyMap``: the map's exact analytic backward and the memory-efficient
   map Q-parameters -> G that saves only the b(b-1)/2 parameters per block and recomputes Q
   and its powers in backward (plain autograd through ``cayley_neumann`` keeps Q, Q^2, ...,
   Q^{k-1} and their products per block instead). With D = dL/dG:

   * Cayley-Neumann, G = I + 2 sum_{j=1}^k Q^j:
     dL/dQ = 2 sum_{j=1}^k sum_{i=0}^{j-1} (Q^T)^i D (Q^T)^{j-1-i}, summed by anti-diagonals
     T_0 = D, T_p = Q^T T_{p-1} + D (Q^T)^p, dL/dQ = 2 sum_{p<k} T_p;
   * exact Cayley, G = (I+Q)(I-Q)^{-1} = 2 (I-Q)^{-1} - I:
     dL/dQ = 2 M^T D M^T with M^T = (I-Q)^{-T} = (I+Q)^{-1};
   * Q = U - U^T with U's strict upper triangle the parameters: dL/dq = (dL/dQ - dL/dQ^T)_{i<j}.

Paper: "POET-X: Memory-efficient LLM Training by Scaling Orthogonal Transformation", Qiu et
al., ICML 2026 (arXiv 2603.05500), Sec. 3 (the Cayley-Neumann parametrisation, whose fused
kernel keeps no powers of Q for backward).
"""

from __future__ import annotations

import warnings

import torch
from torch.autograd.function import once_differentiable


def n_block_params(b: int) -> int:
    """Free parameters of one b x b skew-symmetric block: b(b-1)/2."""
    return b * (b - 1) // 2


def skew_from_params(q: torch.Tensor, b: int) -> torch.Tensor:
    """(K, b(b-1)/2) upper-triangular entries -> (K, b, b) skew-symmetric Q.

    >>> q = torch.tensor([[1.0]])
    >>> skew_from_params(q, 2)
    tensor([[[ 0.,  1.],
             [-1.,  0.]]])
    """
    k = q.shape[0]
    iu = torch.triu_indices(b, b, offset=1, device=q.device)
    u = q.new_zeros(k, b, b)
    u = u.index_put((torch.arange(k, device=q.device)[:, None], iu[0][None], iu[1][None]), q)
    return u - u.transpose(1, 2)


def cayley_exact(q_skew: torch.Tensor) -> torch.Tensor:
    """Exact Cayley transform G = (I + Q)(I - Q)^{-1} of a batch (K, b, b) of skew matrices."""
    eye = torch.eye(q_skew.shape[-1], dtype=q_skew.dtype, device=q_skew.device)
    # G (I - Q) = I + Q  <=>  (I - Q)^T G^T = (I + Q)^T ; (I-Q)^T = I + Q, (I+Q)^T = I - Q
    gt = torch.linalg.solve(eye + q_skew, eye - q_skew)
    return gt.transpose(-1, -2)


def cayley_neumann(q_skew: torch.Tensor, terms: int = 4, warn: bool = True) -> torch.Tensor:
    """Cayley-Neumann G = I + 2 sum_{j=1}^{terms} Q^j (warns when ||Q||_2 >= 1: divergence)."""
    if terms < 1:
        raise ValueError(f"neumann_terms must be >= 1, got {terms}")
    if warn and q_skew.numel():
        with torch.no_grad():
            q = q_skew.detach()
            # ||Q||_2 <= sqrt(||Q||_1 ||Q||_inf) = max abs row sum for skew Q: a cheap bound;
            # the exact norm (an SVD per block) only when the bound reaches 1
            norm = q.abs().sum(-1).max().item()
            if norm >= 1.0:
                norm = torch.linalg.matrix_norm(q.float(), ord=2).max().item()
        if norm >= 1.0:
            warnings.warn(
                f"Cayley-Neumann series diverges: max ||Q||_2 = {norm:.3g} >= 1; "
                "use cayley='exact', a smaller learning rate or merge more often",
                RuntimeWarning,
                stacklevel=2,
            )
    eye = torch.eye(q_skew.shape[-1], dtype=q_skew.dtype, device=q_skew.device)
    power = q_skew
    acc = q_skew
    for _ in range(terms - 1):
        power = power @ q_skew
        acc = acc + power
    return eye + 2.0 * acc


def cayley_map(skew: torch.Tensor, cayley: str = "neumann", terms: int = 4) -> torch.Tensor:
    """G from a batch (K, b, b) of skew matrices: ``cayley_exact`` or ``cayley_neumann``."""
    if cayley == "exact":
        return cayley_exact(skew)
    return cayley_neumann(skew, terms)


def skew_params_grad(grad_skew: torch.Tensor) -> torch.Tensor:
    """dL/dQ (K, b, b) -> dL/dq (K, b(b-1)/2) for Q = U - U^T (the adjoint of ``skew_from_params``).

    >>> skew_params_grad(torch.tensor([[[0.0, 3.0], [1.0, 0.0]]]))
    tensor([[2.]])
    """
    b = grad_skew.shape[-1]
    iu = torch.triu_indices(b, b, offset=1, device=grad_skew.device)
    return (grad_skew - grad_skew.transpose(1, 2))[:, iu[0], iu[1]]


def cayley_vjp(skew: torch.Tensor, grad_g: torch.Tensor, cayley: str = "neumann",
               terms: int = 4) -> torch.Tensor:  # fmt: skip
    """dL/dQ given Q (K, b, b) and D = dL/dG: the exact analytic backward of :func:`cayley_map`.

    Neumann: 2 sum_{p=0}^{k-1} T_p, T_0 = D, T_p = Q^T T_{p-1} + D (Q^T)^p (3 matmuls per term,
    transient); exact: 2 (I+Q)^{-1} D (I+Q)^{-1} (two solves).

    >>> q = torch.zeros(1, 3, 3)
    >>> d = torch.randn(1, 3, 3)
    >>> bool(torch.equal(cayley_vjp(q, d, "neumann", 4), 2 * d))   # at Q = 0: dG = 2 dQ
    True
    """
    if cayley == "exact":
        eye = torch.eye(skew.shape[-1], dtype=skew.dtype, device=skew.device)
        mt = torch.linalg.solve(eye + skew, eye.expand_as(skew))  # M^T = (I + Q)^{-1}
        return 2.0 * (mt @ grad_g @ mt)
    a = skew.transpose(1, 2)
    total = grad_g
    t = grad_g
    a_pow = None
    for _ in range(terms - 1):
        a_pow = a if a_pow is None else a_pow @ a
        t = a @ t + grad_g @ a_pow
        total = total + t
    return 2.0 * total


class CayleyMap(torch.autograd.Function):
    """Memory-efficient q (K, b(b-1)/2) -> G (K, b, b) that saves only q for backward.

    ``CayleyMap.apply(q, b, cayley, terms)`` equals ``cayley_map(skew_from_params(q, b), ...)``
    bit for bit in the forward; its backward rebuilds Q from q and applies :func:`cayley_vjp`
    (recomputing the powers of Q), so autograd keeps no b x b intermediates between the passes.
    Not twice differentiable.

    Examples
    --------
    >>> q = torch.randn(2, 6, dtype=torch.float64) * 0.1
    >>> g = CayleyMap.apply(q.requires_grad_(), 4, "neumann", 4)
    >>> bool(torch.equal(g, rotation_blocks(q.detach(), 4, autograd=True)))
    True
    """

    @staticmethod
    def forward(ctx, q, b, cayley, terms):  # noqa: D102
        ctx.save_for_backward(q)
        ctx.b, ctx.cayley, ctx.terms = b, cayley, terms
        return cayley_map(skew_from_params(q, b), cayley, terms)

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_g):  # noqa: D102
        (q,) = ctx.saved_tensors
        skew = skew_from_params(q, ctx.b)
        grad_q = skew_params_grad(cayley_vjp(skew, grad_g, ctx.cayley, ctx.terms))
        return grad_q, None, None, None


def rotation_blocks(q: torch.Tensor, b: int, cayley: str = "neumann", terms: int = 4,
                    autograd: bool = False) -> torch.Tensor:  # fmt: skip
    """Orthogonal blocks (K, b, b) from the flat parameters (K, b(b-1)/2).

    ``autograd=False`` (default): :class:`CayleyMap` (saves only q for backward);
    ``autograd=True``: the map under plain autograd (keeps the powers of Q; the predecessor
    POET's way, used by ``mode="naive"``).
    """
    if autograd or not torch.is_grad_enabled() or not q.requires_grad:
        return cayley_map(skew_from_params(q, b), cayley, terms)
    return CayleyMap.apply(q, b, cayley, terms)


def apply_blocks(x: torch.Tensor, g: torch.Tensor) -> torch.Tensor:
    """Rows x (N, K b) -> rows of x diag(G)^T, i.e. each block x_k -> G_k x_k (column view)."""
    k, b, _ = g.shape
    xb = x.reshape(-1, k, b).transpose(0, 1)  # (K, N, b)
    yb = torch.bmm(xb, g.transpose(1, 2))  # (K, N, b)
    return yb.transpose(0, 1).reshape(x.shape)


def block_diag_dense(g: torch.Tensor) -> torch.Tensor:
    """Dense block-diagonal matrix diag(G_1, ..., G_K)."""
    return torch.block_diag(*g.unbind(0))


def orthogonality_error(g: torch.Tensor) -> float:
    """max_k ||G_k^T G_k - I||_F / sqrt(b)."""
    b = g.shape[-1]
    eye = torch.eye(b, dtype=g.dtype, device=g.device)
    err = torch.linalg.matrix_norm(g.transpose(-1, -2) @ g - eye) / b**0.5
    return float(err.max()) if err.numel() else 0.0
