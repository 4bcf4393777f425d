"""Swin windows that stay exactly C4 / O equivariant (ReViT Sec. 3.4).

Attention inside a window is permutation equivariant and the rebased bias is invariant, so
what must hold is that *the set of tokens sharing a window* is the same for the rotated and
the unrotated input. On a square (cubic) token grid of side ``n`` with ``n % w == 0``:

* the plain partition (boundaries at multiples of ``w``) is mapped onto itself by the index
  reflection ``i -> n - 1 - i`` that every 90-degree rotation is made of;
* the shifted partition (boundaries at ``s + k w``) is preserved iff ``2 s = 0 (mod w)``,
  i.e. ``s = w / 2`` -- :func:`window_sets` lets the tests check both directions;
* on non-periodic domains the cyclic shift is combined with the Swin mask whose regions
  ``{0, n - w, n - s, n}`` are reflection symmetric when ``s = w / 2``: :func:`shift_mask`.

Functions: :func:`partition` / :func:`merge_windows` (channel-last, ``d`` = 2 or 3),
:func:`window_offsets` (coordinates of the tokens inside a window), :func:`shift_mask`.
"""

from __future__ import annotations

import torch


def partition(x: torch.Tensor, w: int, dim: int) -> torch.Tensor:
    """``(B, n_1..n_d, C) -> (B * n_windows, w^d, C)`` (window-major, row-major inside)."""
    b, c = x.shape[0], x.shape[-1]
    grid = x.shape[1 : 1 + dim]
    shape = [b]
    for n in grid:
        shape += [n // w, w]
    y = x.reshape(*shape, c)
    perm = [0, *(1 + 2 * k for k in range(dim)), *(2 + 2 * k for k in range(dim)), 1 + 2 * dim]
    return y.permute(perm).reshape(-1, w**dim, c)


def merge_windows(xw: torch.Tensor, w: int, grid: tuple[int, ...], batch: int) -> torch.Tensor:
    """Inverse of :func:`partition`."""
    dim = len(grid)
    c = xw.shape[-1]
    y = xw.reshape(batch, *(n // w for n in grid), *([w] * dim), c)
    perm = [0]
    for k in range(dim):
        perm += [1 + k, 1 + dim + k]
    perm.append(1 + 2 * dim)
    return y.permute(perm).reshape(batch, *grid, c)


def window_offsets(w: int, dim: int) -> torch.Tensor:
    """Centred coordinates ``(w^d, d)`` of the tokens of a window, ordered ``(x, y[, z])``."""
    axes = torch.meshgrid(*([torch.arange(w, dtype=torch.float64)] * dim), indexing="ij")
    idx = torch.stack([a.flatten() for a in axes], -1) - (w - 1) / 2  # array order (z, y, x)
    return idx.flip(-1)  # coordinate order (x, y, z)


def shift_mask(grid: tuple[int, ...], w: int, s: int) -> torch.Tensor:
    """Boolean ``(n_windows, w^d, w^d)``: True where a pair must NOT attend (non-periodic).

    Tokens rolled in from the far side of the domain form separate regions.
    """
    dim = len(grid)
    regions = []
    for n in grid:
        region = torch.zeros(n, dtype=torch.int64)
        region[n - w : n - s] = 1
        region[n - s :] = 2
        regions.append(region)
    grids = torch.meshgrid(*regions, indexing="ij")
    ids = sum(g * 3**k for k, g in enumerate(grids))
    iw = partition(ids[None, ..., None].float(), w, dim)[..., 0]  # (nW, w^d)
    return iw[:, :, None] != iw[:, None, :]


def window_sets(n: int, w: int, s: int, dim: int = 2, grid_ids: torch.Tensor | None = None):
    """The windows as a set of frozensets of token ids (after an optional cyclic shift ``s``).

    ``grid_ids`` (``(n,)*d`` integers) labels the tokens; default ``arange``.
    """
    ids = torch.arange(n**dim).reshape(*([n] * dim)) if grid_ids is None else grid_ids
    if s:
        ids = ids.roll([-s] * dim, dims=tuple(range(dim)))
    win = partition(ids[None, ..., None], w, dim)[..., 0]
    return {frozenset(row.tolist()) for row in win}
