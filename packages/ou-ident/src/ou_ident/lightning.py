"""The Lightning layer of ou-ident: the refinement LightningModule and the moment DataModules.

Paper: "One Intervention per Component is Enough" (ICML 2026).

:class:`SteadyStateOU` is the gradient refinement of the joint estimator: the
regularised least-squares estimator of the steady-state moment equations,
optionally with the exact Gaussian likelihood of the snapshots:

1. parameters: the drift on its support (``nn.Parameter``), the input ``b``,
   a positive diagonal noise with ``tr D = p`` (``d = p softmax(raw)``: fixes the
   global scale) and one raw number per intervention mapped into the family's
   domain (softplus for degradation and noise scale, sigmoid for knock-down)
                                                              -> :class:`SteadyStateOU`
2. loss ``sum_e (lambda_mu ||A_e m_e + b_e||^2 + ||A_e S_e + S_e A_e^T + D_e||_F^2) / E
   + l1 ||offdiag A||_1``                                     -> :meth:`SteadyStateOU.moment_loss`
3. optional exact Gaussian negative log-likelihood of the sample moments, with
   ``Sigma_e`` from the Lyapunov equation in Kronecker form
   ``(I (x) A_e + A_e (x) I) vec Sigma_e = -vec D_e`` (differentiable; ``p <= 30``)
                                                              -> :meth:`SteadyStateOU.gaussian_nll`
4. initialisation from the closed-form :func:`ou_ident.joint.fit_joint`.

The structure (support mask and the environments' targets and families) is
given explicitly or read from the datamodule in :meth:`SteadyStateOU.setup`;
it is stored in the hyperparameters, so checkpoints reload without the data.

The DataModules serve per-environment steady-state moments. The estimators only need each
environment's sample mean and covariance, so a batch is the whole experiment:
``{"mean": (E, p), "cov": (E, p, p), "n": (E,)}`` (plus the true drift ``"A_true"`` for
synthetic validation and test) (:func:`moment_batch`):

5. :class:`MomentDataModule` - any list of
   :class:`~ou_ident.moment_equations.EnvironmentMoments` and a support mask;
6. :class:`SyntheticOUDataModule` - the offline generator of
   :func:`ou_ident.synthetic.make_problem`;
7. :class:`PerturbSeqDataModule` - Perturb-seq style data through
   :mod:`ou_ident.perturbseq` (one environment per perturbation).

Environments are stored in hyperparameters as plain specs
(:func:`ou_ident.interventions.environment_specs`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import lightning.pytorch as pl
import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, Dataset

from ou_ident.interventions import environment_specs, environments_from_specs
from ou_ident.moment_equations import EnvironmentMoments, ParameterLayout, check_environments
from ou_ident.ou_process import OUParams
from ou_ident.recovery_metrics import scale_aligned_rel_error
from ou_ident.synthetic import SteadyStateProblem, make_problem

__all__ = [
    "MomentDataModule",
    "PerturbSeqDataModule",
    "SteadyStateOU",
    "SyntheticOUDataModule",
    "moment_batch",
]

_DOMAIN = {  # raw number -> strength of the family
    "shift": lambda x: x,
    "hard": lambda x: x,
    "noise": F.softplus,
    "degradation": F.softplus,
    "knockdown": torch.sigmoid,
    "inhibition": torch.sigmoid,
}


def _inverse_domain(family: str, s: float) -> float:
    if family in {"shift", "hard"}:
        return float(s)
    if family in {"knockdown", "inhibition"}:
        s = min(max(s, 1e-4), 1 - 1e-4)
        return float(np.log(s / (1 - s)))
    s = max(s, 1e-4)
    return float(s + np.log(-np.expm1(-s)))  # softplus^{-1}


class SteadyStateOU(pl.LightningModule):
    """OU drift, input, noise and intervention strengths fitted by gradient on moments.

    Parameters
    ----------
    mask:
        ``(p, p)`` drift support with the diagonal (nested lists); ``None``: from the datamodule.
    environments:
        Environment specs (:func:`environment_specs`); ``None``: from the datamodule.
    lambda_mean:
        Weight of the mean equations.
    l1:
        L1 penalty on the off-diagonal drift.
    nll_weight:
        Weight of the exact Gaussian negative log-likelihood (0: moment loss only).
    lr:
        Adam learning rate.
    init:
        ``"joint"`` (closed-form joint estimate at the start of fit) or ``"diagonal"``.

    Examples
    --------
    >>> import torch
    >>> from ou_ident.synthetic import make_problem
    >>> prob = make_problem(4, seed=0)
    >>> model = SteadyStateOU(prob.mask.tolist(), environment_specs(prob.environments))
    >>> batch = moment_batch(prob.moments())
    >>> out = model(batch)
    >>> tuple(out["cov_residual"].shape)
    (2, 4, 4)
    >>> model.initialize_from(prob.params, prob.environments)
    >>> bool(model.moment_loss(batch) < 1e-10)
    True
    """

    def __init__(
        self,
        mask: list[list[int]] | None = None,
        environments: list[dict] | None = None,
        lambda_mean: float = 1.0,
        l1: float = 0.0,
        nll_weight: float = 0.0,
        lr: float = 0.01,
        init: str = "joint",
    ) -> None:
        super().__init__()
        if init not in {"joint", "diagonal"}:
            raise ValueError(f"init must be 'joint' or 'diagonal', got {init!r}")
        if lambda_mean < 0 or l1 < 0 or nll_weight < 0 or not lr > 0:
            raise ValueError("lambda_mean, l1 and nll_weight must be >= 0 and lr > 0")
        self.save_hyperparameters()
        self.register_buffer("initialized", torch.tensor(False))
        self.built = False
        if mask is not None and environments is not None:
            self.build(mask, environments)

    # ------------------------------------------------------------ structure
    def build(self, mask, environments: Sequence[dict]) -> None:
        """Create the parameters for a support mask and environment specs."""
        self.layout = ParameterLayout(
            np.asarray(mask, dtype=bool), environments_from_specs(environments)
        )
        self.hparams["mask"] = np.asarray(mask, dtype=int).tolist()
        self.hparams["environments"] = list(environments)
        lay = self.layout
        p = lay.p
        self.register_buffer("a_index", torch.as_tensor(lay.a_index, dtype=torch.long))
        diag = (lay.a_index[:, 0] == lay.a_index[:, 1]).astype(np.float64)
        self.a_vals = nn.Parameter(torch.as_tensor(-diag, dtype=torch.float64))
        self.b = nn.Parameter(torch.zeros(p, dtype=torch.float64))
        self.d_raw = nn.Parameter(torch.zeros(p, dtype=torch.float64))
        ivs = [iv for env in lay.environments for iv in env.interventions]
        init = [_inverse_domain(iv.family, 0.5) for iv in ivs]
        self.s_raw = nn.Parameter(torch.as_tensor(init, dtype=torch.float64).reshape(len(ivs)))
        self.built = True

    def setup(self, stage: str) -> None:
        """Read the structure from the datamodule when it was not given."""
        if self.built:
            return
        dm = getattr(self.trainer, "datamodule", None)
        if dm is None or not hasattr(dm, "structure"):
            raise ValueError(
                "SteadyStateOU needs mask and environments, or a datamodule with .structure()"
            )
        mask, specs = dm.structure()
        self.build(mask, specs)

    def on_load_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        hp = checkpoint.get("hyper_parameters", {})
        if not self.built and hp.get("mask") is not None:
            self.build(hp["mask"], hp["environments"])

    # ------------------------------------------------------------ parameters
    def base(self):
        """Base ``(A (p, p), b (p,), d (p,))`` with ``tr D = p``."""
        p = self.layout.p
        A = torch.zeros(p, p, dtype=self.a_vals.dtype, device=self.a_vals.device)
        A = A.index_put((self.a_index[:, 0], self.a_index[:, 1]), self.a_vals)
        d = p * torch.softmax(self.d_raw, dim=0)
        return A, self.b, d

    def environment_parameters(self):
        """``[(A_e, b_e, d_e)]`` for every environment."""
        A, b, d = self.base()
        out, k = [], 0
        for env in self.layout.environments:
            Ae, be, de = A, b, d
            for iv in env.interventions:
                Ae, be, de = iv.natural(Ae, be, de, _DOMAIN[iv.family](self.s_raw[k]))
                k += 1
            out.append((Ae, be, de))
        return out

    @property
    def params(self) -> OUParams:
        """Current base parameters as :class:`~ou_ident.ou_process.OUParams`."""
        A, b, d = (t.detach().cpu().numpy() for t in self.base())
        return OUParams(A, b, d)

    def strengths(self) -> dict[str, tuple[float, ...]]:
        """Current intervention strengths by environment label."""
        out, k = {}, 0
        for env in self.layout.environments:
            vals = []
            for iv in env.interventions:
                vals.append(float(_DOMAIN[iv.family](self.s_raw[k].detach())))
                k += 1
            out[env.name] = tuple(vals)
        return out

    @torch.no_grad()
    def initialize_from(self, params: OUParams, environments=None, strengths=None) -> None:
        """Set the parameters from ``params`` (rescaled to ``tr D = p``) and strengths.

        ``strengths`` maps environment labels to tuples; by default the known strengths
        of ``environments`` are used (interventions without one keep their value).
        """
        params = params.normalized()
        idx = self.layout.a_index
        self.a_vals.copy_(torch.as_tensor(params.A[idx[:, 0], idx[:, 1]]))
        self.b.copy_(torch.as_tensor(params.b))
        self.d_raw.copy_(torch.as_tensor(np.log(np.clip(params.d, 1e-6, None))))
        given = {}
        for env in environments or []:
            given[env.name] = tuple(iv.strength for iv in env.interventions)
        given.update(strengths or {})
        k = 0
        for env in self.layout.environments:
            vals = given.get(env.name, (None,) * len(env.interventions))
            for iv, s in zip(env.interventions, vals, strict=True):
                if s is not None and np.isfinite(s):
                    self.s_raw[k] = _inverse_domain(iv.family, float(s))
                k += 1
        self.initialized.fill_(True)

    # ------------------------------------------------------------ losses
    def forward(self, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """Residuals of the mean ``(E, p)`` and Lyapunov ``(E, p, p)`` equations."""
        m, S = batch["mean"].to(self.a_vals.dtype), batch["cov"].to(self.a_vals.dtype)
        envs = self.environment_parameters()
        if len(envs) != m.shape[0]:
            raise ValueError(f"batch has {m.shape[0]} environments, the model {len(envs)}")
        r = torch.stack([Ae @ m[e] + be for e, (Ae, be, _) in enumerate(envs)])
        R = torch.stack(
            [Ae @ S[e] + S[e] @ Ae.T + torch.diag(de) for e, (Ae, _, de) in enumerate(envs)]
        )
        return {"mean_residual": r, "cov_residual": R}

    def moment_loss(self, batch) -> torch.Tensor:
        """Weighted squared residuals plus the L1 penalty (the joint objective)."""
        out = self(batch)
        E = out["mean_residual"].shape[0]
        loss = (
            self.hparams.lambda_mean * out["mean_residual"].pow(2).sum()
            + out["cov_residual"].pow(2).sum()
        ) / E
        if self.hparams.l1 > 0:
            off = self.a_index[:, 0] != self.a_index[:, 1]
            loss = loss + self.hparams.l1 * self.a_vals[off].abs().sum()
        return loss

    def gaussian_nll(self, batch) -> torch.Tensor:
        """Average Gaussian NLL per sample of the environments' sample moments."""
        m, S = batch["mean"].to(self.a_vals.dtype), batch["cov"].to(self.a_vals.dtype)
        p = self.layout.p
        eye = torch.eye(p, dtype=m.dtype, device=m.device)
        w = batch["n"].to(m.dtype)
        w = w / w.sum()
        total = m.new_zeros(())
        for e, (Ae, be, de) in enumerate(self.environment_parameters()):
            K = torch.kron(Ae, eye) + torch.kron(eye, Ae)
            Sig = torch.linalg.solve(K, -torch.diag(de).reshape(-1)).reshape(p, p)
            Sig = 0.5 * (Sig + Sig.T)
            mu = torch.linalg.solve(Ae, -be)
            L = torch.linalg.cholesky(Sig)
            diff = (m[e] - mu).unsqueeze(1)
            quad = torch.cholesky_solve(S[e] + diff @ diff.T, L).diagonal().sum()
            total = total + w[e] * 0.5 * (2 * torch.log(L.diagonal()).sum() + quad)
        return total

    def loss(self, batch) -> torch.Tensor:
        """Moment loss plus ``nll_weight`` times the Gaussian NLL."""
        loss = self.moment_loss(batch)
        if self.hparams.nll_weight > 0:
            loss = loss + self.hparams.nll_weight * self.gaussian_nll(batch)
        return loss

    # ------------------------------------------------------------ Lightning
    def on_fit_start(self) -> None:
        if bool(self.initialized) or self.hparams.init != "joint":
            return
        dm = getattr(self.trainer, "datamodule", None)
        data = (
            dm.environment_moments()
            if dm is not None and hasattr(dm, "environment_moments")
            else None
        )
        if not data:
            return
        from ou_ident.joint import fit_joint

        fit = fit_joint(data, self.layout.mask, lambda_mean=self.hparams.lambda_mean)
        if not np.all(fit.params.d > 0):
            fit.params = OUParams(fit.A, fit.params.b, np.clip(fit.params.d, 1e-3, None))
        self.initialize_from(fit.params, strengths=fit.strengths)

    def training_step(self, batch, batch_idx):
        loss = self.loss(batch)
        self.log("train_loss", loss, prog_bar=True, batch_size=1)
        return loss

    def _evaluate(self, batch, prefix: str):
        loss = self.loss(batch)
        self.log(f"{prefix}_loss", loss, batch_size=1)
        if "A_true" in batch:
            err = scale_aligned_rel_error(self.params.A, batch["A_true"].cpu().numpy())
            self.log(f"{prefix}_rel_err_A", err, batch_size=1)
        return loss

    def validation_step(self, batch, batch_idx):
        return self._evaluate(batch, "val")

    def test_step(self, batch, batch_idx):
        return self._evaluate(batch, "test")

    def predict_step(self, batch, batch_idx):
        A, b, d = (t.detach() for t in self.base())
        return {"A": A, "b": b, "d": d, "strengths": self.strengths()}

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=self.hparams.lr)


def moment_batch(data: Sequence[EnvironmentMoments], A_true=None) -> dict[str, torch.Tensor]:
    """Stack environment moments into the batch dict the module consumes."""
    batch = {
        "mean": torch.as_tensor(np.stack([d.mean for d in data])),
        "cov": torch.as_tensor(np.stack([d.cov for d in data])),
        "n": torch.as_tensor([float(d.n or 1) for d in data], dtype=torch.float64),
    }
    if A_true is not None:
        batch["A_true"] = torch.as_tensor(np.asarray(A_true, dtype=np.float64))
    return batch


__all__.append("moment_batch")


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
