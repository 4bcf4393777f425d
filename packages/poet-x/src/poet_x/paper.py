"""Metadata of the poet-x package for the ``icml26`` umbrella command (imports nothing heavy)."""

from icml26_shared.paper import Paper

PAPER = Paper(
    name="poet-x",
    title="POET-X: Memory-efficient LLM Training by Scaling Orthogonal Transformation",
    cli="poet-x",
    import_name="poet_x",
    summary="POET-X: memory-efficient orthogonal equivalence training (block Cayley rotations) for LLMs",
    url="https://arxiv.org/abs/2603.05500",
    reproduce="poet_x.reproduce:EXPERIMENT",
)
