"""Orthogonal Projection Layer for privacy-aware video anomaly detection.

Orthogonal Projection Layer (OPL) and Guided OPL for privacy-aware weakly supervised video anomaly detection
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("opl-vad")
except PackageNotFoundError:  # running from a source tree without installing
    __version__ = "0.0.0"
