"""Metadata of the noisy-compress package for the ``icml26`` umbrella command (imports nothing heavy)."""

from icml26_shared.paper import Paper

PAPER = Paper(
    name="noisy-compress",
    title="Provable Bounds for the Learnability of Sample-Compressible Families from Noisy Samples",
    cli="noisy-compress",
    import_name="noisy_compress",
    summary="Learning sample-compressible distribution families from noisy samples: perturbation-quantised compression candidates, Scheffe/minimum-distance tournaments on noise-convolved candidates, and Fourier l2/TV bounds.",
    url="https://openreview.net/forum?id=fRonOqrKWT",
    reproduce="noisy_compress.reproduce:EXPERIMENT",
)
