"""Provable Bounds for the Learnability of Sample-Compressible Families from Noisy Samples.

Learning sample-compressible distribution families from noisy samples: perturbation-quantised
compression candidates, Scheffe/minimum-distance tournaments on noise-convolved candidates, and
Fourier l2/TV bounds. The learner is :func:`learn`; families come from :func:`make_family`,
noise laws from :func:`make_noise`, planted targets from :func:`make_target`.
"""

import importlib
from importlib.metadata import PackageNotFoundError, version

# Imported on first use (PEP 562), so that the command line starts without numpy/torch.
_LAZY = {
    "ConvolvedMLEModule": ".lightning",
    "TournamentModule": ".lightning",
    "learn": ".learner",
    "make_family": ".families",
    "make_noise": ".noise",
    "make_target": ".noisy_data",
    "noisy_sample": ".noisy_data",
    "tv_distance": ".metrics",
}


def __getattr__(name: str):
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


try:
    __version__ = version("noisy-compress")
except PackageNotFoundError:  # running from a source tree without installing
    __version__ = "0.0.0"

__all__ = sorted(_LAZY)
