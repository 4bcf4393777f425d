"""The noisy compression learner as a (non-gradient) LightningModule.

``fit`` collects the training split and runs :func:`noisy_compress.learner.learn` once at the end
of the epoch; the winner is stored in the checkpoint. ``forward(y)`` is the log-density of the
noise-convolved winner at ``y`` (it runs the learner on ``y`` first if nothing was fitted yet);
``predict_step`` returns it; ``test_step`` reports TV and ell_2 between the clean estimate and the
datamodule's planted ``truth`` through :class:`~noisy_compress.metrics.TotalVariation` and
:class:`~noisy_compress.metrics.L2Distance`, plus the held-out noisy NLL.
"""

from __future__ import annotations

import lightning.pytorch as pl
import numpy as np
import torch

from .convolution import convolved_pdf
from .densities import BoxDensity, Density, GaussianDensity, MixtureDensity
from .families import make_family
from .learner import LearnResult, learn
from .metrics import L2Distance, TotalVariation, evaluation_grid
from .noise import make_noise


def density_from_params(p: dict) -> Density:
    """Rebuild a density from :meth:`Density.params` (used for checkpoints).

    Examples
    --------
    >>> density_from_params(BoxDensity([0.0], [1.0]).params())
    BoxDensity(lo=[0.0], hi=[1.0])
    """
    kind = p["type"]
    if kind == "box":
        return BoxDensity(p["lo"], p["hi"])
    if kind == "gaussian":
        return GaussianDensity(p["mean"], p["cov"])
    if kind == "mixture":
        return MixtureDensity(p["weights"], [density_from_params(c) for c in p["components"]])
    raise ValueError(f"cannot rebuild a density of type {kind!r}")


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
        eps: float = 0.05,
        delta: float = 0.1,
        strategy: str = "auto",
        selection: str = "auto",
        max_candidates: int = 300,
        search_rounds: int = 25,
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
