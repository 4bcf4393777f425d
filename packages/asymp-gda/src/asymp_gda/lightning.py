"""The Lightning parts of asymp-gda: AsymP-GDA as a LightningModule and the game as data.

Paper: Abe et al., "Asymmetric Perturbation in Solving Bilinear Saddle-Point
Optimization", ICML 2026, Eq. (3) and Sec. 6 (the games).

- :class:`SaddlePointModule`: the strategies of ``n_trials`` initialisations are the
  module's parameters ``x (B, m)`` and ``y (B, n)``; each ``training_step`` applies
  ``steps_per_batch`` projected AsymP-GDA iterations (no autograd optimiser:
  ``automatic_optimization = False``) and logs the exploitability through torchmetrics.
  ``forward(A)`` returns the bilinear objective ``x^T A y`` per trial (differentiable, so
  gradients of the saddle function are available).
- :class:`GameDataModule`: every batch is the same ``(m, n)`` payoff ``A`` (collated to
  ``(1, m, n)``); an epoch is ``batches_per_epoch`` of them, so ``Trainer(max_epochs=E)``
  runs ``E * batches_per_epoch * K`` solver iterations.
"""

from __future__ import annotations

import lightning.pytorch as pl
import torch
from torch.utils.data import DataLoader, Dataset

from .asymp_gda import asymp_gda_step, check_strength
from .exploitability import NashConv
from .matrix_game import MatrixGame, game_by_name
from .trajectory import check_step_size, initial_strategies

__all__ = ["GameDataModule", "SaddlePointModule"]


class SaddlePointModule(pl.LightningModule):
    """AsymP-GDA on a matrix game as a LightningModule.

    Parameters
    ----------
    game:
        Game name (sizes the strategies; must match the datamodule's game).
    mu:
        Perturbation strength ``> 0`` (paper default 1).
    eta:
        Step size ``> 0`` (paper default 0.01).
    side:
        ``"x"`` (perturb x) or ``"y"`` (perturb y; the mirrored process).
    steps_per_batch:
        Projected iterations ``K`` per training step.
    n_trials:
        Batch of initialisations ``B``.
    init:
        ``"uniform"`` or ``"random"`` (seeded Dirichlet(1)).
    seed:
        Seed of the random initialisation (and of a random game).

    Examples
    --------
    >>> import torch
    >>> from asymp_gda.matrix_game import biased_rps
    >>> model = SaddlePointModule("brps", n_trials=2)
    >>> model(biased_rps().A).shape
    torch.Size([2])
    """

    def __init__(
        self,
        game: str = "brps",
        mu: float = 1.0,
        eta: float = 0.01,
        side: str = "x",
        steps_per_batch: int = 100,
        n_trials: int = 4,
        init: str = "random",
        seed: int = 0,
    ) -> None:
        super().__init__()
        if side not in ("x", "y"):
            raise ValueError(f"side must be 'x' or 'y' for the module, got {side!r}")
        if steps_per_batch < 1:
            raise ValueError(f"steps_per_batch must be >= 1, got {steps_per_batch}")
        self.save_hyperparameters()
        self.automatic_optimization = False
        g = game_by_name(game, seed=seed)
        check_strength(mu)
        check_step_size(eta, g, mu)
        x, y = initial_strategies(g, n_trials, seed, init)
        self.x = torch.nn.Parameter(x)  # (B, m)
        self.y = torch.nn.Parameter(y)  # (B, n)
        self.value = g.value
        self.train_nash_conv = NashConv()
        self.val_nash_conv = NashConv()

    def _check(self, A: torch.Tensor) -> torch.Tensor:
        A = A.reshape(A.shape[-2], A.shape[-1]).to(torch.float64)  # (m, n)
        if tuple(A.shape) != (self.x.shape[1], self.y.shape[1]):
            raise ValueError(
                f"batch game has shape {tuple(A.shape)} but the module was built for "
                f"{(self.x.shape[1], self.y.shape[1])}: use the same game in model and data"
            )
        return A

    def forward(self, A: torch.Tensor) -> torch.Tensor:
        """Bilinear objective ``x^T A y`` of every trial, ``(B,)``."""
        A = self._check(A)
        return ((self.x @ A) * self.y).sum(-1)

    @torch.no_grad()
    def _solve(self, A: torch.Tensor) -> None:
        mu, eta = self.hparams.mu, self.hparams.eta
        x, y = self.x.data, self.y.data
        for _ in range(self.hparams.steps_per_batch):
            if self.hparams.side == "x":
                x, y = asymp_gda_step(A, x, y, mu, eta)
            else:
                y, x = asymp_gda_step(-A.T, y, x, mu, eta)
        self.x.data.copy_(x)
        self.y.data.copy_(y)

    def training_step(self, batch: torch.Tensor, batch_idx: int) -> None:
        A = self._check(batch)
        self._solve(A)
        self.train_nash_conv(A, self.x.detach(), self.y.detach())
        self.log(
            "train/nash_conv", self.train_nash_conv, on_step=True, on_epoch=False, batch_size=1
        )
        self.log(f"train/expl_{self.hparams.side}", self._expl(A).mean(), batch_size=1)

    def _expl(self, A: torch.Tensor) -> torch.Tensor:
        """Individual exploitability of the perturbed side (``(B,)``), against the LP value."""
        if self.hparams.side == "x":
            return (self.x.detach() @ A).amax(-1) - self.value
        return self.value - (self.y.detach() @ A.T).amin(-1)

    def validation_step(self, batch: torch.Tensor, batch_idx: int) -> None:
        A = self._check(batch)
        self.val_nash_conv(A, self.x.detach(), self.y.detach())
        self.log("val/nash_conv", self.val_nash_conv, batch_size=1)
        self.log(f"val/expl_{self.hparams.side}", self._expl(A).mean(), batch_size=1)

    def test_step(self, batch: torch.Tensor, batch_idx: int) -> None:
        A = self._check(batch)
        self.log(f"test/expl_{self.hparams.side}", self._expl(A).mean(), batch_size=1)

    def predict_step(self, batch: torch.Tensor, batch_idx: int) -> dict[str, torch.Tensor]:
        A = self._check(batch)
        return {
            "x": self.x.detach().clone(),
            "y": self.y.detach().clone(),
            f"expl_{self.hparams.side}": self._expl(A),
        }

    def configure_optimizers(self):
        return None  # manual projected updates; no autograd optimiser


