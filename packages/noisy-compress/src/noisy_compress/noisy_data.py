"""Noisy samples ``Y = X + Z``: planted targets, and scikit-learn bundled data with added noise.

1. :data:`TARGETS` / :func:`make_target`: the planted clean laws of the experiments (uniform,
   uniform mixture, Gaussian, GMM, 2-D box) with the family each belongs to;
2. :func:`noisy_sample`: ``n`` draws of ``X + Z``;
3. :class:`NoisySampleDataModule`: Lightning DataModule over a planted target (train / val / test
   noisy splits; ``truth`` and ``noise`` attributes for the test metrics);
4. :class:`SklearnNoisyDataModule`: ``load_wine`` / ``load_digits`` standardised and reduced by PCA
   to ``pca_dim`` dimensions, with known Gaussian noise added (``clean_test`` kept for scoring).
"""

from __future__ import annotations

from dataclasses import dataclass

import lightning.pytorch as pl
import numpy as np
import torch
from torch.utils.data import DataLoader, TensorDataset

from .densities import BoxDensity, Density, GaussianDensity, MixtureDensity
from .families import Family, make_family
from .noise import NoiseModel, make_noise


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


class _NoisyBase(pl.LightningDataModule):
    def _loader(self, y: np.ndarray, shuffle: bool) -> DataLoader:
        ds = TensorDataset(torch.as_tensor(y, dtype=torch.float64))
        bs = len(ds) if self.batch_size <= 0 else self.batch_size
        return DataLoader(ds, batch_size=bs, shuffle=shuffle, num_workers=0)

    def train_dataloader(self):
        return self._loader(self.y_train, shuffle=False)

    def val_dataloader(self):
        return self._loader(self.y_val, shuffle=False)

    def test_dataloader(self):
        return self._loader(self.y_test, shuffle=False)

    def predict_dataloader(self):
        return self._loader(self.y_test, shuffle=False)


class NoisySampleDataModule(_NoisyBase):
    """Noisy samples of a planted target; full-batch by default (``batch_size=0``).

    Parameters
    ----------
    target:
        Name in :data:`TARGETS` (``uniform``, ``uniform-mixture``, ``gaussian``, ``gmm``, ``uniform-2d``).
    noise, noise_scale:
        ``gaussian`` (sigma), ``laplace`` (b) or ``uniform`` (h) and its scale.
    n, n_val, n_test:
        Split sizes. ``seed``: seed of the draws.

    Examples
    --------
    >>> dm = NoisySampleDataModule("uniform", n=100, n_val=10, n_test=10)
    >>> dm.setup("fit")
    >>> next(iter(dm.train_dataloader()))[0].shape
    torch.Size([100, 1])
    """

    def __init__(
        self,
        target: str = "uniform",
        noise: str = "gaussian",
        noise_scale: float = 0.1,
        n: int = 2000,
        n_val: int = 500,
        n_test: int = 2000,
        batch_size: int = 0,
        seed: int = 0,
    ):
        super().__init__()
        self.save_hyperparameters()
        self.target = make_target(target)
        self.truth = self.target.density
        self.noise = make_noise(noise, noise_scale, d=self.truth.d)
        for name, value in (("n", n), ("n_val", n_val), ("n_test", n_test)):
            if int(value) < 1:
                raise ValueError(f"{name} must be >= 1; got {value}")
        self.batch_size = int(batch_size)
        rng = np.random.default_rng(seed)
        self.x_train, self.y_train = noisy_sample(self.truth, self.noise, n, rng)
        _, self.y_val = noisy_sample(self.truth, self.noise, n_val, rng)
        self.x_test, self.y_test = noisy_sample(self.truth, self.noise, n_test, rng)

    def setup(self, stage: str | None = None) -> None:
        return None


class SklearnNoisyDataModule(_NoisyBase):
    """scikit-learn bundled data (``wine`` or ``digits``), standardised, PCA to ``pca_dim``, plus noise.

    There is no true density: ``clean_test`` holds the clean held-out points (score by their
    log-likelihood under the estimate).

    Examples
    --------
    >>> dm = SklearnNoisyDataModule("wine", pca_dim=1, noise_scale=0.3)
    >>> dm.y_train.shape[1], dm.noise
    (1, GaussianNoise(sigma=0.3, d=1))
    """

    def __init__(
        self,
        dataset: str = "wine",
        pca_dim: int = 1,
        noise_scale: float = 0.3,
        test_fraction: float = 0.3,
        batch_size: int = 0,
        seed: int = 0,
    ):
        super().__init__()
        self.save_hyperparameters()
        from sklearn.datasets import load_digits, load_wine
        from sklearn.decomposition import PCA
        from sklearn.preprocessing import StandardScaler

        loaders = {"wine": load_wine, "digits": load_digits}
        if dataset not in loaders:
            raise ValueError(f"unknown dataset {dataset!r}; choose wine or digits")
        if not 1 <= int(pca_dim) <= 2:
            raise ValueError(f"pca_dim must be 1 or 2 (grid tournaments); got {pca_dim}")
        if not 0 < test_fraction < 1:
            raise ValueError(f"test_fraction must be in (0, 1); got {test_fraction}")
        X = StandardScaler().fit_transform(loaders[dataset]().data)
        Z = PCA(int(pca_dim), random_state=0).fit_transform(X)
        Z = Z / Z.std(axis=0)
        rng = np.random.default_rng(seed)
        Z = Z[rng.permutation(len(Z))]
        n_test = max(1, int(round(test_fraction * len(Z))))
        self.noise = make_noise("gaussian", noise_scale, d=int(pca_dim))
        self.truth = None
        self.clean_train, self.clean_test = Z[n_test:], Z[:n_test]
        self.y_train = self.clean_train + self.noise.sample(len(self.clean_train), rng)
        self.y_test = self.clean_test + self.noise.sample(n_test, rng)
        self.y_val = self.y_test
        self.batch_size = int(batch_size)

    def setup(self, stage: str | None = None) -> None:
        return None
