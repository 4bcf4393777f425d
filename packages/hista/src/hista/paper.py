"""Metadata of the hista package for the ``icml26`` umbrella command (imports nothing heavy)."""

from icml26_shared.paper import Paper

PAPER = Paper(
    name="hista",
    title="Hista and Numca: Estimate State Value Effectively for LLM Reinforcement Learning",
    cli="hista",
    import_name="hista",
    summary="State-value estimation for LLM RL: the SVEB benchmark, Numca milestones and Hista hidden-state k-NN values",
    url="https://arxiv.org/abs/2605.29782",
    reproduce="hista.reproduce:EXPERIMENT",
)
