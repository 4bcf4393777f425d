"""Training in one place: the LightningModules and DataModules of noisy-compress.

Modules:

* :class:`ConvolvedMLEModule` -- convolved-likelihood MLE: maximise
  ``sum_i log (f_theta * g)(y_i)`` over a 1-D k-mixture, in closed form and differentiable.
  The parametric anchor of the paper's comparison (and the natural refinement of a tournament
  winner):

  1. Gaussian component ``N(mu, s^2)`` with Gaussian noise ``sigma``: ``N(y; mu, s^2 + sigma^2)``;
     with Laplace noise ``b``: the exponentially-modified form of :mod:`noisy_compress.convolution`;
  2. uniform component ``U[c - w, c + w]``: ``[G(y - c + w) - G(y - c - w)] / 2w`` with ``G`` the
     noise CDF (Gaussian or Laplace);
  3. mixture weights ``softmax(logits)``; the loss is the mean negative log-likelihood.

  Full-batch Adam through the Trainer (:meth:`ConvolvedMLEModule.fit_full_batch` runs it on an
  array with :func:`icml26_shared.trainer.quiet_trainer`); ``test_step`` reports TV and ell_2
  against the datamodule's planted ``truth`` through torchmetrics metrics.
* :class:`TournamentModule` -- the noisy compression learner as a (non-gradient) module: ``fit``
  collects the training split and runs :func:`noisy_compress.learner.learn` once at the end of
  the epoch; the winner is stored in the checkpoint. ``forward(y)`` is the log-density of the
  noise-convolved winner at ``y``; ``test_step`` reports TV and ell_2 between the clean estimate
  and the datamodule's planted ``truth``, plus the held-out noisy NLL.

DataModules (full-batch by default): :class:`NoisySampleDataModule` (noisy samples of a planted
target, :func:`noisy_compress.noisy_data.noisy_sample`), :class:`SklearnNoisyDataModule`
(``load_wine`` / ``load_digits`` standardised, PCA to ``pca_dim``, known Gaussian noise added;
``clean_test`` kept for scoring) and :class:`SampleArrayDataModule` (your own noisy samples).
"""

from __future__ import annotations

import math

import lightning.pytorch as pl
import numpy as np
import torch
from torch.utils.data import DataLoader, TensorDataset

from .convolution import convolved_pdf
from .densities import BoxDensity, Density, GaussianDensity, MixtureDensity, density_from_params
from .families import make_family
from .learner import LearnResult, learn
from .metrics import L2Distance, TotalVariation, evaluation_grid
from .noise import make_noise
from .noisy_data import make_target, noisy_sample

LOG_2PI = math.log(2 * math.pi)


