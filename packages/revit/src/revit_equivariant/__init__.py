"""ReViT: Rotational-equivariant Vision Transformers for Neural PDE Solvers.

ReViT: a C4/O-equivariant Swin-style vision transformer for neural PDE solvers
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("revit-equivariant")
except PackageNotFoundError:  # running from a source tree without installing
    __version__ = "0.0.0"
