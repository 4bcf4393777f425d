"""Noisy samples ``Y = X + Z``: planted targets, and scikit-learn bundled data with added noise.

1. :data:`TARGETS` / :func:`make_target`: the planted clean laws of the experiments (uniform,
   uniform mixtures with equal and unequal weights, Gaussian, GMM, 2-D box) with the family each belongs to;
2. :func:`noisy_sample`: ``n`` draws of ``X + Z``;

The Lightning DataModules over these samples (a planted target, scikit-learn data with added
noise, your own array) live in :mod:`noisy_compress.lightning`. This module imports no torch.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .densities import BoxDensity, Density, GaussianDensity, MixtureDensity
from .families import Family, make_family
from .noise import NoiseModel


@dataclass(frozen=True)
class Target:
    """A planted clean law and the family (``name``, ``k``) the learner is told to use."""

    name: str
    density: Density
    family: str
    k: int

    def make_family(self) -> Family:
        return make_family(self.family, d=self.density.d, k=self.k)


def _targets() -> dict[str, Target]:
    u = BoxDensity([0.0], [1.0])
    return {
        "uniform": Target("uniform", u, "uniform", 1),
        "uniform-mixture": Target(
            "uniform-mixture",
            MixtureDensity([0.5, 0.5], [u, BoxDensity([1.5], [2.5])]),
            "uniform",
            2,
        ),
        "uniform-mixture-unequal": Target(
            "uniform-mixture-unequal",
            MixtureDensity([0.3, 0.7], [u, BoxDensity([1.5], [2.5])]),
            "uniform",
            2,
        ),
        "gaussian": Target("gaussian", GaussianDensity([0.0], [[1.0]]), "gaussian", 1),
        "gmm": Target(
            "gmm",
            MixtureDensity(
                [0.4, 0.6], [GaussianDensity([-1.5], [[0.25]]), GaussianDensity([1.0], [[0.49]])]
            ),
            "gaussian",
            2,
        ),
        "uniform-2d": Target("uniform-2d", BoxDensity([0.0, 0.0], [1.0, 2.0]), "uniform", 1),
    }


TARGETS = _targets()


def make_target(name: str) -> Target:
    """Planted target by name (see :data:`TARGETS`).

    Examples
    --------
    >>> make_target("gmm").k
    2
    """
    if name not in TARGETS:
        raise ValueError(f"unknown target {name!r}; choose from {', '.join(TARGETS)}")
    return TARGETS[name]


def noisy_sample(
    f: Density, noise: NoiseModel, n: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """``(x, y)``: ``n`` clean draws of ``f`` and their noisy versions ``y = x + z``.

    Examples
    --------
    >>> from noisy_compress.noise import GaussianNoise
    >>> x, y = noisy_sample(BoxDensity([0.0], [1.0]), GaussianNoise(0.0), 5, np.random.default_rng(0))
    >>> bool(np.array_equal(x, y))
    True
    """
    if n < 1:
        raise ValueError(f"sample size n must be >= 1; got {n}")
    if f.d != noise.d:
        raise ValueError(f"target has dimension {f.d} but noise has dimension {noise.d}")
    x = f.sample(n, rng)
    return x, x + noise.sample(n, rng)
