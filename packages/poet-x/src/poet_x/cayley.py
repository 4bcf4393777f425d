"""Block-diagonal Cayley rotations (POET-BS primitives, Sec. 3.1 of POET / POET-X).

1. ``skew_from_params``: Q = U - U^T from the b(b-1)/2 strictly-upper entries per block.
2. ``cayley_exact``: G = (I + Q)(I - Q)^{-1} (exactly orthogonal; a linear solve).
3. ``cayley_neumann``: G ~ I + 2 (Q + Q^2 + ... + Q^k), the truncated Neumann series of
   (I - Q)^{-1} multiplied by (I + Q) with the Q^{k+1} term dropped, as in the authors'
   kernel; its orthogonality error is O(||Q||^{k+1}) and the series diverges for ||Q||_2 >= 1.
4. ``apply_blocks``: y_blk = x_blk G_k^T for every block k (a ``torch.bmm`` over blocks), i.e.
   x -> diag(G_1..G_K) x for row-vector inputs.
5. ``block_diag_dense``: the dense (K b) x (K b) matrix, for the naive POET path and tests.
"""

from __future__ import annotations

import warnings

import torch


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


def rotation_blocks(q: torch.Tensor, b: int, cayley: str = "neumann", terms: int = 4):
    """Orthogonal blocks (K, b, b) from the flat parameters (K, b(b-1)/2)."""
    skew = skew_from_params(q, b)
    if cayley == "exact":
        return cayley_exact(skew)
    return cayley_neumann(skew, terms)


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
