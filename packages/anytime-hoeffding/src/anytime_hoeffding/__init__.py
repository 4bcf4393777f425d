"""Correcting Split Selection in Online Decision Trees via Anytime-Valid Inference.

Hoeffding trees whose split decisions are anytime-valid (Amoukou, Mishra & Veloso,
ICML 2026, arXiv:2605.31239): :class:`AnytimeHoeffdingTreeClassifier`, the forest
:class:`AnytimeARFClassifier`, and the betting e-processes of :mod:`.eprocess`.
"""

from importlib.metadata import PackageNotFoundError, version

from .eprocess import BettingEProcess, EProcessBank, MixtureEProcess, ville_threshold
from .forest import AnytimeARFClassifier
from .tree import AnytimeHoeffdingTreeClassifier

try:
    __version__ = version("anytime-hoeffding")
except PackageNotFoundError:  # running from a source tree without installing
    __version__ = "0.0.0"

__all__ = [
    "AnytimeARFClassifier",
    "AnytimeHoeffdingTreeClassifier",
    "BettingEProcess",
    "EProcessBank",
    "MixtureEProcess",
    "ville_threshold",
]
