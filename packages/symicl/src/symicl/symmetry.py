"""Feature x label permutation symmetry and its commutant (Lutz et al., ICML 2026, Sec. 3).

Paper: "Symmetry Reveals Layerwise Dynamics: How Transformers Perform In-Context
Classification" (arXiv 2604.11613).

A token is ``z = [x; y] in R^(d+C)``. The group ``G = S_d x S_C`` acts on every token by
the block permutation ``g = diag(P_d, P_C)``. A layer map ``M`` is equivariant iff it lies
in the *commutant* ``{M : g M = M g for all g}``, which for ``d, C >= 2`` is the
6-dimensional space::

    M = [[a I_d + b 1 1^T,   c 1_d 1_C^T   ],
         [e 1_C 1_d^T,       f I_C + h 1 1^T]]

(for ``d = 1`` the matrices ``I_1`` and ``1 1^T`` coincide and the dimension drops to 5).

Map of this module:

* closed-form basis of the commutant          -> :func:`commutant_basis`
* its dimension as an SVD null-space count     -> :func:`commutant_dimension_svd`
* Reynolds operator (group average) = the
  orthogonal projection onto the commutant     -> :func:`project` (closed form),
  :func:`group_average` (Monte-Carlo, for checking)
* the six scalars ``(a, b, c, e, f, h)``       -> :func:`coefficients`, :func:`from_coefficients`
* symmetry defect ``||M - P(M)|| / ||M||``     -> :func:`defect`
* random block permutation of "augment" mode   -> :func:`random_block_permutation`
"""

from __future__ import annotations

import numpy as np
import scipy.linalg
import torch

from symicl.episodes import check_task_sizes

#: names of the six commutant coordinates, in the order used everywhere in the package
COEFFICIENT_NAMES = ("a", "b", "c", "e", "f", "h")


def commutant_basis(d: int, n_classes: int) -> torch.Tensor:
    """Closed-form basis of the commutant of ``S_d x S_C``, shape ``(k, d+C, d+C)``.

    ``k = 6`` for ``d >= 2`` and ``k = 5`` for ``d = 1`` (the ``b`` direction vanishes).
    Each basis element is one coefficient of :data:`COEFFICIENT_NAMES` set to one.

    >>> commutant_basis(3, 2).shape
    torch.Size([6, 5, 5])
    >>> commutant_basis(1, 2).shape
    torch.Size([5, 3, 3])
    """
    check_task_sizes(d, n_classes)
    names = COEFFICIENT_NAMES if d >= 2 else tuple(n for n in COEFFICIENT_NAMES if n != "b")
    eye = torch.eye(len(names), dtype=torch.float64)
    return torch.stack([from_coefficients(row, d, n_classes, names=names) for row in eye])


def from_coefficients(
    coef: torch.Tensor, d: int, n_classes: int, names: tuple[str, ...] = COEFFICIENT_NAMES
) -> torch.Tensor:
    """Build ``M`` of shape ``(..., d+C, d+C)`` from coefficients ``(..., len(names))``."""
    values = dict(zip(names, coef.unbind(-1), strict=True))
    zero = torch.zeros_like(coef[..., 0])
    a, b, c, e, f, h = (values.get(n, zero)[..., None, None] for n in COEFFICIENT_NAMES)
    opt = {"dtype": coef.dtype, "device": coef.device}
    eye_d, eye_c = torch.eye(d, **opt), torch.eye(n_classes, **opt)
    ones_dd = torch.ones(d, d, **opt)
    ones_dc = torch.ones(d, n_classes, **opt)
    ones_cc = torch.ones(n_classes, n_classes, **opt)
    top = torch.cat([a * eye_d + b * ones_dd, c * ones_dc], dim=-1)
    bottom = torch.cat([e * ones_dc.mT, f * eye_c + h * ones_cc], dim=-1)
    return torch.cat([top, bottom], dim=-2)


def _block_sizes(m: torch.Tensor, d: int, n_classes: int) -> None:
    size = d + n_classes
    if m.shape[-2:] != (size, size):
        raise ValueError(
            f"matrix must be (..., {size}, {size}) for d={d}, C={n_classes}, got {tuple(m.shape)}"
        )


