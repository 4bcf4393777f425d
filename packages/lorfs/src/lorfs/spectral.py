"""Full-tensor spectral least-squares solve for linear problems with ``D <= 3`` (accuracy ceiling).

Paper: Kaminsky, Freedman, Radinsky, "Overcoming PINNs Failure Modes in High Dimension with
Low-Rank Fourier Sum", ICML 2026 (notes, Sec. B4: "a full-tensor spectral Galerkin solve for
linear problems with d <= 3").

The unknown is the *full* coefficient tensor ``X[k_1, ..., k_D]`` in the same bases as LoRFS
(rank unrestricted), and the loss the same closed-form pieces (:meth:`lorfs.problems.Problem.pieces`).
Because ``L = c0 I + sum_j L_j`` is diagonal on Fourier coefficients, ``lambda(k) = c0 +
sum_j mu_j(k_j)``, and every piece's Gram is the Kronecker product of the 1-D Grams, the normal
equations are

    sum_p w_p diag(conj lambda_p) (G_1 (x) ... (x) G_D) diag(lambda_p) x = sum_p w_p diag(conj lambda_p) G f_p,

solved densely (pseudo-inverse: Fourier-extension Grams are ill-conditioned) in the free
parameters of each axis (sine/cosine synthesis). Cost ``O(prod_j (2K_j+1))^3``.
"""

from __future__ import annotations

import torch

from .basis import CDTYPE
from .coefficients import pad_modes
from .fourier_sum import SeparableSum
from .residual import assemble, axis_gram

__all__ = ["spectral_solve"]


def _kron(mats: list[torch.Tensor]) -> torch.Tensor:
    out = mats[0]
    for m in mats[1:]:
        out = torch.kron(out, m)
    return out


def _dense(s: SeparableSum, modes: list[int]) -> torch.Tensor:
    """Full coefficient vector of a separable sum on ``modes`` (zero-padded or truncated)."""
    facs = []
    for f, k in zip(s.factors, modes, strict=True):
        kk = (f.shape[1] - 1) // 2
        facs.append(pad_modes(f, k) if kk <= k else f[:, kk - k : kk + k + 1])
    vec = None
    for f in facs:
        vec = f if vec is None else (vec[:, :, None] * f[:, None, :]).reshape(f.shape[0], -1)
    return vec.sum(0)


def spectral_solve(problem, modes: list[int] | int | None = None, rcond: float = 1e-13):
    """Solve a linear registry problem over the full tensor basis; returns ``points -> values``.

    Examples
    --------
    >>> from lorfs.problems import get_problem, relative_error_on
    >>> p = get_problem("dirichlet_poisson", d=2)
    >>> u = spectral_solve(p)
    >>> relative_error_on(p, u, n=500) < 1e-12
    True
    """
    if not problem.is_linear:
        raise ValueError(
            f"problem {problem.name!r} is nonlinear: the spectral ceiling is linear only"
        )
    if problem.dim > 3:
        raise ValueError(f"the full-tensor solve is for D <= 3, got D = {problem.dim}")
    axes = problem.make_axes(modes)
    ks = [ax.modes for ax in axes]
    size = 1
    for ax in axes:
        size *= ax.size
    if size > 20_000:
        raise ValueError(f"full tensor basis of {size} coefficients is too large")
    synth = _kron([ax.synthesis() for ax in axes])  # (N, P)
    placeholder = SeparableSum(axes, [torch.zeros(1, ax.size, dtype=CDTYPE) for ax in axes])
    lhs = torch.zeros(synth.shape[1], synth.shape[1], dtype=CDTYPE)
    rhs = torch.zeros(synth.shape[1], dtype=CDTYPE)
    for piece in problem.pieces(placeholder):
        terms = assemble(piece, ks)
        gram = _kron(
            [
                (lambda g: torch.diag(g) if g.dim() == 1 else g)(axis_gram(ax, m, k))
                for ax, m, k in zip(axes, piece.measures, ks, strict=True)
            ]
        )
        _, op = piece.items[piece.unknown]
        lam = torch.full((size,), op.constant, dtype=CDTYPE)
        for j, ax in enumerate(axes):
            mu = op.axis_multiplier(ax, j, ks[j])
            shape = [1] * len(axes)
            shape[j] = -1
            lam = (lam.reshape([ax2.size for ax2 in axes]) + mu.reshape(shape)).reshape(-1)
        f = torch.zeros(size, dtype=CDTYPE)
        for i, (s, op_i) in enumerate(piece.items):
            if i == piece.unknown:
                continue
            lam_i = torch.full((size,), op_i.constant, dtype=CDTYPE)
            for j, ax in enumerate(axes):
                mu = op_i.axis_multiplier(ax, j, ks[j])
                shape = [1] * len(axes)
                shape[j] = -1
                lam_i = (lam_i.reshape([a.size for a in axes]) + mu.reshape(shape)).reshape(-1)
            f = f - lam_i * _dense(s, ks)  # the data enter as -(L_i s_i)
        del terms
        a = lam[:, None] * synth  # diag(lambda) S
        # the Gram conj: ||h||^2 = h^T G conj(h) with G[k, l] = int e_k conj(e_l)
        lhs = lhs + piece.weight * (a.T @ gram @ a.conj()).conj()
        rhs = rhs + piece.weight * (a.T @ gram @ f.conj()).conj()
    lhs = 0.5 * (lhs + lhs.conj().T)
    x = torch.linalg.lstsq(lhs, rhs, rcond=rcond, driver="gelsd").solution
    coeffs = (synth @ x).reshape([ax.size for ax in axes])

    def predict(points: torch.Tensor) -> torch.Tensor:
        mats = [ax.basis_matrix(points[:, j]) for j, ax in enumerate(axes)]  # (N, n_j)
        vals = coeffs
        out = None
        if len(axes) == 1:
            out = mats[0] @ vals
        elif len(axes) == 2:
            out = torch.einsum("nk,nl,kl->n", mats[0], mats[1], vals)
        else:
            out = torch.einsum("nk,nl,nm,klm->n", mats[0], mats[1], mats[2], vals)
        return out.real

    return predict
