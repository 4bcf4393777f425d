"""Neural Functional Transformer (NFT, Zhou et al. 2023) and HNP-NFN.

NFT: attention over the neurons of each layer. Each block of the weight space is a tensor
whose axes are neuron labels (``W_l``: ``(l, l-1)``, ``b_l``: ``(l,)``). Weight-space
self-attention (:class:`WeightSpaceAttention`) runs, for every block and every *permuted*
(hidden) axis of it, ordinary multi-head self-attention along that axis without positional
encodings, batched over all other axes:

* ``W_l[:, :, j]`` (the column of input neuron ``j``) attends over the rows ``i`` when
  layer ``l`` is hidden; ``W_l[:, i, :]`` attends over the columns when layer ``l-1`` is
  hidden; ``b_l`` attends over its neurons when layer ``l`` is hidden.

Self-attention without positions is permutation-equivariant along its sequence axis and
acts identically on every slice of the other axes, so each such operation commutes with
``rho(tau)`` for every ``tau`` in ``G_A``. :class:`NFT` interleaves the (complete) DWS
affine layer, which mixes blocks, with pre-norm residual attention blocks:
``h <- relu(EquivariantLinear(h))``, ``h <- h + Attn(LN(h))``, ``h <- h + FFN(LN(h))``
(FFN per entry). The paper proves NFT as expressive as DWS / NFN / GMN only under the
general-position assumption (distinct biases within a hidden layer); without it the
attention's softmax cannot separate tied neurons.

:class:`HNPNFN`: the hidden-neuron-permutation NFN of Zhou et al. Its linear layer is the
full ``G_A``-equivariant affine map between weight-space blocks, i.e. the same span as the
DWS layer (checked against the SVD commutant in :mod:`wsnets.commutant`); the class exists
so that the family is built, tested and reported under its own name.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from wsnets.dws import DWSNet, relu
from wsnets.weight_space import WeightSpace


def _attend(attn: nn.MultiheadAttention, x: torch.Tensor, axis: int) -> torch.Tensor:
    """Self-attention of ``x`` (``(B, ..., D)``) along ``axis``, batched over the others."""
    moved = x.movedim(axis, -2)
    shape = moved.shape
    seq = moved.reshape(-1, shape[-2], shape[-1])
    out, _ = attn(seq, seq, seq, need_weights=False)
    return out.reshape(shape).movedim(-2, axis)


class WeightSpaceAttention(nn.Module):
    """Pre-norm residual self-attention along every hidden-neuron axis of every block.

    Parameters
    ----------
    n_layers:
        ``L``, the number of linear layers of the input MLPs.
    dim:
        Channels per entry.
    heads:
        Attention heads (must divide ``dim``).

    Examples
    --------
    >>> torch.manual_seed(0) and None
    >>> att = WeightSpaceAttention(3, dim=4, heads=2)
    >>> v = WeightSpace.random([2, 5, 5, 1], batch=2, channels=4)
    >>> from wsnets.weight_space import symmetry_gap
    >>> symmetry_gap(att, v, torch.Generator().manual_seed(0)) < 1e-5
    True
    """

    def __init__(self, n_layers: int, dim: int, heads: int = 1) -> None:
        super().__init__()
        if heads < 1 or dim % heads:
            raise ValueError(f"attention heads ({heads}) must be >= 1 and divide dim={dim}")
        self.L = n_layers
        self.row = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.col = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.bias = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.norm_w, self.norm_b = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.ffn = nn.Sequential(
            nn.LayerNorm(dim), nn.Linear(dim, 2 * dim), nn.ReLU(), nn.Linear(2 * dim, dim)
        )

    def forward(self, v: WeightSpace) -> WeightSpace:
        ws, bs = [], []
        for li, (w, b) in enumerate(zip(v.weights, v.biases, strict=True)):
            out_hidden, in_hidden = li + 1 < self.L, li > 0
            nw, nb = self.norm_w(w), self.norm_b(b)
            upd_w = torch.zeros_like(w)
            if out_hidden:  # attend over rows (neurons of layer li+1)
                upd_w = upd_w + _attend(self.row, nw, 1)
            if in_hidden:  # attend over columns (neurons of layer li)
                upd_w = upd_w + _attend(self.col, nw, 2)
            w = w + upd_w
            if out_hidden:
                b = b + _attend(self.bias, nb, 1)
            ws.append(w + self.ffn(w))
            bs.append(b + self.ffn(b))
        return WeightSpace(ws, bs)


class NFT(DWSNet):
    """Neural Functional Transformer: DWS affine layers interleaved with neuron attention.

    Parameters
    ----------
    arch, hidden, depth, head, out_dim, in_channels:
        As :class:`~wsnets.dws.DWSNet`.
    heads:
        Attention heads per block (must divide ``hidden``).

    Examples
    --------
    >>> torch.manual_seed(0) and None
    >>> net = NFT([2, 4, 4, 1], hidden=4, depth=2, head="invariant", out_dim=3)
    >>> v = WeightSpace.random([2, 4, 4, 1], batch=2)
    >>> tau = v.random_permutation(torch.Generator().manual_seed(0))
    >>> bool(torch.allclose(net(v), net(v.permute(tau)), atol=1e-5))
    True
    """

    def __init__(
        self,
        arch: Sequence[int],
        hidden: int = 16,
        depth: int = 3,
        head: str = "invariant",
        out_dim: int = 1,
        in_channels: int = 1,
        heads: int = 1,
    ) -> None:
        super().__init__(arch, hidden, depth, head, out_dim, in_channels)
        L = len(self.arch) - 1
        self.attn = nn.ModuleList(WeightSpaceAttention(L, hidden, heads) for _ in range(depth))

    def features(self, v: WeightSpace) -> WeightSpace:
        for layer, attn in zip(self.layers, self.attn, strict=True):
            v = attn(relu(layer(v)))
        return v


class HNPNFN(DWSNet):
    """HNP-NFN (Zhou et al.): the complete hidden-neuron-equivariant NFN layer stack.

    Same constructor and heads as :class:`~wsnets.dws.DWSNet`; its layer spans the same
    commutant (the equivalence the paper builds on), so at equal width it has exactly the
    DWS parameter count.

    Examples
    --------
    >>> torch.manual_seed(0) and None
    >>> net = HNPNFN([2, 4, 4, 1], hidden=3, depth=1, head="equivariant", out_dim=2)
    >>> net(WeightSpace.random([2, 4, 4, 1], batch=2)).channels
    2
    """
