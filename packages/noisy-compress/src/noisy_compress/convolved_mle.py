"""Convolved-likelihood MLE: maximise ``sum_i log (f_theta * g)(y_i)`` over a 1-D k-mixture.

The parametric anchor of the paper's comparison (and the natural refinement of a tournament
winner), in closed form and differentiable:

1. Gaussian component ``N(mu, s^2)`` with Gaussian noise ``sigma``: ``N(y; mu, s^2 + sigma^2)``;
   with Laplace noise ``b``: the exponentially-modified form of :mod:`noisy_compress.convolution`;
2. uniform component ``U[c - w, c + w]``: ``[G(y - c + w) - G(y - c - w)] / 2w`` with ``G`` the
   noise CDF (Gaussian or Laplace);
3. mixture weights ``softmax(logits)``; the loss is the mean negative log-likelihood.

:class:`ConvolvedMLEModule` is a LightningModule (full-batch Adam by default); ``test_step``
reports TV and ell_2 against the datamodule's planted ``truth`` through torchmetrics metrics.
"""

from __future__ import annotations

import math

import lightning.pytorch as pl
import numpy as np
import torch

from .densities import BoxDensity, Density, GaussianDensity, MixtureDensity
from .metrics import L2Distance, TotalVariation, evaluation_grid

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
        """The same objective as ``fit``, by a plain full-batch Adam loop (no Trainer overhead).

        Examples
        --------
        >>> rng = np.random.default_rng(0)
        >>> y = rng.normal(1.0, 1.0, (2000, 1))
        >>> m = ConvolvedMLEModule("gaussian", noise_scale=0.0, lr=0.1).fit_full_batch(y, 200)
        >>> round(float(m.loc[0]), 1)
        1.0
        """
        if self.hparams.init_from_data:
            self.init_from(y)
        yt = torch.as_tensor(np.asarray(y, dtype=float).reshape(-1, 1), dtype=torch.float64)
        opt = torch.optim.Adam(self.parameters(), lr=self.hparams.lr)
        for _ in range(int(steps)):
            opt.zero_grad()
            loss = -self(yt).mean()
            loss.backward()
            opt.step()
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
