"""Metadata of the eostok package for the ``icml26`` umbrella command (imports nothing heavy)."""

from icml26_shared.paper import Paper

PAPER = Paper(
    name="eostok",
    title="End-to-end autoregressive image generation with a 1D semantic tokenizer (EOSTok)",
    cli="eostok",
    import_name="eostok",
    summary="EOSTok: a 1D TiTok-style tokenizer trained end to end with an autoregressive image generator",
    url="https://arxiv.org/abs/2605.00503",
    reproduce="eostok.reproduce:EXPERIMENT",
)
