"""Stable Deep Reinforcement Learning via Isotropic Gaussian Representations.

Sketched Isotropic Gaussian Regularization (SIGReg) for deep RL under non-stationarity
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("sigreg")
except PackageNotFoundError:  # running from a source tree without installing
    __version__ = "0.0.0"