def _log_gauss_cdf_diff(u: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """``log(Phi(u) - Phi(v))`` for ``u > v``, stable in both tails."""
    flip = (u + v) > 0  # use symmetry Phi(u) - Phi(v) = Phi(-v) - Phi(-u) on the right
    a = torch.where(flip, -v, u)
    b = torch.where(flip, -u, v)
    la, lb = torch.special.log_ndtr(a), torch.special.log_ndtr(b)
    return la + torch.log1p(-torch.exp(torch.clamp(lb - la, max=-1e-12)))


def _laplace_cdf(z: torch.Tensor, b: float) -> torch.Tensor:
    e = 0.5 * torch.exp(-z.abs() / b)
    return torch.where(z < 0, e, 1 - e)


class ConvolvedMLEModule(pl.LightningModule):
    """MLE of a 1-D k-mixture (Gaussian or uniform components) under known additive noise.

    Parameters
    ----------
    component:
        ``gaussian`` or ``uniform``.
    k:
        Number of components (>= 1).
    noise, noise_scale:
        ``gaussian`` (sigma) or ``laplace`` (b); uniform components need ``noise_scale > 0``.
    lr:
        Adam learning rate.
    init_from_data:
        At ``fit`` start, place the components at quantiles of the training data.

    Examples
    --------
    >>> m = ConvolvedMLEModule("gaussian", k=1, noise_scale=0.0)
    >>> round(float(m(torch.zeros(1, 1, dtype=torch.float64))[0]), 4)  # log N(0; 0, 1)
    -0.9189
    """

    def __init__(
        self,
        component: str = "gaussian",
        k: int = 1,
        noise: str = "gaussian",
        noise_scale: float = 0.1,
        lr: float = 0.05,
        init_from_data: bool = True,
    ):
        super().__init__()
        if component not in ("gaussian", "uniform"):
            raise ValueError(f"component must be 'gaussian' or 'uniform'; got {component!r}")
        if noise not in ("gaussian", "laplace"):
            raise ValueError(f"noise must be 'gaussian' or 'laplace'; got {noise!r}")
        if int(k) < 1:
            raise ValueError(f"number of mixture components k must be >= 1; got {k}")
        if not math.isfinite(noise_scale) or noise_scale < 0:
            raise ValueError(f"noise scale must be >= 0; got {noise_scale}")
        if component == "uniform" and noise_scale == 0:
            raise ValueError(
                "uniform components need noise_scale > 0 (the likelihood is not differentiable)"
            )
        self.save_hyperparameters()
        dt = torch.float64
        self.logits = torch.nn.Parameter(torch.zeros(k, dtype=dt))
        self.loc = torch.nn.Parameter(
            torch.linspace(-1.0, 1.0, k, dtype=dt) if k > 1 else torch.zeros(1, dtype=dt)
        )
        self.log_scale = torch.nn.Parameter(torch.zeros(k, dtype=dt))
        self.test_tv, self.test_l2 = TotalVariation(), L2Distance()

    # -- model
    def component_log_density(self, y: torch.Tensor) -> torch.Tensor:
        """``(B, k)`` log-densities of the convolved components at ``y``."""
        y = y.reshape(-1, 1).to(self.loc.dtype)
        scale = torch.exp(self.log_scale)[None, :]
        mu = self.loc[None, :]
        s = float(self.hparams.noise_scale)
        if self.hparams.component == "gaussian":
            if self.hparams.noise == "gaussian" or s == 0:
                var = scale**2 + s**2
                return -0.5 * ((y - mu) ** 2 / var + torch.log(var) + LOG_2PI)
            z = y - mu
            c = scale**2 / (2 * s**2)
            t1 = c - z / s + torch.special.log_ndtr(z / scale - scale / s)
            t2 = c + z / s + torch.special.log_ndtr(-z / scale - scale / s)
            return torch.logaddexp(t1, t2) - math.log(2 * s)
        lo, hi = mu - scale, mu + scale
        if self.hparams.noise == "gaussian":
            logdiff = _log_gauss_cdf_diff((y - lo) / s, (y - hi) / s)
        else:
            diff = _laplace_cdf(y - lo, s) - _laplace_cdf(y - hi, s)
            logdiff = torch.log(diff.clamp(min=1e-300))
        return logdiff - torch.log(2 * scale)

    def forward(self, y: torch.Tensor) -> torch.Tensor:
        """Log-density of the convolved mixture at ``y`` (shape ``(B,)``)."""
        logw = torch.log_softmax(self.logits, dim=0)[None, :]
        return torch.logsumexp(logw + self.component_log_density(y), dim=1)

    def to_density(self) -> Density:
        """The fitted clean mixture as a :class:`~noisy_compress.densities.Density`."""
        w = torch.softmax(self.logits, 0).detach().cpu().numpy()
        mu = self.loc.detach().cpu().numpy()
        sc = np.exp(self.log_scale.detach().cpu().numpy())
        if self.hparams.component == "gaussian":
            comps = [GaussianDensity([m], [[s**2]]) for m, s in zip(mu, sc, strict=True)]
        else:
            comps = [BoxDensity([m - s], [m + s]) for m, s in zip(mu, sc, strict=True)]
        return comps[0] if len(comps) == 1 else MixtureDensity(w, comps)

    def init_from(self, y: np.ndarray) -> None:
        """Place the components at the ``(j + 1/2)/k`` quantiles of ``y`` with scale ``std/k``."""
        y = np.asarray(y, dtype=float).reshape(-1)
        k = self.hparams.k
        qs = np.quantile(y, (np.arange(k) + 0.5) / k)
        spread = max(float(np.std(y)) / k, 1e-3)
        with torch.no_grad():
            self.loc.copy_(torch.as_tensor(qs, dtype=self.loc.dtype))
            self.log_scale.fill_(
                math.log(spread * (1.0 if self.hparams.component == "gaussian" else 1.2))
            )
            self.logits.zero_()

    def fit_full_batch(self, y: np.ndarray, steps: int = 400) -> ConvolvedMLEModule:
        """Fit on the noisy samples ``y``: ``steps`` full-batch Adam steps through the Trainer.

        The same objective and optimiser as ``noisy-compress fit`` (the quiet Trainer of
        :func:`icml26_shared.trainer.quiet_trainer` over a :class:`SampleArrayDataModule`, one
        batch of all the samples per step); returns ``self``.

        Examples
        --------
        >>> rng = np.random.default_rng(0)
        >>> y = rng.normal(1.0, 1.0, (2000, 1))
        >>> m = ConvolvedMLEModule("gaussian", noise_scale=0.0, lr=0.1).fit_full_batch(y, 200)
        >>> round(float(m.loc[0]), 1)
        1.0
        """
        from icml26_shared.progress import quiet_lightning
        from icml26_shared.trainer import quiet_trainer

        with quiet_lightning():  # the fit is a step of a larger computation: no Trainer chatter
            trainer = quiet_trainer(
                max_epochs=-1, max_steps=int(steps), limit_val_batches=0, num_sanity_val_steps=0
            )
            trainer.fit(self, datamodule=SampleArrayDataModule(y))
        return self

    # -- Lightning
    def on_fit_start(self) -> None:
        dm = getattr(self.trainer, "datamodule", None)
        if self.hparams.init_from_data and dm is not None and hasattr(dm, "y_train"):
            self.init_from(dm.y_train)

    def training_step(self, batch, batch_idx):
        loss = -self(batch[0]).mean()
        self.log("train_nll", loss, prog_bar=True, batch_size=len(batch[0]))
        return loss

    def validation_step(self, batch, batch_idx):
        self.log("val_nll", -self(batch[0]).mean(), batch_size=len(batch[0]))

    def test_step(self, batch, batch_idx):
        self.log("test_nll", -self(batch[0]).mean(), batch_size=len(batch[0]))
        truth = getattr(getattr(self.trainer, "datamodule", None), "truth", None)
        if truth is not None:
            est = self.to_density()
            grid, vol = evaluation_grid(truth, est)
            p = torch.as_tensor(est.pdf(grid))[None]
            q = torch.as_tensor(truth.pdf(grid))[None]
            self.test_tv.update(p, q, vol)
            self.test_l2.update(p, q, vol)
            self.log("test_tv", self.test_tv, batch_size=1)
            self.log("test_l2", self.test_l2, batch_size=1)

    def predict_step(self, batch, batch_idx):
        return self(batch[0])

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=self.hparams.lr)


