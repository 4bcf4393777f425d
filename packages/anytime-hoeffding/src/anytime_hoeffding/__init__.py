"""Correcting Split Selection in Online Decision Trees via Anytime-Valid Inference.

Hoeffding trees whose split decisions are anytime-valid (Amoukou, Mishra & Veloso,
ICML 2026, arXiv:2605.31239): :class:`AnytimeHoeffdingTreeClassifier`, the forest
:class:`AnytimeARFClassifier`, and the betting e-processes of :mod:`.eprocess`.
"""

import importlib
from importlib.metadata import PackageNotFoundError, version

# Imported on first use (PEP 562), so that the command line starts without numba.
_LAZY = {
    "AnytimeARFClassifier": ".forest",
    "AnytimeHoeffdingTreeClassifier": ".tree",
    "BettingEProcess": ".eprocess",
    "EProcessBank": ".eprocess",
    "MixtureEProcess": ".eprocess",
    "ville_threshold": ".eprocess",
}


def __getattr__(name: str):
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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
