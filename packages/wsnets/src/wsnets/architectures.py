"""Registry of the weight-space architectures compared by the paper, and budget matching.

``MODELS`` names every family: ``dws`` (DWSNets), ``hnp`` (HNP-NFN), ``np`` (NP-NFN, no
positional encoding: over-symmetric), ``np_pe`` (NP-NFN+PE), ``nft`` (NF-Transformer),
``gmn`` (neural-graph message passing),
``mlp`` (flat MLP; ``mlp_aug`` is the same network trained with permutation augmentation)
``canon`` (bias-sort canonicalisation + MLP) and ``statnn`` (per-block statistics + MLP,
invariant head only); ``nfn_hnp``, ``nfn_np_pe``, ``nfn_nft`` are the same families built
from the ``nfn`` package's layers (:mod:`wsnets.nfn_reference`, the ``bench`` extra). :func:`build_model` builds one;
:func:`matched_hidden` finds the largest width whose parameter count stays within a budget
(used to give ``F > 1`` output ensembles no more parameters than ``F = 1``).
"""

from __future__ import annotations

from collections.abc import Sequence

from wsnets.baselines import CanonicalMLP, FlatMLP, StatNN
from wsnets.dws import NPNFN, DWSNet, WeightSpaceNet
from wsnets.neural_graph import GMN
from wsnets.nf_transformer import HNPNFN, NFT

MODELS = ("dws", "hnp", "np", "np_pe", "nft", "gmn", "mlp", "mlp_aug", "canon")
#: Reference meta-networks built from the ``nfn`` package (``bench`` extra; :mod:`wsnets.nfn_reference`).
NFN_MODELS = ("nfn_hnp", "nfn_np_pe", "nfn_nft")
INVARIANT_ONLY = ("statnn",)  # families with an invariant head only
EQUIVARIANT = ("dws", "hnp", "np_pe", "nft", "gmn")
#: Families that accept several input channels per weight (CNN kernels, :mod:`wsnets.model_zoo`).
MULTI_CHANNEL = ("dws", "hnp", "nft", "gmn", "mlp", "mlp_aug", "canon", "statnn")


def build_model(
    name: str,
    arch: Sequence[int],
    hidden: int,
    depth: int,
    head: str,
    out_dim: int,
    in_channels: int = 1,
) -> WeightSpaceNet:
    """Build model ``name`` (one of :data:`MODELS`).

    ``in_channels`` > 1 encodes CNN kernels as channels (:mod:`wsnets.model_zoo`); the
    families that support it are :data:`MULTI_CHANNEL`.

    Examples
    --------
    >>> build_model("dws", [2, 4, 4, 1], 4, 2, "invariant", 10).n_params() > 0
    True
    """
    if in_channels != 1 and name not in MULTI_CHANNEL:
        raise ValueError(
            f"model {name!r} takes one channel per weight; for kernels as channels "
            f"(in_channels={in_channels}) choose from {MULTI_CHANNEL}"
        )
    c = in_channels
    if name == "dws":
        return DWSNet(arch, hidden, depth, head, out_dim, c)
    if name == "hnp":
        return HNPNFN(arch, hidden, depth, head, out_dim, c)
    if name == "nft":
        return NFT(arch, hidden, depth, head, out_dim, c)
    if name in ("np", "np_pe"):
        return NPNFN(arch, hidden, depth, head, out_dim, pos_enc=name == "np_pe")
    if name == "gmn":
        return GMN(arch, hidden, depth, head, out_dim, c)
    if name in ("mlp", "mlp_aug"):
        return FlatMLP(arch, hidden, depth, head, out_dim, c)
    if name == "canon":
        return CanonicalMLP(arch, hidden, depth, head, out_dim, c)
    if name == "statnn":
        return StatNN(arch, hidden, depth, head, out_dim, c)
    if name in NFN_MODELS:
        from wsnets.nfn_reference import NFNNet

        return NFNNet(arch, name.removeprefix("nfn_"), hidden, depth, head, out_dim)
    raise ValueError(f"unknown model {name!r}; choose from {MODELS + INVARIANT_ONLY + NFN_MODELS}")