class TournamentModule(pl.LightningModule):
    """Noise-aware compression learner (perturbation-quantised candidates + tournament).

    Parameters
    ----------
    family, d, k:
        Family name (``uniform``, ``gaussian``, ``axis-gaussian``), dimension and mixture size.
    noise, noise_scale:
        Known noise law (``gaussian``/``laplace``/``uniform``) and its scale.
    eps, delta, strategy, selection, max_candidates, search_rounds, seed:
        Passed to :func:`~noisy_compress.learner.learn`.

    Examples
    --------
    >>> m = TournamentModule("uniform", noise_scale=0.1, max_candidates=60, search_rounds=3)
    >>> y = torch.rand(400, 1, dtype=torch.float64)
    >>> m(y).shape
    torch.Size([400])
    """

    def __init__(
        self,
        family: str = "uniform",
        d: int = 1,
        k: int = 1,
        noise: str = "gaussian",
        noise_scale: float = 0.1,
        eps: float | None = None,
        delta: float = 0.1,
        strategy: str = "auto",
        selection: str = "auto",
        max_candidates: int | None = None,
        search_rounds: int | None = None,
        seed: int = 0,
    ):
        super().__init__()
        self.save_hyperparameters()
        self.family = make_family(family, d=d, k=k)
        self.noise = make_noise(noise, noise_scale, d=d)
        self.winner: Density | None = None
        self.result: LearnResult | None = None
        self._collected: list[np.ndarray] = []
        self.automatic_optimization = False
        self.test_tv, self.test_l2 = TotalVariation(), L2Distance()

    def run_learner(self, y: np.ndarray) -> LearnResult:
        hp = self.hparams
        self.result = learn(
            self.family,
            y,
            self.noise,
            eps=hp.eps,
            delta=hp.delta,
            strategy=hp.strategy,
            selection=hp.selection,
            max_candidates=hp.max_candidates,
            search_rounds=hp.search_rounds,
            seed=hp.seed,
        )
        self.winner = self.result.density
        return self.result

    def forward(self, y: torch.Tensor) -> torch.Tensor:
        y_np = y.detach().cpu().double().numpy().reshape(len(y), -1)
        if self.winner is None:
            self.run_learner(y_np)
        p = convolved_pdf(self.winner, self.noise, y_np)
        return torch.as_tensor(np.log(p + 1e-300), dtype=torch.float64)

    def training_step(self, batch, batch_idx):
        self._collected.append(batch[0].detach().cpu().double().numpy())
        return None

    def on_train_epoch_end(self) -> None:
        if self._collected:
            self.run_learner(np.concatenate(self._collected, axis=0))
            self._collected = []

    def _ensure_fitted(self) -> None:
        if self.winner is None:
            dm = getattr(self.trainer, "datamodule", None)
            if dm is None or not hasattr(dm, "y_train"):
                raise RuntimeError(
                    "TournamentModule is not fitted and no training data is available"
                )
            self.run_learner(np.asarray(dm.y_train, dtype=float))

    def on_validation_start(self) -> None:
        self._ensure_fitted()

    def on_test_start(self) -> None:
        self._ensure_fitted()

    def on_predict_start(self) -> None:
        self._ensure_fitted()

    def validation_step(self, batch, batch_idx):
        if self.winner is not None:
            self.log("val_nll", -self(batch[0]).mean(), batch_size=len(batch[0]))

    def test_step(self, batch, batch_idx):
        self.log("test_nll", -self(batch[0]).mean(), batch_size=len(batch[0]))
        truth = getattr(getattr(self.trainer, "datamodule", None), "truth", None)
        if truth is not None and truth.d <= 2:
            grid, vol = evaluation_grid(truth, self.winner, n=8000 if truth.d == 1 else 40000)
            p = torch.as_tensor(self.winner.pdf(grid))[None]
            q = torch.as_tensor(truth.pdf(grid))[None]
            self.test_tv.update(p, q, vol)
            self.test_l2.update(p, q, vol)
            self.log("test_tv", self.test_tv, batch_size=1)
            self.log("test_l2", self.test_l2, batch_size=1)

    def predict_step(self, batch, batch_idx):
        return self(batch[0])

    def configure_optimizers(self):
        return None

    def on_save_checkpoint(self, checkpoint: dict) -> None:
        checkpoint["winner"] = None if self.winner is None else self.winner.params()

    def on_load_checkpoint(self, checkpoint: dict) -> None:
        p = checkpoint.get("winner")
        self.winner = None if p is None else density_from_params(p)


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


class SampleArrayDataModule(_NoisyBase):
    """Your own noisy samples ``y`` (``(n, d)`` or ``(n,)``) as a full-batch DataModule.

    The training, validation, test and predict splits are all ``y`` (a fit that wants a
    held-out split passes it as another module). ``truth`` is unknown (``None``).

    Examples
    --------
    >>> dm = SampleArrayDataModule(np.zeros(5))
    >>> next(iter(dm.train_dataloader()))[0].shape
    torch.Size([5, 1])
    """

    def __init__(self, y: np.ndarray, batch_size: int = 0):
        super().__init__()
        y = np.asarray(y, dtype=float)
        self.y_train = self.y_val = self.y_test = y.reshape(len(y), -1)
        self.truth = None
        self.batch_size = int(batch_size)

    def setup(self, stage: str | None = None) -> None:
        return None
