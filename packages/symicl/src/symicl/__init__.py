"""Symmetry Reveals Layerwise Dynamics: How Transformers Perform In-Context Classification.

Symmetry-constrained transformers for in-context classification and the update rule extracted
from them (Lutz et al., ICML 2026, arXiv 2604.11613): :class:`EquivariantICLTransformer`,
:class:`LinearTaskSampler`, :func:`extract_recursion`, and the LightningModule that trains the
transformer (:mod:`.lightning`).
"""

import importlib
from importlib.metadata import PackageNotFoundError, version

# Imported on first use (PEP 562), so that the command line starts without torch.
_LAZY = {
    "EquivariantICLTransformer": ".transformer",
    "LinearTaskSampler": ".episodes",
    "one_hot_labels": ".episodes",
    "Recursion": ".recursion",
    "extract_recursion": ".recursion",
    "ICLClassifierModule": ".lightning",
    "LinearTaskDataModule": ".lightning",
}


def __getattr__(name: str):
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


try:
    __version__ = version("symicl")
except PackageNotFoundError:  # running from a source tree without installing
    __version__ = "0.0.0"

__all__ = sorted(_LAZY)