def n_params(
    name: str, arch: Sequence[int], hidden: int, depth: int, head: str, out_dim: int
) -> int:
    return build_model(name, arch, hidden, depth, head, out_dim).n_params()


def matched_hidden(
    name: str, arch: Sequence[int], hidden: int, depth: int, F: int, budget: int | None = None
) -> int:
    """Largest width ``<= hidden`` whose ``F``-output editor has at most ``budget`` parameters.

    ``budget`` defaults to the parameter count of the ``F = 1`` editor at width ``hidden``
    (the paper's matched-budget protocol).
    """
    if F < 1:
        raise ValueError(f"the number of ensemble members F must be >= 1, got {F}")
    if budget is None:
        budget = n_params(name, arch, hidden, depth, "equivariant", 1)
    for h in range(hidden, 0, -1):
        if n_params(name, arch, h, depth, "equivariant", F) <= budget:
            return h
    raise ValueError(f"no width of {name} with F={F} fits a budget of {budget} parameters")


LABELS = {
    "mlp": "flat MLP",
    "mlp_aug": "flat MLP + perm. aug.",
    "canon": "canonicalise + MLP",
    "statnn": "StatNN (block statistics + MLP)",
    "dws": "DWS (= HNP-NFN)",
    "hnp": "HNP-NFN",
    "np": "NP-NFN",
    "np_pe": "NP-NFN+PE",
    "nft": "NF-Transformer",
    "gmn": "GMN (neural graph)",
    "nfn_hnp": "HNP-NFN (nfn package)",
    "nfn_np_pe": "NP-NFN+PE (nfn package)",
    "nfn_nft": "NF-Transformer (nfn package)",
}
#: The families whose symmetry :func:`symmetry_table` checks.
CHECKED = ("mlp", "mlp_aug", "canon", "statnn", "dws", "hnp", "np_pe", "nft", "gmn")


def symmetry_error(name: str, arch: Sequence[int], width: int, head: str, seed: int) -> float:
    """:func:`~wsnets.weight_space.symmetry_gap` of a fresh model (family ``name``, ``head``).

    ``max |f(rho(tau) v) - f(v)| / max |f(v)|``; ``head="equivariant"`` compares against
    ``rho(tau) f(v)``; ``tau`` permutes the hidden neurons of each of 4 random weight-space
    inputs (seeded by ``seed``).

    Examples
    --------
    >>> symmetry_error("dws", [2, 4, 4, 1], 4, "invariant", 0) < 1e-5
    True
    """
    import torch

    from wsnets.weight_space import WeightSpace, symmetry_gap

    torch.manual_seed(seed)
    depth = 2 if name in ("mlp", "mlp_aug", "canon") else 3
    net = build_model(name, arch, width, depth, head, 3).eval()
    v = WeightSpace.random(arch, batch=4)
    return symmetry_gap(net, v, torch.Generator().manual_seed(seed))


def symmetry_table(arch: Sequence[int], seed: int = 0, width: int = 4):
    """:func:`symmetry_error` of every family in :data:`CHECKED`, both heads (float32)."""
    from icml26_shared.results import Table

    table = Table(
        f"Exact symmetry checks of every family, freshly initialised at width {width} "
        "(random hidden-neuron permutations)",
        ["model", "invariant head rel. error", "equivariant head rel. error"],
        notes="max |f(rho(tau) v) - f(v)| / max |f(v)| (equivariant: against rho(tau) f(v)), "
        "float32.",
    )
    for name in CHECKED:
        row = {"invariant head rel. error": symmetry_error(name, arch, width, "invariant", seed)}
        if name not in INVARIANT_ONLY:
            row["equivariant head rel. error"] = symmetry_error(
                name, arch, width, "equivariant", seed
            )
        table.add_row(model=LABELS[name].replace(" (= HNP-NFN)", ""), **row)
    return table
