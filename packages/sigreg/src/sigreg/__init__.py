"""Stable Deep Reinforcement Learning via Isotropic Gaussian Representations.

Sketched Isotropic Gaussian Regularization (SIGReg) for deep RL under non-stationarity
(Saheb et al., ICML 2026, arXiv 2602.19373): the statistic :func:`sigreg` and its module
:class:`SIGReg` (:mod:`.sigreg_loss`), and the LightningModules that train with it
(:mod:`.lightning`).
"""

import importlib
from importlib.metadata import PackageNotFoundError, version

# Imported on first use (PEP 562), so that the command line starts without torch.
_LAZY = {
    "SIGReg": ".sigreg_loss",
    "sigreg": ".sigreg_loss",
    "combine_losses": ".sigreg_loss",
    "gaussian_expectation": ".sigreg_loss",
    "ShuffledLabelClassifier": ".lightning",
    "DigitsShuffleDataModule": ".lightning",
    "PQNModule": ".lightning",
    "PPOModule": ".lightning",
    "RolloutDataModule": ".lightning",
}


def __getattr__(name: str):
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


try:
    __version__ = version("sigreg")
except PackageNotFoundError:  # running from a source tree without installing
    __version__ = "0.0.0"

__all__ = sorted(_LAZY)
