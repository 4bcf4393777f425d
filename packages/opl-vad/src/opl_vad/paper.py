"""Metadata of the opl-vad package for the ``icml26`` umbrella command (imports nothing heavy)."""

from icml26_shared.paper import Paper

PAPER = Paper(
    name="opl-vad",
    title="Orthogonal Projection Layer for privacy-aware video anomaly detection",
    cli="opl-vad",
    import_name="opl_vad",
    summary="Orthogonal Projection Layer (OPL) and Guided OPL for privacy-aware weakly supervised video anomaly detection",
    url="https://icml.cc/virtual/2026",
    reproduce="opl_vad.reproduce:EXPERIMENT",
)
