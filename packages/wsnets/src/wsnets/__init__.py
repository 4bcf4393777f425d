"""On the Expressive Power of Permutation-Equivariant Weight-Space Networks.

Permutation-equivariant weight-space networks (DWSNets, NFN, neural-graph GNNs) and the output-ensemble expressivity fix
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("wsnets")
except PackageNotFoundError:  # running from a source tree without installing
    __version__ = "0.0.0"
