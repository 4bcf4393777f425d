"""Metadata of the symicl package for the ``icml26`` umbrella command (imports nothing heavy)."""

from icml26_shared.paper import Paper

PAPER = Paper(
    name="symicl",
    title="Symmetry Reveals Layerwise Dynamics: How Transformers Perform In-Context Classification",
    cli="symicl",
    import_name="symicl",
    summary="Symmetry-constrained transformers for in-context classification and the update rule extracted from them",
    url="https://arxiv.org/abs/2604.11613",
    reproduce="symicl.reproduce:EXPERIMENT",
)
