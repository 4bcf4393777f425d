"""Provable Bounds for the Learnability of Sample-Compressible Families from Noisy Samples.

Learning sample-compressible distribution families from noisy samples: perturbation-quantised compression candidates, Scheffe/minimum-distance tournaments on noise-convolved candidates, and Fourier l2/TV bounds.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("noisy-compress")
except PackageNotFoundError:  # running from a source tree without installing
    __version__ = "0.0.0"
