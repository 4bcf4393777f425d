"""LightningDataModules that serve per-environment steady-state moments.

Paper: "One Intervention per Component is Enough" (ICML 2026). The estimators
only need each environment's sample mean and covariance, so a batch is the
whole experiment: ``{"mean": (E, p), "cov": (E, p, p), "n": (E,)}`` (plus the
true drift ``"A_true"`` for synthetic validation and test).

1. :class:`MomentDataModule` - any list of
   :class:`~ou_ident.moment_equations.EnvironmentMoments` and a support mask.
2. :class:`SyntheticOUDataModule` - the offline generator of
   :func:`ou_ident.synthetic.make_problem`.
3. :class:`PerturbSeqDataModule` - Perturb-seq style data through
   :mod:`ou_ident.perturbseq` (one environment per perturbation).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import lightning.pytorch as pl
import numpy as np
from torch.utils.data import DataLoader, Dataset

from ou_ident.moment_equations import EnvironmentMoments, check_environments
from ou_ident.refinement import environment_specs, moment_batch
from ou_ident.synthetic import SteadyStateProblem, make_problem

__all__ = ["MomentDataModule", "PerturbSeqDataModule", "SyntheticOUDataModule"]


class _Repeated(Dataset):
    """The same full batch ``length`` times (one optimisation step each)."""

    def __init__(self, batch: dict, length: int) -> None:
        self.batch, self.length = batch, length

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, i: int) -> dict:
        return self.batch


class MomentDataModule(pl.LightningDataModule):
    """Moments of every environment, served as one full batch per step.

    Parameters
    ----------
    steps_per_epoch:
        Optimisation steps per epoch (each sees all environments).

    Examples
    --------
    >>> from ou_ident.synthetic import make_problem
    >>> prob = make_problem(4, seed=0)
    >>> dm = MomentDataModule(steps_per_epoch=2)
    >>> dm.set_moments(prob.moments(), prob.mask, prob.params.A)
    >>> dm.setup("fit")
    >>> tuple(next(iter(dm.train_dataloader()))["cov"].shape)
    (2, 4, 4)
    """

    def __init__(self, steps_per_epoch: int = 50) -> None:
        super().__init__()
        if steps_per_epoch < 1:
            raise ValueError(f"steps_per_epoch must be >= 1, got {steps_per_epoch}")
        self.steps_per_epoch = steps_per_epoch
        self.data: list[EnvironmentMoments] | None = None
        self.mask: np.ndarray | None = None
        self.A_true: np.ndarray | None = None

    def set_moments(self, data: Sequence[EnvironmentMoments], mask, A_true=None) -> None:
        """Give the environments' moments, the drift support and optionally the truth."""
        p = check_environments(data)
        mask = np.ones((p, p), bool) if mask is None else np.asarray(mask, dtype=bool)
        if mask.shape != (p, p):
            raise ValueError(f"support mask is {mask.shape}, data have p={p}")
        self.data, self.mask = list(data), mask
        self.A_true = None if A_true is None else np.asarray(A_true, float)

    def load(self) -> None:
        """Produce the moments (subclasses); called by :meth:`setup` when none were given."""
        raise ValueError("MomentDataModule has no data: call set_moments() first")

    def setup(self, stage: str | None = None) -> None:
        if self.data is None:
            self.load()

    def environment_moments(self) -> list[EnvironmentMoments]:
        """The environments' moments (for the closed-form initialisation)."""
        self.setup()
        return list(self.data)

    def structure(self) -> tuple[list[list[int]], list[dict]]:
        """``(mask, environment specs)`` for :class:`~ou_ident.refinement.SteadyStateOU`."""
        self.setup()
        return self.mask.astype(int).tolist(), environment_specs([d.environment for d in self.data])

    def _loader(self, length: int, truth: bool) -> DataLoader:
        self.setup()
        batch = moment_batch(self.data, self.A_true if truth else None)
        return DataLoader(_Repeated(batch, length), batch_size=None, shuffle=False)

    def train_dataloader(self) -> DataLoader:
        return self._loader(self.steps_per_epoch, truth=False)

    def val_dataloader(self) -> DataLoader:
        return self._loader(1, truth=self.A_true is not None)

    def test_dataloader(self) -> DataLoader:
        return self._loader(1, truth=self.A_true is not None)

    def predict_dataloader(self) -> DataLoader:
        return self._loader(1, truth=False)


class SyntheticOUDataModule(MomentDataModule):
    """Offline synthetic experiment (:func:`ou_ident.synthetic.make_problem`).

    Parameters
    ----------
    p:
        Number of variables.
    family:
        Intervention family of the training environments.
    per_component:
        Interventions per strongly connected component.
    n:
        Samples per environment (``None``: population moments).
    known_support:
        Give the model the true support (else every edge is allowed).
    seed:
        Seed of the graph, parameters and samples.

    Examples
    --------
    >>> dm = SyntheticOUDataModule(p=5, n=1000, steps_per_epoch=1)
    >>> mask, specs = dm.structure()
    >>> specs[0]["name"], len(mask)
    ('obs', 5)
    """

    def __init__(
        self,
        p: int = 10,
        family: str = "degradation",
        per_component: int = 1,
        n: int | None = 10_000,
        known_support: bool = True,
        min_size: int = 2,
        max_size: int = 8,
        seed: int = 0,
        steps_per_epoch: int = 50,
    ) -> None:
        super().__init__(steps_per_epoch)
        if n is not None and n < 2:
            raise ValueError(f"n must be >= 2 samples per environment (or null), got {n}")
        self.p, self.family, self.per_component, self.n = p, family, per_component, n
        self.known_support, self.min_size, self.max_size, self.seed = (
            known_support,
            min_size,
            max_size,
            seed,
        )
        self.problem: SteadyStateProblem | None = None

    def load(self) -> None:
        self.problem = make_problem(
            self.p,
            self.family,
            self.per_component,
            min_size=self.min_size,
            max_size=self.max_size,
            seed=self.seed,
        )
        data = self.problem.moments(self.n, seed=self.seed)
        mask = self.problem.mask if self.known_support else None
        self.set_moments(data, mask, self.problem.params.A)


class PerturbSeqDataModule(MomentDataModule):
    """Perturb-seq style single-cell data: one environment per perturbation.

    Parameters
    ----------
    path:
        A local ``.h5ad`` file (needs ``anndata``, extra ``bio``), or a pertpy dataset
        name (``replogle_2022_k562_essential``, ``norman_2019``; needs internet).
    genes:
        Genes to model (``None``: every perturbed gene that is measured).
    perturbation_key, control:
        ``obs`` column with the perturbation labels and the label of control cells.
    family:
        Intervention family the perturbations are modelled by (CRISPRi: ``knockdown``).
    shrinkage:
        Covariance shrinkage towards the diagonal (small environments).
    """

    def __init__(
        self,
        path: str | Path = "replogle_2022_k562_essential",
        genes: list[str] | None = None,
        perturbation_key: str = "perturbation",
        control: str = "control",
        family: str = "knockdown",
        shrinkage: float = 0.0,
        steps_per_epoch: int = 50,
    ) -> None:
        super().__init__(steps_per_epoch)
        self.path, self.genes, self.perturbation_key = path, genes, perturbation_key
        self.control, self.family, self.shrinkage = control, family, shrinkage

    def load(self) -> None:
        from ou_ident.perturbseq import load_perturbseq

        data, names = load_perturbseq(
            self.path, self.genes, self.perturbation_key, self.control, self.family, self.shrinkage
        )
        self.gene_names = names
        self.set_moments(data, None)
