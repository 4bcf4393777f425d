"""Metadata of the lorfs package for the ``icml26`` umbrella command (imports nothing heavy)."""

from icml26_shared.paper import Paper

PAPER = Paper(
    name="lorfs",
    title="Overcoming PINNs Failure Modes in High Dimension with Low-Rank Fourier Sum",
    cli="lorfs",
    import_name="lorfs",
    summary=(
        "LoRFS: PDE solutions as low-rank sums of separable Fourier series, "
        "trained on closed-form (sampling-free) physics losses."
    ),
    url="https://openreview.net/forum?id=fq3yjso8Tn",
    reproduce="lorfs.reproduce:EXPERIMENT",
)
