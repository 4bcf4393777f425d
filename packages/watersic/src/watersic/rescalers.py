"""Row/column rescalers by alternating exact minimisation.

Paper: Lifar et al., "WaterSIC", ICML 2026 (arXiv:2603.04956).

With the coded matrix M = Z diag(alpha) ``(a, n)`` fixed, the final weights are
What = diag(t) M diag(g) and the objective is

    J(t, g) = E||W x - What xhat||^2
            = const - 2 sum_ij What_ij C_ij + sum_i (What Sigma_xhat What^T)_ii,

with C = W Sigma_{x,xhat} (+ E[(R - Rhat) xhat^T] under residual compensation). J is a convex
quadratic in g for fixed t and in t for fixed g:

* g-step: (Sigma_xhat o M^T diag(t^2) M) g = diag(M^T diag(t) C), solved with a small ridge
  max(1e-11, 1e-8 mean diag), clipped to [-0.1, 1.5] and backtracked if J rises;
* t-step (closed form per row): t_i = sum_j (M diag g)_ij C_ij / (M_g Sigma_xhat M_g^T)_ii;
* normalisation sum|t_i| = a (J is invariant to t -> s t, g -> g / s).

Every accepted step is an exact block minimisation or a backtracked one, so J never increases.

Cost per round: the Gram matrix Mt^T Mt of the g-system (symmetric: only its lower block
triangle is multiplied, :func:`gram`), the t-step's row forms (M_g Sigma_xhat M_g^T)_ii (with
the Cholesky factor Sigma_xhat + delta I = L L^T they are ||(M_g)_i L||^2 - delta ||(M_g)_i||^2,
a triangular product, :func:`watersic.second_moment.times_lower`) and one n x n Cholesky
solve: about a n^2 multiply-adds in all. The objective of every candidate is evaluated from the
quadratic forms those products already give (O(n^2) for g, O(a) for t), not from scratch.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from watersic.second_moment import times_lower

G_CLIP = (-0.1, 1.5)


def gram(X: torch.Tensor, block: int = 512) -> torch.Tensor:
    """``X^T X`` ``(n, n)`` of ``X`` ``(a, n)``, multiplying only the lower block triangle.

    >>> X = torch.randn(7, 5, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    >>> torch.allclose(gram(X, block=2), X.T @ X)
    True
    """
    a, n = X.shape
    if n <= block:
        return X.T @ X
    G = torch.empty(n, n, dtype=X.dtype, device=X.device)
    for i0 in range(0, n, block):
        i1 = min(i0 + block, n)
        G[i0:i1, :i1] = X[:, i0:i1].T @ X[:, :i1]  # block row i, columns 0..i1
        G[:i0, i0:i1] = G[i0:i1, :i0].T  # mirror into the upper triangle
    return G


def rescaler_objective(
    M: torch.Tensor,
    t: torch.Tensor,
    g: torch.Tensor,
    C: torch.Tensor,
    sigma_hat: torch.Tensor,
    const: float = 0.0,
) -> float:
    """J(t, g) = const - 2 <What, C> + tr(What Sigma_hat What^T) for What = diag(t) M diag(g)."""
    What = t[:, None] * M * g[None, :]
    return const - 2.0 * float((What * C).sum()) + float(((What @ sigma_hat) * What).sum())


@dataclass
class RescalerFit:
    """Result of :func:`fit_rescalers`: ``t`` ``(a,)``, ``g`` ``(n,)``, objective history."""

    t: torch.Tensor
    g: torch.Tensor
    history: list[float] = field(default_factory=list)


def fit_rescalers(
    M: torch.Tensor,
    C: torch.Tensor,
    sigma_hat: torch.Tensor,
    const: float = 0.0,
    max_iter: int = 50,
    tol: float = 3e-4,
    factor: tuple[torch.Tensor, float] | None = None,
) -> RescalerFit:
    """Alternating exact minimisation of J(t, g); returns the rescalers and J per iteration.

    Parameters
    ----------
    M:
        Coded weights Z diag(alpha), ``(a, n)``, float64.
    C:
        Target cross moment W Sigma_{x,xhat} (+ residual term), ``(a, n)``.
    sigma_hat:
        Second moment of the inference input, ``(n, n)``.
    const:
        E||W x||^2 term, only shifts the reported objective.
    max_iter, tol:
        Stop after ``max_iter`` rounds or when the relative decrease falls below ``tol``.
    factor:
        ``(L, delta)`` with ``L L^T = sigma_hat + delta I`` (lower ``L``), when at hand: the
        t-step's quadratic forms then cost a triangular product instead of a dense one.

    Examples
    --------
    >>> g0 = torch.Generator().manual_seed(0)
    >>> W = torch.randn(8, 4, generator=g0, dtype=torch.float64)
    >>> S = torch.eye(4, dtype=torch.float64)
    >>> fit = fit_rescalers(0.8 * W, W @ S, S, const=float((W * W).sum()))
    >>> round(fit.history[-1], 8)  # 0.8 W rescaled back to W exactly
    0.0
    """
    a, n = M.shape
    t = torch.ones(a, dtype=torch.float64)
    g = torch.ones(n, dtype=torch.float64)
    ridge = max(1e-11, 1e-8 * float(torch.diagonal(sigma_hat).mean()))
    history: list[float] = []
    J = float("nan")
    for _ in range(max_iter):
        # g-step. For fixed t, J(g) = const - 2 g.b + g^T A g with A = Sigma_xhat o Mt^T Mt and
        # b = diag(Mt^T C): the two a x n^2 products are done once and every backtracking
        # candidate costs O(n^2) (the exact objective, reorganised).
        Mt = t[:, None] * M  # (a, n)
        A = sigma_hat * gram(Mt)  # (n, n), symmetric positive semi-definite
        b = (Mt * C).sum(dim=0)  # (n,)

        def J_of_g(v: torch.Tensor, A=A, b=b) -> float:
            return const - 2.0 * float(v @ b) + float(v @ (A @ v))

        J_g = J_of_g(g)
        if not history:  # J(1, 1): the starting objective
            J = J_g
            history.append(J)
        J_start = J
        scale = float(torch.diagonal(A).mean().clamp_min(1e-300))
        A_ridge = A + (ridge * scale) * torch.eye(n, dtype=A.dtype)
        chol, info = torch.linalg.cholesky_ex(A_ridge)
        g_new = (
            torch.cholesky_solve(b[:, None], chol)[:, 0]
            if int(info) == 0
            else torch.linalg.solve(A_ridge, b)
        ).clamp(*G_CLIP)
        accepted = False
        step = 1.0
        for _ in range(12):
            cand = g + step * (g_new - g)
            Jc = J_of_g(cand)
            if Jc <= J_g:
                g, J_g, accepted = cand, Jc, True
                break
            step *= 0.5
        # t-step (closed form per row); for fixed g, J(t) = const - 2 t.num + t^2.den exactly.
        Mg = M * g[None, :]
        num = (Mg * C).sum(dim=1)
        if factor is None:
            den = ((Mg @ sigma_hat) * Mg).sum(dim=1)  # (a,) rows of M_g Sigma_xhat M_g^T
        else:
            L, delta = factor
            den = times_lower(Mg, L).pow(2).sum(dim=1) - delta * Mg.pow(2).sum(dim=1)
        t_new = torch.where(den > 0, num / den.clamp_min(1e-300), t)

        def J_of_t(v: torch.Tensor, num=num, den=den) -> float:
            return const - 2.0 * float(v @ num) + float((v * v) @ den)

        J_cur, Jt = J_of_t(t), J_of_t(t_new)
        if Jt <= J_cur:
            t, J = t_new, Jt
        else:
            J = J_cur
        # normalise sum |t| = a (objective unchanged)
        s = float(t.abs().mean())
        if s > 0:
            t, g = t / s, g * s
        history.append(J)
        denom = max(abs(J_start), 1e-300)
        if not accepted and Jt > J:
            break
        if (J_start - J) / denom < tol:
            break
    if not history:  # max_iter = 0
        history.append(rescaler_objective(M, t, g, C, sigma_hat, const))
    return RescalerFit(t=t, g=g, history=history)
