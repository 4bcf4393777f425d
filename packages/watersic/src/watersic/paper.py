"""Metadata of the watersic package for the ``icml26`` umbrella command (imports nothing heavy)."""

from icml26_shared.paper import Paper

PAPER = Paper(
    name="watersic",
    title="WaterSIC: information-theoretically (near) optimal linear layer quantization",
    cli="watersic",
    import_name="watersic",
    summary="Waterfilling successive interference cancellation for LLM weight quantization, with GPTQ/RTN baselines and entropy-coded bitstreams.",
    url="https://arxiv.org/abs/2603.04956",
    reproduce="watersic.reproduce:EXPERIMENT",
)
