"""Numerical commutant of the weight-space representation (completeness check of the DWS layer).

For a tiny architecture, the permutation representation ``rho`` of ``G_A`` on the flat
weight space ``V = R^n`` is built from generators of each permuted ``S_d`` (a transposition
and an ``d``-cycle generate ``S_d``). Then

* ``commutant_dim``: ``dim {T in R^{n x n} : rho(g) T = T rho(g) for all generators g}``,
  the null space of the stacked constraints ``(I (x) P - P^T (x) I) vec(T) = 0``, by SVD;
* ``invariant_dim``: ``dim {u : rho(g) u = u}`` (the equivariant affine shifts);
* ``layer_matrix``: the ``n^2 x p`` Jacobian from an :class:`EquivariantLinear` layer's
  ``p`` linear parameters to its matrix ``T``; its rank equals ``commutant_dim`` iff the
  layer spans the whole commutant with independent parameters.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from wsnets.equivariant_linear import EquivariantLinear
from wsnets.weight_space import WeightSpace


def _generators(d: int) -> list[torch.Tensor]:
    if d < 2:
        return []
    swap = torch.arange(d)
    swap[[0, 1]] = swap[[1, 0]]
    gens = [swap]
    if d > 2:
        gens.append(torch.roll(torch.arange(d), 1))
    return gens


def representation_generators(
    arch: Sequence[int], fixed_labels: Sequence[int] | None = None
) -> list[torch.Tensor]:
    """Permutation matrices ``rho(g)`` (``n x n``) of generators of the group."""
    arch = list(arch)
    L = len(arch) - 1
    fixed = set((0, L) if fixed_labels is None else fixed_labels)
    n = sum(o * i + o for i, o in zip(arch[:-1], arch[1:], strict=True))
    basis = WeightSpace.unflatten(torch.eye(n), arch)  # batch n: one basis vector each
    mats = []
    for k in range(L + 1):
        if k in fixed:
            continue
        for g in _generators(arch[k]):
            mats.append(
                _act(basis, k, g).flatten().T.contiguous()
            )  # columns = images of basis vectors
    return mats


def _act(v: WeightSpace, k: int, g: torch.Tensor) -> WeightSpace:
    """Permute the neurons of layer ``k`` (any layer, for NP's group) by ``g``."""
    ws, bs = list(v.weights), list(v.biases)
    if k >= 1:
        ws[k - 1] = ws[k - 1][:, g]
        bs[k - 1] = bs[k - 1][:, g]
    if k < len(ws):
        ws[k] = ws[k][:, :, g]
    return WeightSpace(ws, bs)


def _nullity(m: torch.Tensor, tol: float = 1e-8) -> int:
    s = torch.linalg.svdvals(m.double())
    return int(m.shape[1] - (s > tol * max(1.0, float(s.max()))).sum())


def commutant_dim(arch: Sequence[int], fixed_labels: Sequence[int] | None = None) -> int:
    """Dimension of the space of equivariant linear maps ``V -> V``."""
    mats = representation_generators(arch, fixed_labels)
    n = mats[0].shape[0]
    eye = torch.eye(n, dtype=torch.float64)
    rows = [torch.kron(eye, p.double()) - torch.kron(p.double().T.contiguous(), eye) for p in mats]
    return _nullity(torch.cat(rows))


def invariant_dim(arch: Sequence[int], fixed_labels: Sequence[int] | None = None) -> int:
    """Dimension of the invariant vectors of ``V`` (the equivariant constant terms)."""
    mats = representation_generators(arch, fixed_labels)
    n = mats[0].shape[0]
    return _nullity(torch.cat([p.double() - torch.eye(n, dtype=torch.float64) for p in mats]))


def layer_matrix(layer: EquivariantLinear) -> torch.Tensor:
    """``(n^2, p)``: column ``j`` is the matrix of the layer with only parameter ``j`` set to 1."""
    if layer.c_in != 1 or layer.c_out != 1:
        raise ValueError("layer_matrix needs a single-channel layer (c_in = c_out = 1)")
    arch = layer.arch
    n = sum(o * i + o for i, o in zip(arch[:-1], arch[1:], strict=True))
    basis = WeightSpace.unflatten(torch.eye(n), arch)
    saved = [p.detach().clone() for p in layer.params]
    saved_b = [b.detach().clone() for b in layer.biases]
    cols = []
    with torch.no_grad():
        for b in layer.biases:
            b.zero_()
        for p in layer.params:
            p.zero_()
        for p in layer.params:
            flat = p.view(-1)
            for j in range(flat.numel()):
                flat[j] = 1.0
                cols.append(layer(basis).flatten().T.reshape(-1).double())
                flat[j] = 0.0
        for p, s in zip(layer.params, saved, strict=True):
            p.copy_(s)
        for b, s in zip(layer.biases, saved_b, strict=True):
            b.copy_(s)
    return torch.stack(cols, dim=1)


def commutant_table(arch: Sequence[int] = (2, 3, 4, 2)):
    """Parameters of the DWS / NP layer against the numerical commutant and invariant dims.

    Equal numbers mean the layer spans every equivariant linear map (and bias) for ``arch``.
    """
    from icml26_shared.results import Table

    arch = list(arch)
    table = Table(
        f"DWS / NP layer parameters vs the numerical commutant (SVD), architecture {arch}",
        ["group", "layer linear params", "commutant dim", "layer bias params", "invariant dim"],
    )
    for group, fixed in (("hidden neurons (DWS)", None), ("all neurons (NP)", ())):
        layer = EquivariantLinear(arch, 1, 1, fixed)
        table.add_row(
            group=group,
            **{
                "layer linear params": layer.n_basis(),
                "commutant dim": commutant_dim(arch, fixed),
                "layer bias params": layer.n_bias_basis(),
                "invariant dim": invariant_dim(arch, fixed),
            },
        )
    return table
