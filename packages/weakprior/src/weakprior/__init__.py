"""Weak diffusion priors for inverse problems.

Inverse problems with weak or mismatched diffusion priors (Jia, Yuan, Liu, Shen, Wang, ICML 2026,
arXiv:2601.22443): the paper's solver :class:`NoiseOptimisationSolver` (Adam on the sphere +
hold-out early stopping through the 3-step DDIM :class:`FewStepDDIM`), the anchors
:class:`DPSSolver` and :class:`TVSolver`, the operators of :mod:`.operators`, and small DDPM
priors (:class:`DDPMPriorModule`, :func:`train_prior`).
"""

import importlib
from importlib.metadata import PackageNotFoundError, version

# Imported on first use (PEP 562), so that the command line starts without torch.
_LAZY = {
    "DDPMPriorModule": ".lightning",
    "DPSSolver": ".dps",
    "FewStepDDIM": ".ddim",
    "NoiseOptimisationSolver": ".noise_optimisation",
    "TVSolver": ".total_variation",
    "load_domain": ".image_domains",
    "measure": ".operators",
    "train_prior": ".lightning",
}


def __getattr__(name: str):
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


try:
    __version__ = version("weakprior")
except PackageNotFoundError:  # running from a source tree without installing
    __version__ = "0.0.0"

__all__ = sorted(_LAZY)