def _diag_offdiag_means(block: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    n = block.shape[-1]
    diag = torch.diagonal(block, dim1=-2, dim2=-1).mean(-1)
    if n == 1:
        return diag, torch.zeros_like(diag)
    off = (block.sum((-2, -1)) - torch.diagonal(block, dim1=-2, dim2=-1).sum(-1)) / (n * (n - 1))
    return diag, off


def coefficients(m: torch.Tensor, d: int, n_classes: int) -> torch.Tensor:
    """The six scalars ``(a, b, c, e, f, h)`` of the projection of ``m``, shape ``(..., 6)``.

    Diagonal blocks give ``a = mean(diag) - mean(offdiag)`` and ``b = mean(offdiag)``
    (``b = 0`` for a 1x1 block), cross blocks give the mean entry. Exact for matrices in the
    commutant; for others these are the coordinates of :func:`project`.
    """
    _block_sizes(m, d, n_classes)
    xx, xy = m[..., :d, :d], m[..., :d, d:]
    yx, yy = m[..., d:, :d], m[..., d:, d:]
    dx, ox = _diag_offdiag_means(xx)
    dy, oy = _diag_offdiag_means(yy)
    return torch.stack([dx - ox, ox, xy.mean((-2, -1)), yx.mean((-2, -1)), dy - oy, oy], dim=-1)


def project(m: torch.Tensor, d: int, n_classes: int) -> torch.Tensor:
    """Reynolds projection ``E_g[g^T M g]`` onto the commutant, in closed form.

    The group acts orthogonally, so the group average is the orthogonal (Frobenius)
    projection onto the commutant; it is idempotent and fixes equivariant matrices.

    >>> m = torch.randn(5, 5, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    >>> p = project(m, 3, 2)
    >>> bool(torch.allclose(project(p, 3, 2), p))
    True
    """
    return from_coefficients(coefficients(m, d, n_classes), d, n_classes)


def defect(m: torch.Tensor, d: int, n_classes: int) -> float:
    """Symmetry defect ``||M - project(M)||_F / ||M||_F`` (0 for an equivariant map)."""
    norm = float(torch.linalg.matrix_norm(m))
    if norm == 0.0:
        return 0.0
    return float(torch.linalg.matrix_norm(m - project(m, d, n_classes))) / norm


def random_block_permutation(
    d: int, n_classes: int, n: int = 1, generator: torch.Generator | None = None
) -> torch.Tensor:
    """``n`` random index permutations of the token coordinates, shape ``(n, d+C)``.

    Row ``r`` permutes the feature block and the label block independently, i.e. it is the
    group element ``diag(P_d, P_C)``; ``M[perm][:, perm]`` is the conjugate ``g^T M g``.
    """
    feat = torch.argsort(torch.rand(n, d, generator=generator), dim=1)
    lab = torch.argsort(torch.rand(n, n_classes, generator=generator), dim=1) + d
    return torch.cat([feat, lab], dim=1)


def group_average(
    m: torch.Tensor, d: int, n_classes: int, n_samples: int = 2000, seed: int = 0
) -> torch.Tensor:
    """Monte-Carlo Reynolds average ``(1/S) sum_s g_s^T M g_s`` over random group elements."""
    _block_sizes(m, d, n_classes)
    perms = random_block_permutation(
        d, n_classes, n_samples, generator=torch.Generator().manual_seed(seed)
    )
    conj = m[perms[:, :, None], perms[:, None, :]]  # (S, D, D)
    return conj.mean(0)


def _permutation_matrix(perm: np.ndarray) -> np.ndarray:
    p = np.zeros((len(perm), len(perm)))
    p[np.arange(len(perm)), perm] = 1.0
    return p


def commutant_dimension_svd(d: int, n_classes: int) -> int:
    """Dimension of the commutant computed numerically, as an SVD null-space count.

    Stacks the linear constraints ``P M - M P = 0`` for generators ``P`` of ``S_d x S_C``
    (a transposition and a full cycle of each factor) as a ``(g (d+C)^2, (d+C)^2)`` matrix
    and counts its null space with :func:`scipy.linalg.null_space`. Independent of the
    closed form of :func:`commutant_basis`, which it is tested against.
    """
    check_task_sizes(d, n_classes)
    size = d + n_classes
    gens = []
    for n, offset in ((d, 0), (n_classes, d)):
        if n < 2:
            continue
        swap = np.arange(n)
        swap[[0, 1]] = [1, 0]
        cycle = np.roll(np.arange(n), 1)
        for local in (swap, cycle):
            perm = np.arange(size)
            perm[offset : offset + n] = local + offset
            gens.append(_permutation_matrix(perm))
    eye = np.eye(size)
    # vec(P M - M P) = (I kron P - P^T kron I) vec(M)  (column-major vec)
    rows = [np.kron(eye, p) - np.kron(p.T, eye) for p in gens]
    if not rows:
        return size * size
    return scipy.linalg.null_space(np.concatenate(rows)).shape[1]
