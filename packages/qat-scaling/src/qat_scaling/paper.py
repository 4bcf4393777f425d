"""Metadata of the qat-scaling package for the ``icml26`` umbrella command (imports nothing heavy)."""

from icml26_shared.paper import Paper

PAPER = Paper(
    name="qat-scaling",
    title="Scaling Law for Quantization-Aware Training",
    cli="qat-scaling",
    import_name="qat_scaling",
    summary="A unified scaling law for W4A4 quantization-aware training: fit, decompose and probe QAT error",
    url="https://arxiv.org/abs/2505.14302",
    reproduce="qat_scaling.reproduce:EXPERIMENT",
)
