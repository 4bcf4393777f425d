"""Equivariant weight-space networks built from :class:`~wsnets.equivariant_linear.EquivariantLinear`.

* :class:`DWSNet` (Navon et al., 2023): stacked full hidden-neuron-equivariant affine layers
  with pointwise ReLU; the invariant head pools every block over its permuted axes (keeping
  the fixed input/output axes), the equivariant head is one more DWS layer to ``F`` channels.
* :class:`NPNFN` (Zhou et al., 2023, NP): the same with *every* neuron permuted (the NP
  layer), plus optional learned positional encodings of the input and output neurons
  (``pos_enc=True``, "NP-NFN+PE" in the paper's Theorem 1) that break the extra, non-
  functional symmetry. Without them the network is over-symmetric: it cannot tell input (or
  output) neurons apart.

Both return a tensor ``(B, out_dim)`` with ``head="invariant"`` and a
:class:`~wsnets.weight_space.WeightSpace` with ``out_dim`` channels with
``head="equivariant"``.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from wsnets.equivariant_linear import EquivariantLinear, block_labels
from wsnets.weight_space import WeightSpace

HEADS = ("invariant", "equivariant")


def check_head(head: str, out_dim: int) -> None:
    if head not in HEADS:
        raise ValueError(f"unknown head {head!r}; choose from {HEADS}")
    if out_dim < 1:
        raise ValueError(f"out_dim must be >= 1, got {out_dim}")


def invariant_head(pooled: int, hidden: int, out_dim: int) -> nn.Sequential:
    """MLP on the pooled invariant features, standardised first by batch normalisation.

    The pooled features of INRs are dominated by a component common to every network (the
    shared weight distribution); per-network differences are a small fraction of it. Without
    standardising them the head sees nearly constant inputs and end-to-end training stays at
    the class prior (measured: DWS at chance on the digits zoo while per-block statistics +
    logistic regression is far above it). Batch normalisation acts on invariant features, so
    invariance is untouched.
    """
    return nn.Sequential(
        nn.BatchNorm1d(pooled),
        nn.Linear(pooled, hidden),
        nn.ReLU(),
        nn.Linear(hidden, out_dim),
    )


def relu(v: WeightSpace) -> WeightSpace:
    return v.map(torch.relu)


class WeightSpaceNet(nn.Module):
    """Common interface: ``forward(v: WeightSpace)`` and the parameter count."""

    arch: tuple[int, ...]
    head: str
    out_dim: int

    def n_params(self) -> int:
        return sum(p.numel() for p in self.parameters())

    def _check(self, v: WeightSpace) -> WeightSpace:
        return v.check_arch(self.arch).check_finite()


class DWSNet(WeightSpaceNet):
    """Deep weight-space network: equivariant DWS layers + ReLU, then a head.

    Parameters
    ----------
    arch:
        Architecture of the input MLPs ``(d_0, ..., d_L)``.
    hidden:
        Channels per weight-space entry inside the network.
    depth:
        Number of equivariant layers before the head.
    head:
        ``"invariant"`` (``(B, out_dim)``) or ``"equivariant"`` (``out_dim`` channels).
    out_dim:
        Classes / regression outputs, or the number ``F`` of output edits.
    in_channels:
        Channels of the input weight space (1 for raw parameters).

    Examples
    --------
    >>> torch.manual_seed(0) and None
    >>> net = DWSNet([2, 4, 4, 1], hidden=3, depth=2, head="invariant", out_dim=5)
    >>> v = WeightSpace.random([2, 4, 4, 1], batch=2)
    >>> tau = v.random_permutation(torch.Generator().manual_seed(0))
    >>> bool(torch.allclose(net(v), net(v.permute(tau)), atol=1e-5))
    True
    """

    fixed_labels: Sequence[int] | None = None

    def __init__(
        self,
        arch: Sequence[int],
        hidden: int = 16,
        depth: int = 3,
        head: str = "invariant",
        out_dim: int = 1,
        in_channels: int = 1,
        fixed_labels: Sequence[int] | None = None,
    ) -> None:
        super().__init__()
        check_head(head, out_dim)
        self.arch, self.head, self.out_dim = tuple(arch), head, out_dim
        L = len(self.arch) - 1
        self.fixed = tuple((0, L) if fixed_labels is None else fixed_labels)
        chans = [in_channels, *[hidden] * depth]
        self.layers = nn.ModuleList(
            EquivariantLinear(self.arch, a, b, self.fixed)
            for a, b in zip(chans[:-1], chans[1:], strict=True)
        )
        if head == "equivariant":
            self.out = EquivariantLinear(self.arch, chans[-1], out_dim, self.fixed)
        else:
            pooled = sum(
                hidden * _prod(self.arch[k] for k in lab if k in self.fixed)
                for lab in block_labels(L)
            )
            self.out = invariant_head(pooled, hidden * 4, out_dim)

    def features(self, v: WeightSpace) -> WeightSpace:
        for layer in self.layers:
            v = relu(layer(v))
        return v

    def pool(self, v: WeightSpace) -> torch.Tensor:
        """Mean over every permuted axis of every block; flatten the fixed axes."""
        L = v.n_layers
        parts = []
        blocks = [t for pair in zip(v.weights, v.biases, strict=True) for t in pair]
        for t, lab in zip(blocks, block_labels(L), strict=True):
            dims = [1 + i for i, k in enumerate(lab) if k not in self.fixed]
            parts.append((t.mean(dim=dims) if dims else t).reshape(v.batch, -1))
        return torch.cat(parts, dim=1)

    def forward(self, v: WeightSpace):
        h = self.features(self._check(v))
        if self.head == "equivariant":
            return self.out(h)
        return self.out(self.pool(h))


def _prod(xs) -> int:
    out = 1
    for x in xs:
        out *= x
    return out


class NPNFN(DWSNet):
    """NP neural functional: all neurons permuted, optional input/output positional encodings.

    Parameters
    ----------
    arch, hidden, depth, head, out_dim:
        As :class:`DWSNet`.
    pos_enc:
        Add learned encodings (``pe_dim`` channels) of the input and output neurons to the
        first layer's input, restricting the symmetry to ``G_A`` (NP-NFN+PE).

    Examples
    --------
    >>> torch.manual_seed(0) and None
    >>> net = NPNFN([2, 4, 4, 1], hidden=3, depth=1, head="equivariant", out_dim=2)
    >>> v = WeightSpace.random([2, 4, 4, 1], batch=2)
    >>> net(v).channels
    2
    """

    def __init__(
        self,
        arch: Sequence[int],
        hidden: int = 16,
        depth: int = 3,
        head: str = "invariant",
        out_dim: int = 1,
        pos_enc: bool = True,
        pe_dim: int = 4,
    ) -> None:
        extra = pe_dim if pos_enc else 0
        super().__init__(arch, hidden, depth, head, out_dim, 1 + extra, fixed_labels=())
        self.pos_enc = pos_enc
        if pos_enc:
            self.pe_in = nn.Parameter(torch.randn(self.arch[0], pe_dim))
            self.pe_out = nn.Parameter(torch.randn(self.arch[-1], pe_dim))

    def encode(self, v: WeightSpace) -> WeightSpace:
        """Concatenate the positional channels (zero on blocks not touching input/output)."""
        if not self.pos_enc:
            return v
        B, L = v.batch, v.n_layers
        ws, bs = [], []
        for li, (w, b) in enumerate(zip(v.weights, v.biases, strict=True)):
            pw = w.new_zeros(*w.shape[:-1], self.pe_in.shape[1])
            pb = b.new_zeros(*b.shape[:-1], self.pe_in.shape[1])
            if li == 0:
                pw = pw + self.pe_in[None, None, :, :]
            if li == L - 1:
                pw = pw + self.pe_out[None, :, None, :]
                pb = pb + self.pe_out[None, :, :].expand(B, -1, -1)
            ws.append(torch.cat([w, pw], dim=-1))
            bs.append(torch.cat([b, pb], dim=-1))
        return WeightSpace(ws, bs)

    def forward(self, v: WeightSpace):
        h = self.features(self.encode(self._check(v)))
        if self.head == "equivariant":
            return self.out(h)
        return self.out(self.pool(h))
