"""Weak diffusion priors for inverse problems.

Inverse problems with weak or mismatched diffusion priors: DPS-style solvers and the when-does-it-work analysis
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("weakprior")
except PackageNotFoundError:  # running from a source tree without installing
    __version__ = "0.0.0"
