"""LightningDataModule of a registry problem: collocation points, test points, reference values.

Paper: Kaminsky, Freedman, Radinsky, "Overcoming PINNs Failure Modes in High Dimension with
Low-Rank Fourier Sum", ICML 2026.

LoRFS itself needs no data (its losses are closed form): for it the training batch is only a
handle for Lightning's loop. The PINN baselines use the same batch as their collocation points
(Latin-hypercube samples, ``scipy.stats.qmc``, as in the notes' baseline protocol, Sec. B4).
Validation/test batches hold ``(points, reference values)``: the exact solution at uniform
points, or the splitting reference on its grid (:mod:`lorfs.reference`).

- :func:`build_problem`: name + parameters -> :class:`~lorfs.problems.Problem`
- :func:`latin_hypercube`: collocation points in the box
- :class:`RelativeL2Error`: the torchmetrics metric reported everywhere (``||u - u*|| / ||u*||``)
- :class:`ReferenceEvaluation`: the validation/test/predict steps every solver module shares
- :class:`ProblemDataModule`: the datamodule
"""

from __future__ import annotations

from collections.abc import Mapping

import lightning.pytorch as pl
import torch
import torchmetrics
from torch.utils.data import DataLoader, TensorDataset

from .basis import RDTYPE
from .problems import Problem, get_problem


def build_problem(problem: str, params: Mapping[str, float] | None = None) -> Problem:
    """The registry problem ``problem`` with keyword parameters ``params``."""
    return get_problem(problem, **dict(params or {}))


def latin_hypercube(problem: Problem, n: int, seed: int = 0) -> torch.Tensor:
    """``n`` Latin-hypercube points in the problem's box, ``(n, D)`` float64."""
    from scipy.stats import qmc

    if n < 1:
        raise ValueError(f"number of collocation points must be >= 1, got {n}")
    sampler = qmc.LatinHypercube(d=problem.dim, seed=seed)
    lo = [s.domain[0] for s in problem.specs]
    hi = [s.domain[1] for s in problem.specs]
    return torch.tensor(qmc.scale(sampler.random(n), lo, hi), dtype=RDTYPE)


class RelativeL2Error(torchmetrics.Metric):
    """Relative L2 error ``||pred - target|| / ||target||`` accumulated over batches.

    Examples
    --------
    >>> m = RelativeL2Error()
    >>> m.update(torch.tensor([1.0, 2.0]), torch.tensor([1.0, 1.0]))
    >>> round(float(m.compute()), 6)
    0.707107
    """

    full_state_update = False

    def __init__(self) -> None:
        super().__init__()
        self.add_state("err", default=torch.zeros((), dtype=RDTYPE), dist_reduce_fx="sum")
        self.add_state("ref", default=torch.zeros((), dtype=RDTYPE), dist_reduce_fx="sum")

    def update(self, pred: torch.Tensor, target: torch.Tensor) -> None:
        pred, target = pred.reshape(-1).to(RDTYPE), target.reshape(-1).to(RDTYPE)
        if pred.shape != target.shape:
            raise ValueError(
                f"prediction {tuple(pred.shape)} and target {tuple(target.shape)} differ"
            )
        self.err += (pred - target).pow(2).sum()
        self.ref += target.pow(2).sum()

    def compute(self) -> torch.Tensor:
        return (self.err / self.ref.clamp_min(1e-300)).sqrt()


class ReferenceEvaluation:
    """Validation/test/predict steps against the reference values of a :class:`ProblemDataModule`.

    Mixed into every solver LightningModule (LoRFS and the PINN baselines), so all of them are
    scored by the same :class:`RelativeL2Error` on the same ``(points, reference)`` batches.
    """

    def _init_reference_metrics(self) -> None:
        self.val_error = RelativeL2Error()
        self.test_error = RelativeL2Error()

    def validation_step(self, batch, batch_idx):
        pts, ref = batch
        self.val_error.update(self(pts), ref)
        self.log("val_rel_l2", self.val_error, prog_bar=True, batch_size=len(pts))

    def test_step(self, batch, batch_idx):
        pts, ref = batch
        self.test_error.update(self(pts), ref)
        self.log("test_rel_l2", self.test_error, batch_size=len(pts))

    def predict_step(self, batch, batch_idx):
        return self(batch[0])


class ProblemDataModule(pl.LightningDataModule):
    """Collocation and evaluation data of one registry problem.

    Parameters
    ----------
    problem:
        Registry name (:data:`lorfs.problems.PROBLEMS`).
    params:
        Problem parameters, e.g. ``{"beta": 30}`` or ``{"d": 100}``.
    n_collocation:
        Latin-hypercube collocation points (the training batch).
    n_test:
        Uniform test points when the solution is exact (else: the reference grid).
    seed:
        Seed of the collocation and test points.

    Examples
    --------
    >>> dm = ProblemDataModule("convection", {"beta": 30}, n_collocation=64, n_test=100)
    >>> dm.setup("fit")
    >>> next(iter(dm.train_dataloader()))[0].shape
    torch.Size([64, 2])
    >>> pts, ref = next(iter(dm.val_dataloader()))
    >>> pts.shape, ref.shape
    (torch.Size([100, 2]), torch.Size([100]))
    """

    def __init__(
        self,
        problem: str = "convection",
        params: dict[str, float] | None = None,
        n_collocation: int = 2000,
        n_test: int = 10_000,
        seed: int = 0,
    ) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.problem = build_problem(problem, params)
        if n_test < 1 or n_collocation < 1:
            raise ValueError(
                f"n_collocation and n_test must be >= 1, got {n_collocation} and {n_test}"
            )
        self.n_collocation = n_collocation
        self.n_test = n_test
        self.seed = seed

    def setup(self, stage: str | None = None) -> None:
        if not hasattr(self, "_train"):
            self._train = latin_hypercube(self.problem, self.n_collocation, self.seed)
            pts, ref = self.problem.test_set(self.n_test, self.seed + 1)
            self._test = (pts, ref)

    def train_dataloader(self) -> DataLoader:
        return DataLoader(TensorDataset(self._train), batch_size=len(self._train))

    def _eval_loader(self) -> DataLoader:
        pts, ref = self._test
        return DataLoader(TensorDataset(pts, ref), batch_size=len(pts))

    def val_dataloader(self) -> DataLoader:
        return self._eval_loader()

    def test_dataloader(self) -> DataLoader:
        return self._eval_loader()

    def predict_dataloader(self) -> DataLoader:
        return DataLoader(TensorDataset(self._test[0]), batch_size=len(self._test[0]))
