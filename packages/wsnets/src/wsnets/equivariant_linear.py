"""All equivariant linear maps of an MLP weight space: the DWS layer (Navon et al.) and NP-NFN.

Every block of ``V`` is a tensor whose axes carry *neuron labels*: ``W_l`` has axes
``(l, l-1)`` and ``b_l`` has axis ``(l,)``. A label is *permuted* (hidden layers under
``G_A``; every layer for NP-NFN's larger group) or *fixed* (input/output layers under
``G_A``). The group is a product of independent symmetric groups, so the space of
equivariant linear maps from block ``X`` to block ``Y`` is the tensor product over labels of

* permuted label on both sides: ``span{identity, sum-and-broadcast}`` (2 maps),
* permuted label on one side only: the sum (``X`` side) or the broadcast (``Y`` side),
* fixed label: an arbitrary dense matrix / vector over that axis,

times a ``C_in x C_out`` channel mixing; the affine part is an invariant vector of ``Y``
(constant along permuted axes, free along fixed ones). :class:`EquivariantLinear` sums
one learned einsum per basis term, so it spans the whole commutant: the DWS layer for
``fixed_labels={0, L}``, the NP-NFN layer (Zhou et al.) for ``fixed_labels=()``. The count
:meth:`EquivariantLinear.n_basis` is checked against the numerically computed commutant
dimension in :mod:`wsnets.commutant`. (HNP-NFN spans the same hidden-neuron commutant as
DWS; :class:`wsnets.nf_transformer.HNPNFN` uses this layer with ``fixed_labels={0, L}``.)

Sums are taken as means over the permuted axis (the same span, better scaled).
"""

from __future__ import annotations

import itertools
import math
import string
from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import nn

from wsnets.weight_space import WeightSpace


def block_labels(n_layers: int) -> list[tuple[int, ...]]:
    """Axis labels of the blocks in the order ``W_1, b_1, ..., W_L, b_L``."""
    out: list[tuple[int, ...]] = []
    for li in range(1, n_layers + 1):
        out += [(li, li - 1), (li,)]
    return out


@dataclass(frozen=True)
class _Term:
    """One basis term between two blocks: how each label is treated."""

    src: int
    dst: int
    choice: tuple[tuple[int, str], ...]  # (label, 'id' | 'pool' | 'fixed' | 'src' | 'dst')


def _terms(labels: list[tuple[int, ...]], fixed: frozenset[int]) -> list[_Term]:
    terms = []
    for s, x in enumerate(labels):
        for t, y in enumerate(labels):
            both = [k for k in x if k in y]
            options = []
            for k in sorted(set(x) | set(y)):
                if k in fixed:
                    options.append([(k, "fixed")])
                elif k in both:
                    options.append([(k, "id"), (k, "pool")])
                else:
                    options.append([(k, "src" if k in x else "dst")])
            for combo in itertools.product(*options):
                terms.append(_Term(s, t, tuple(combo)))
    return terms