class _RepeatedGame(Dataset):
    def __init__(self, A: torch.Tensor, length: int) -> None:
        self.A, self.length = A, length

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, i: int) -> torch.Tensor:
        return self.A


class GameDataModule(pl.LightningDataModule):
    """Serves one matrix game's payoff ``A`` as every batch.

    Parameters
    ----------
    game:
        ``"brps"``, ``"bmp"``, ``"m_ne"`` or ``"random<m>"`` / ``"random<m>x<n>"``.
    seed:
        Seed of a random game.
    batches_per_epoch:
        Training batches (solver chunks) per epoch; validation/test/predict use one.

    Examples
    --------
    >>> dm = GameDataModule("brps")
    >>> dm.setup("fit")
    >>> next(iter(dm.train_dataloader())).shape
    torch.Size([1, 3, 3])
    """

    def __init__(self, game: str = "brps", seed: int = 0, batches_per_epoch: int = 10) -> None:
        super().__init__()
        if batches_per_epoch < 1:
            raise ValueError(f"batches_per_epoch must be >= 1, got {batches_per_epoch}")
        self.save_hyperparameters()
        self.game: MatrixGame = game_by_name(game, seed=seed)

    def _loader(self, length: int) -> DataLoader:
        return DataLoader(_RepeatedGame(self.game.A, length), batch_size=1, num_workers=0)

    def train_dataloader(self) -> DataLoader:
        return self._loader(self.hparams.batches_per_epoch)

    def val_dataloader(self) -> DataLoader:
        return self._loader(1)

    def test_dataloader(self) -> DataLoader:
        return self._loader(1)

    def predict_dataloader(self) -> DataLoader:
        return self._loader(1)
