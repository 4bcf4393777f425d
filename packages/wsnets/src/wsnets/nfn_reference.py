"""The ``nfn`` package (Zhou et al., NeurIPS 2023) as reference meta-networks and a span check.

Dayan, Eitan, Maron (ICML 2026) compare DWS, NP-NFN+PE, HNP-NFN and NF-Transformer (Theorem
1). Our layers are in :mod:`wsnets.equivariant_linear`; this module puts the authors' own
layers from the ``nfn`` package (the ``bench`` extra) beside them:

* :func:`to_nfn` / :func:`from_nfn`: our :class:`~wsnets.weight_space.WeightSpace`
  (``(B, d_out, d_in, C)`` blocks) <-> ``nfn.common.WeightSpaceFeatures``
  (``(B, C, d_out, d_in)``);
* :class:`NFNNet`: a meta-network from ``nfn.layers`` -- ``kind="hnp"`` (``HNPLinear``),
  ``"np_pe"`` (``NPLinear`` with input/output embeddings) or ``"nft"`` (``NPAttention``
  blocks on an ``NPLinear`` embedding) -- with our invariant head (``HNPPool``/``NPPool``,
  then batch-normalised MLP) or an equivariant head to ``F`` channels, so it trains in the
  same tasks as our families (:data:`wsnets.architectures.MODELS`, names ``nfn_*``);
* :func:`span_matrix` and :func:`span_residual`: the linear part of a layer as the ``n^2 x p``
  matrix of its parameters' images, and the least-squares residual of expressing one span
  in another; :func:`span_table` runs the check in both directions (float64).

Measured (``span_table``): ``NPLinear`` and our NP layer span the same space. ``HNPLinear``
spans a strict subspace of ours (= the whole commutant): it lacks the term
``W_L[o, j] += a_o * b_{L-1}[j]`` (the bias of the last hidden layer broadcast to every
output row with one coefficient per output neuron; ``d_L`` dimensions). With that one term
added, the spans coincide in both directions.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
from torch import nn

from wsnets.dws import WeightSpaceNet, check_head, invariant_head
from wsnets.equivariant_linear import EquivariantLinear
from wsnets.weight_space import WeightSpace

KINDS = ("hnp", "np_pe", "nft")


def require_nfn():
    """Import ``nfn`` or raise one clear error naming the extra."""
    try:
        import nfn  # noqa: F401
    except ImportError as err:  # pragma: no cover - depends on the environment
        raise ImportError(
            "the nfn reference layers need the `nfn` package: pip install 'wsnets[bench]'"
        ) from err
    return nfn


def network_spec(arch: Sequence[int]):
    """``nfn.common.NetworkSpec`` of an MLP with layer widths ``arch``."""
    from nfn.common import ArraySpec, NetworkSpec

    pairs = list(zip(arch[:-1], arch[1:], strict=True))
    return NetworkSpec([ArraySpec((o, i)) for i, o in pairs], [ArraySpec((o,)) for _, o in pairs])


def to_nfn(v: WeightSpace):
    """Our layout ``(B, o, i, C)`` / ``(B, o, C)`` -> ``WeightSpaceFeatures`` ``(B, C, o, i)``."""
    from nfn.common import WeightSpaceFeatures

    return WeightSpaceFeatures(
        [w.permute(0, 3, 1, 2) for w in v.weights], [b.permute(0, 2, 1) for b in v.biases]
    )


def from_nfn(f) -> WeightSpace:
    """``WeightSpaceFeatures`` -> our :class:`WeightSpace` (inverse of :func:`to_nfn`)."""
    return WeightSpace(
        [w.permute(0, 2, 3, 1) for w in f.weights], [b.permute(0, 2, 1) for b in f.biases]
    )


class _Relu(nn.Module):
    def forward(self, f):
        return f.map(torch.relu)


class _Residual(nn.Module):
    def __init__(self, inner: nn.Module) -> None:
        super().__init__()
        self.inner = inner

    def forward(self, f):
        return f + self.inner(f)


class NFNNet(WeightSpaceNet):
    """A meta-network built from the ``nfn`` package's layers (HNP, NP+PE or NF-Transformer).

    Parameters
    ----------
    arch:
        Architecture of the input MLPs.
    kind:
        ``"hnp"`` (``HNPLinear`` + ReLU), ``"np_pe"`` (``NPLinear``, the first with learned
        input/output embeddings) or ``"nft"`` (an ``NPLinear`` embedding, then residual
        ``NPAttention`` + pointwise-linear blocks).
    hidden, depth:
        Channels and number of equivariant layers before the head.
    head, out_dim:
        ``"invariant"`` -> ``(B, out_dim)`` (pooling of the matching ``nfn`` kind, then a
        batch-normalised MLP); ``"equivariant"`` -> a weight space with ``out_dim`` channels.

    References
    ----------
    Zhou et al., "Permutation Equivariant Neural Functionals", NeurIPS 2023; "Neural
    Functional Transformers", NeurIPS 2023.

    Examples
    --------
    >>> torch.manual_seed(0) and None
    >>> net = NFNNet([2, 4, 4, 1], "hnp", hidden=4, depth=2, head="equivariant", out_dim=2)
    >>> v = WeightSpace.random([2, 4, 4, 1], batch=3)
    >>> from wsnets.weight_space import symmetry_gap
    >>> symmetry_gap(net, v, torch.Generator().manual_seed(0)) < 1e-5
    True
    """

    def __init__(
        self,
        arch: Sequence[int],
        kind: str = "hnp",
        hidden: int = 16,
        depth: int = 3,
        head: str = "invariant",
        out_dim: int = 1,
    ) -> None:
        super().__init__()
        require_nfn()
        from nfn.layers import HNPLinear, HNPPool, NPAttention, NPLinear, NPPool, Pointwise

        check_head(head, out_dim)
        if kind not in KINDS:
            raise ValueError(f"unknown nfn kind {kind!r}; choose from {KINDS}")
        self.arch, self.kind, self.head, self.out_dim = tuple(arch), kind, head, out_dim
        spec = network_spec(self.arch)
        layers: list[nn.Module] = []
        if kind == "hnp":
            chans = [1, *[hidden] * depth]
            for a, b in zip(chans[:-1], chans[1:], strict=True):
                layers += [HNPLinear(spec, a, b), _Relu()]
            out_layer = HNPLinear(spec, hidden, out_dim) if head == "equivariant" else None
            pool, n_pool = HNPPool(spec), HNPPool.get_num_outs(spec)
        else:
            layers += [NPLinear(spec, 1, hidden, io_embed=True), _Relu()]
            for _ in range(depth - 1):
                if kind == "np_pe":
                    layers += [NPLinear(spec, hidden, hidden), _Relu()]
                else:
                    heads = 2 if hidden % 2 == 0 else 1
                    layers += [_Residual(NPAttention(spec, hidden, num_heads=heads)),
                               Pointwise(spec, hidden, hidden), _Relu()]  # fmt: skip
            out_layer = NPLinear(spec, hidden, out_dim) if head == "equivariant" else None
            pool, n_pool = NPPool(spec), NPPool.get_num_outs(spec)
        self.layers = nn.Sequential(*layers)
        if head == "equivariant":
            self.out = out_layer
        else:
            self.pool = pool
            self.out = invariant_head(n_pool * hidden, hidden * 4, out_dim)

    def forward(self, v: WeightSpace):
        f = self.layers(to_nfn(self._check(v)))
        if self.head == "equivariant":
            return from_nfn(self.out(f))
        return self.out(self.pool(f).reshape(v.batch, -1))


# ------------------------------------------------------------------ span check


def span_matrix(
    apply: Callable[[WeightSpace], WeightSpace],
    params: Sequence[torch.Tensor],
    zero: Sequence[torch.Tensor],
    arch: Sequence[int],
) -> torch.Tensor:
    """``(n^2, p)``: column ``j`` = the layer's matrix on ``V = R^n`` with only scalar ``j`` of
    ``params`` set to 1 (every tensor in ``zero``, e.g. the affine biases, held at 0).

    The linear part of a layer is linear in these parameters, so the columns span the
    set of linear maps the layer can represent. Single-channel layers, float64.
    """
    n = sum(o * i + o for i, o in zip(arch[:-1], arch[1:], strict=True))
    basis = WeightSpace.unflatten(torch.eye(n, dtype=torch.float64), arch)
    cols = []
    with torch.no_grad():
        for t in (*params, *zero):
            t.zero_()
        for p in params:
            flat = p.view(-1)
            for j in range(flat.numel()):
                flat[j] = 1.0
                cols.append(apply(basis).flatten().T.reshape(-1).double())
                flat[j] = 0.0
    return torch.stack(cols, dim=1)


def span_residual(A: torch.Tensor, B: torch.Tensor) -> float:
    """``min_X ||A X - B|| / ||B||``: 0 iff every column of ``B`` lies in the span of ``A``."""
    X = torch.linalg.lstsq(A, B, driver="gelsd").solution
    return float((A @ X - B).norm() / B.norm().clamp_min(1e-300))


def _rank(m: torch.Tensor) -> int:
    s = torch.linalg.svdvals(m)
    return int((s > 1e-10 * float(s.max())).sum())


def ours_span(arch: Sequence[int], fixed: Sequence[int] | None) -> torch.Tensor:
    """:func:`span_matrix` of our :class:`EquivariantLinear` (DWS: ``fixed=None``; NP: ``()``)."""
    layer = EquivariantLinear(arch, 1, 1, fixed).double()
    return span_matrix(layer, list(layer.params), list(layer.biases), arch)


def nfn_span(arch: Sequence[int], kind: str) -> torch.Tensor:
    """:func:`span_matrix` of ``nfn``'s ``HNPLinear`` (``kind="hnp"``) or ``NPLinear`` (``"np"``)."""
    require_nfn()
    from nfn.layers import HNPLinear, NPLinear

    spec = network_spec(arch)
    layer = (HNPLinear(spec, 1, 1) if kind == "hnp" else NPLinear(spec, 1, 1)).double()
    weights = [p for name, p in layer.named_parameters() if name.endswith("weight")]
    biases = [p for name, p in layer.named_parameters() if name.endswith("bias")]
    return span_matrix(lambda v: from_nfn(layer(to_nfn(v))), weights, biases, arch)


