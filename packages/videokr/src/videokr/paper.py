"""Metadata of the videokr package for the ``icml26`` umbrella command (imports nothing heavy)."""

from icml26_shared.paper import Paper

PAPER = Paper(
    name="videokr",
    title="VideoKR: knowledge- and reasoning-intensive video understanding",
    cli="videokr",
    import_name="videokr",
    summary="The VideoKR corpus pipeline, VideoKR-Eval harness and SFT-to-GRPO recipe for knowledge-intensive video reasoning",
    url="https://arxiv.org/abs/2606.05259",
    reproduce="videokr.reproduce:EXPERIMENT",
)