class EquivariantLinear(nn.Module):
    """The full equivariant affine layer ``V^{C_in} -> V^{C_out}`` (DWS or NP-NFN).

    Parameters
    ----------
    arch:
        ``(d_0, ..., d_L)``.
    c_in, c_out:
        Channels per weight-space entry.
    fixed_labels:
        Layers whose neurons are *not* permuted. ``None`` = ``{0, L}`` (the hidden-neuron
        group ``G_A``, i.e. DWS); ``()`` = every neuron permuted (NP-NFN).

    Examples
    --------
    >>> torch.manual_seed(0) and None
    >>> layer = EquivariantLinear([2, 3, 3, 1], 1, 4)
    >>> v = WeightSpace.random([2, 3, 3, 1], batch=2)
    >>> from wsnets.weight_space import symmetry_gap
    >>> symmetry_gap(layer, v, torch.Generator().manual_seed(0)) < 1e-5
    True
    """

    def __init__(
        self,
        arch: Sequence[int],
        c_in: int,
        c_out: int,
        fixed_labels: Sequence[int] | None = None,
        bias: bool = True,
    ) -> None:
        super().__init__()
        self.arch = tuple(int(d) for d in arch)
        L = len(self.arch) - 1
        self.fixed = frozenset((0, L) if fixed_labels is None else fixed_labels)
        self.c_in, self.c_out = c_in, c_out
        self.labels = block_labels(L)
        self.terms = _terms(self.labels, self.fixed)
        self.params = nn.ParameterList()
        self.specs: list[tuple[str, tuple[int, ...], float]] = []
        for term in self.terms:
            shape, spec, norm = self._einsum(term)
            fan = c_in * norm
            self.params.append(
                nn.Parameter(torch.randn(*shape) / math.sqrt(fan * len(self.labels)))
            )
            self.specs.append(spec)
        self.biases = nn.ParameterList()
        if bias:
            for y in self.labels:
                shape = [self.arch[k] if k in self.fixed else 1 for k in y]
                self.biases.append(nn.Parameter(torch.zeros(*shape, c_out)))

    def _einsum(self, term: _Term):
        """Einsum string, parameter shape and fan-in of one basis term."""
        x, y = self.labels[term.src], self.labels[term.dst]
        letters = iter(string.ascii_lowercase.replace("z", "").replace("c", "").replace("k", ""))
        x_letter = {k: next(letters) for k in x}
        y_letter = {}
        param_axes, param_shape, broadcast, norm = [], [], [], 1.0
        for k, how in term.choice:
            if how == "id":
                y_letter[k] = x_letter[k]
            elif how == "fixed":
                if k in x:
                    param_axes.append(x_letter[k])
                    param_shape.append(self.arch[k])
                    norm *= self.arch[k]
                if k in y:
                    y_letter[k] = next(letters)
                    param_axes.append(y_letter[k])
                    param_shape.append(self.arch[k])
            elif how in ("pool", "dst") and k in y:
                y_letter[k] = None  # broadcast after the einsum
                broadcast.append(k)
        out_axes = [y_letter[k] for k in y if y_letter[k] is not None]
        mean_over = [k for k in x if x_letter[k] not in out_axes and x_letter[k] not in param_axes]
        spec = (
            "z"
            + "".join(x_letter[k] for k in x)
            + "c,"
            + "".join(param_axes)
            + "ck->z"
            + "".join(out_axes)
            + "k"
        )
        scale = 1.0 / math.prod(self.arch[k] for k in mean_over) if mean_over else 1.0
        return (*param_shape, self.c_in, self.c_out), (spec, tuple(broadcast), scale), norm

    def n_basis(self) -> int:
        """Number of free scalars of the linear part for one channel pair (= commutant dim)."""
        return sum(p.numel() // (self.c_in * self.c_out) for p in self.params)

    def n_bias_basis(self) -> int:
        """Number of free scalars of the affine part per output channel (= invariants of V)."""
        return sum(b.numel() // self.c_out for b in self.biases)

    def forward(self, v: WeightSpace) -> WeightSpace:
        blocks = []
        for w, b in zip(v.weights, v.biases, strict=True):
            blocks += [w, b]
        if tuple(v.arch) != self.arch:
            raise ValueError(f"input architecture {list(v.arch)} differs from {list(self.arch)}")
        B = v.batch
        outs: list[torch.Tensor | None] = [None] * len(self.labels)
        for term, param, (spec, broadcast, scale) in zip(
            self.terms, self.params, self.specs, strict=True
        ):
            res = torch.einsum(spec, blocks[term.src], param)
            if scale != 1.0:
                res = res * scale
            y = self.labels[term.dst]
            if broadcast:
                # insert broadcast axes at their place in y
                for pos, k in enumerate(y):
                    if k in broadcast:
                        res = res.unsqueeze(1 + pos)
                res = res.expand(B, *[self.arch[k] for k in y], self.c_out)
            outs[term.dst] = res if outs[term.dst] is None else outs[term.dst] + res
        if len(self.biases):
            outs = [o + bb for o, bb in zip(outs, self.biases, strict=True)]
        return WeightSpace(outs[0::2], outs[1::2])
