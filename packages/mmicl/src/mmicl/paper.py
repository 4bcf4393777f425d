"""Metadata of the mmicl package for the ``icml26`` umbrella command (imports nothing heavy)."""

from icml26_shared.paper import Paper

PAPER = Paper(
    name="mmicl",
    title="Dissecting Multimodal In-Context Learning: Modality Asymmetries and Circuit Dynamics in Modern Transformers",
    cli="mmicl",
    import_name="mmicl",
    summary="A controlled testbed for unimodal and multimodal in-context learning in small modern transformers",
    url="https://arxiv.org/abs/2601.20796",
    reproduce="mmicl.reproduce:EXPERIMENT",
)
