"""Metadata of the wsnets package for the ``icml26`` umbrella command (imports nothing heavy)."""

from icml26_shared.paper import Paper

PAPER = Paper(
    name="wsnets",
    title="On the Expressive Power of Permutation-Equivariant Weight-Space Networks",
    cli="wsnets",
    import_name="wsnets",
    summary="Permutation-equivariant weight-space networks (DWSNets, NFN, neural-graph GNNs) and the output-ensemble expressivity fix",
    url="https://arxiv.org/abs/2602.01083",
    reproduce="wsnets.reproduce:EXPERIMENT",
)