def hnp_missing_term(arch: Sequence[int]) -> torch.Tensor:
    """``(n^2, d_L)``: the maps ``W_L[o, :] += b_{L-1}`` for each output ``o`` (see module doc)."""
    n = sum(o * i + o for i, o in zip(arch[:-1], arch[1:], strict=True))
    basis = WeightSpace.unflatten(torch.eye(n, dtype=torch.float64), arch)
    cols = []
    for o in range(arch[-1]):
        ws = [torch.zeros_like(w) for w in basis.weights]
        ws[-1][:, o, :, :] = basis.biases[-2]
        cols.append(
            WeightSpace(ws, [torch.zeros_like(b) for b in basis.biases]).flatten().T.reshape(-1)
        )
    return torch.stack(cols, dim=1)


def span_table(archs: Sequence[Sequence[int]] = ((2, 3, 4, 2), (2, 3, 2), (2, 3, 4, 3, 2))):
    """Least-squares span check, ours vs ``nfn``, both directions, for each architecture."""
    from icml26_shared.results import Table

    table = Table(
        "Layer spans: ours vs the nfn package (least squares, float64, both directions)",
        ["architecture", "layer", "rank ours", "rank nfn", "residual nfn in ours",
         "residual ours in nfn"],
        notes=(
            "residual A in B = min_X ||B X - A|| / ||A|| over the n^2 x p matrices of the "
            "layers' linear parts (one column per parameter). 'HNPLinear + missing term' adds "
            "the d_L maps W_L[o, :] += b_{L-1} that nfn's HNPLinear lacks (nfn 0.1.2)."
        ),
    )  # fmt: skip
    for arch in archs:
        arch = list(arch)
        dws, np_ = ours_span(arch, None), ours_span(arch, ())
        hnp, nfn_np = nfn_span(arch, "hnp"), nfn_span(arch, "np")
        hnp_full = torch.cat([hnp, hnp_missing_term(arch)], dim=1)
        for label, ours, theirs in (("NPLinear vs our NP layer", np_, nfn_np),
                                    ("HNPLinear vs our DWS layer", dws, hnp),
                                    ("HNPLinear + missing term vs our DWS layer", dws, hnp_full)):  # fmt: skip
            table.add_row(**{"architecture": str(arch), "layer": label,
                             "rank ours": _rank(ours), "rank nfn": _rank(theirs),
                             "residual nfn in ours": span_residual(ours, theirs),
                             "residual ours in nfn": span_residual(theirs, ours)})  # fmt: skip
    return table
