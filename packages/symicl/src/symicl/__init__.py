"""Symmetry Reveals Layerwise Dynamics: How Transformers Perform In-Context Classification.

Symmetry-constrained transformers for in-context classification and the update rule extracted from them
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("symicl")
except PackageNotFoundError:  # running from a source tree without installing
    __version__ = "0.0.0"
