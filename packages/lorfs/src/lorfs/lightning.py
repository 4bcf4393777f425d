"""The Lightning layer of lorfs: the LoRFS and PINN LightningModules and the problem datamodule.

Paper: Kaminsky, Freedman, Radinsky, "Overcoming PINNs Failure Modes in High Dimension with
Low-Rank Fourier Sum", ICML 2026.

- :class:`LoRFSModule`: a low-rank Fourier sum trained on its closed-form physics loss. One
  Lightning *training step* is one step of the chosen solver (manual optimisation, float64):

  - ``solver="als"`` (linear PDEs): step 0 is the greedy rank-by-rank exact ALS
    (:func:`lorfs.als.greedy_als`), every further step one joint ALS sweep
    (:func:`lorfs.als.als_solve`); under ``--trainer.fast_dev_run`` (a smoke test of the loop)
    step 0 is a short greedy pass, one sweep per term and no joint sweeps;
  - ``solver="gauss_newton"`` (nonlinear PDEs, ``D <= 3``): one block Levenberg-Marquardt sweep
    on the quadrature residual (:func:`lorfs.gauss_newton.gauss_newton_solve`);
  - ``solver="adam_lbfgs"``: ``adam_steps`` Adam steps, then L-BFGS steps (each ``lbfgs_iter``
    inner iterations) on the same deterministic loss: the closed-form pieces of
    :meth:`lorfs.problems.Problem.pieces` (linear) or the exact-quadrature loss of
    :meth:`lorfs.problems.Problem.nonlinear_loss` (nonlinear).

- :class:`PINNModule`: the physics-informed network baselines (networks and residual in
  :mod:`lorfs.pinn`), trained on the collocation (Monte-Carlo) loss that LoRFS replaces by a
  closed form, Adam then L-BFGS (notes, Sec. B4).
- :class:`ProblemDataModule`: collocation points (the PINN's batch; for LoRFS only a handle for
  Lightning's loop, its losses need no data) and ``(points, reference values)`` for
  validation/test: the exact solution at uniform points, or the splitting reference on its grid
  (:mod:`lorfs.reference`).
- :class:`RelativeL2Error`: the torchmetrics metric reported everywhere (``||u - u*|| / ||u*||``),
  and :class:`ReferenceEvaluation`, the validation/test/predict steps every solver module shares.
- :func:`load_solver_checkpoint`: a LoRFS or PINN checkpoint written by ``lorfs fit``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import lightning.pytorch as pl
import torch
import torchmetrics
from torch.utils.data import DataLoader, TensorDataset

from .als import als_solve, greedy_als
from .basis import RDTYPE
from .fourier_sum import LowRankFourierSum
from .gauss_newton import gauss_newton_solve, initial_condition_start
from .pinn import Arch, FourierFeatureNet, SeparableNet, latin_hypercube, mlp, pde_residual
from .problems import build_problem
from .residual import loss as closed_form_loss

Solver = Literal["als", "gauss_newton", "adam_lbfgs"]


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


class LoRFSModule(ReferenceEvaluation, pl.LightningModule):
    """LoRFS on a registry problem, trained by Lightning (exact ALS, Gauss-Newton or Adam + L-BFGS).

    Parameters
    ----------
    problem, params:
        Registry problem and its parameters (must match the datamodule's).
    rank:
        Number of rank-one terms (default: the problem's).
    modes:
        Fourier modes per axis, one int for all axes, or ``None`` for the problem's default.
    solver:
        ``"als"``, ``"gauss_newton"`` or ``"adam_lbfgs"`` (see the module docstring).
    adam_steps, lr, lbfgs_iter:
        Schedule of ``adam_lbfgs``.
    ic_weight:
        Weight of the initial-condition term.
    seed:
        Seed of the initial parameters.

    Examples
    --------
    >>> m = LoRFSModule("torus_poisson", {"d": 3}, solver="als")
    >>> m.model.rank, [ax.modes for ax in m.model.axes]
    (2, [2, 2, 2])
    >>> m(torch.zeros(4, 3, dtype=torch.float64)).shape
    torch.Size([4])
    """

    def __init__(
        self,
        problem: str = "convection",
        params: dict[str, float] | None = None,
        rank: int | None = None,
        modes: list[int] | int | None = None,
        solver: Solver = "als",
        adam_steps: int = 500,
        lr: float = 1e-2,
        lbfgs_iter: int = 50,
        ic_weight: float = 1.0,
        seed: int = 0,
    ) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.automatic_optimization = False
        self.problem = build_problem(problem, params)
        if solver not in ("als", "gauss_newton", "adam_lbfgs"):
            raise ValueError(
                f"solver must be 'als', 'gauss_newton' or 'adam_lbfgs', got {solver!r}"
            )
        if solver == "als" and not self.problem.is_linear:
            raise ValueError(
                f"problem {self.problem.name!r} is nonlinear: ALS needs a linear PDE "
                "(use solver gauss_newton or adam_lbfgs)"
            )
        if solver == "gauss_newton" and self.problem.dim > 3:
            raise ValueError("solver gauss_newton uses a tensor quadrature grid: D <= 3")
        if not self.problem.is_linear and self.problem.dim > 3:
            raise ValueError("nonlinear problems use exact tensor quadrature: D <= 3")
        if adam_steps < 0 or lbfgs_iter < 1 or lr <= 0:
            raise ValueError("adam_steps must be >= 0, lbfgs_iter >= 1 and lr > 0")
        axes = self.problem.make_axes(modes)
        self.model = LowRankFourierSum(axes, self.problem.rank if rank is None else rank, seed=seed)
        if not self.problem.is_linear:
            initial_condition_start(self.model, self.problem)
        self._init_reference_metrics()
        self._step_counter = 0

    # ------------------------------------------------------------ forward / loss
    def forward(self, points: torch.Tensor) -> torch.Tensor:
        """Real field at ``points`` ``(N, D)`` -> ``(N,)``."""
        if points.dim() != 2 or points.shape[1] != self.model.dim:
            raise ValueError(
                f"dimension mismatch: points have shape {tuple(points.shape)}, the model has {self.model.dim} axes"
            )
        return self.model(points)

    def physics_loss(self) -> torch.Tensor:
        """The deterministic LoRFS loss (closed form if linear, exact quadrature otherwise)."""
        u = self.model.as_sum()
        ic = self.hparams.ic_weight
        if self.problem.is_linear:
            return closed_form_loss(self.problem.pieces(u, ic_weight=ic))
        return self.problem.nonlinear_loss(u, ic_weight=ic)

    # ------------------------------------------------------------ Lightning hooks
    def setup(self, stage: str) -> None:
        dm = getattr(self.trainer, "datamodule", None) if self._trainer is not None else None
        if isinstance(dm, ProblemDataModule) and dm.problem.name != self.problem.name:
            raise ValueError(
                f"the model solves {self.problem.name!r} but the data is for {dm.problem.name!r}"
            )

    def configure_optimizers(self):
        if self.hparams.solver != "adam_lbfgs":
            # The exact solvers update the parameters themselves; this zero-rate optimiser only
            # advances Lightning's step counter (checkpointing, max_steps, logging intervals).
            return torch.optim.SGD(self.model.parameters(), lr=0.0)
        adam = torch.optim.Adam(self.model.parameters(), lr=self.hparams.lr)
        lbfgs = torch.optim.LBFGS(
            self.model.parameters(),
            lr=1.0,
            max_iter=self.hparams.lbfgs_iter,
            history_size=50,
            line_search_fn="strong_wolfe",
            tolerance_grad=1e-14,
            tolerance_change=1e-16,
        )
        return [adam, lbfgs]

    def training_step(self, batch, batch_idx):
        solver = self.hparams.solver
        step = self._step_counter
        if solver == "als":

            def build(u):
                return self.problem.pieces(u, ic_weight=self.hparams.ic_weight)

            if step == 0:
                # fast_dev_run is a smoke test of the loop: a short greedy pass (one sweep per
                # term, no joint sweeps) instead of the full solve (seconds at d = 1000)
                smoke = self._trainer is not None and bool(self.trainer.fast_dev_run)
                short = {"sweeps_per_term": 1, "sweeps": 0} if smoke else {}
                hist = greedy_als(self.model, build, seed=self.hparams.seed, **short)
            else:
                hist = als_solve(self.model, build, sweeps=1)
            value = torch.tensor(hist.losses[-1], dtype=torch.float64)
        elif solver == "gauss_newton":
            hist = gauss_newton_solve(
                self.model, self.problem, sweeps=1, ic_weight=self.hparams.ic_weight
            )
            value = torch.tensor(hist.losses[-1], dtype=torch.float64)
        else:
            value = None
        if value is not None:
            self.optimizers().step()  # no gradients: only counts the step
        else:
            adam, lbfgs = self.optimizers()
            if step < self.hparams.adam_steps:
                adam.zero_grad()
                value = self.physics_loss()
                self.manual_backward(value)
                adam.step()
            else:

                def closure():
                    lbfgs.zero_grad()
                    out = self.physics_loss()
                    self.manual_backward(out)
                    return out

                value = lbfgs.step(closure)
            value = value.detach()
        self._step_counter += 1
        self.log("train_loss", value, prog_bar=True, batch_size=1)
        return value


class PINNModule(ReferenceEvaluation, pl.LightningModule):
    """A physics-informed neural network baseline on a registry problem.

    Parameters
    ----------
    problem, params:
        Registry problem and parameters (the datamodule's collocation points are the batch).
    arch:
        ``"mlp"``, ``"fourier"`` or ``"separable"``.
    width, depth:
        Hidden layer width and number of hidden layers (per-axis nets for ``separable``).
    features, sigma:
        Number and scale of the random Fourier features (``arch="fourier"``).
    sep_rank:
        Output features per axis of the separable PINN.
    precision:
        ``"float32"`` or ``"float64"`` parameters and inputs.
    adam_steps, lr, lbfgs_iter:
        Adam steps first, then L-BFGS steps of ``lbfgs_iter`` inner iterations each.
    n_boundary:
        Initial-condition and boundary points.
    ic_weight, bc_weight:
        Loss weights.
    seed:
        Seed of the initialisation and of the boundary points.

    Examples
    --------
    >>> m = PINNModule("convection", {"beta": 30}, width=8, depth=2)
    >>> m(torch.rand(5, 2, dtype=torch.float64)).shape
    torch.Size([5])
    >>> sum(p.numel() for p in m.parameters())
    105
    """

    def __init__(
        self,
        problem: str = "convection",
        params: dict[str, float] | None = None,
        arch: Arch = "mlp",
        width: int = 50,
        depth: int = 4,
        features: int = 64,
        sigma: float = 1.0,
        sep_rank: int = 16,
        precision: Literal["float32", "float64"] = "float32",
        adam_steps: int = 1000,
        lr: float = 1e-3,
        lbfgs_iter: int = 20,
        n_boundary: int = 256,
        ic_weight: float = 1.0,
        bc_weight: float = 1.0,
        seed: int = 0,
    ) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.automatic_optimization = False
        self.problem = build_problem(problem, params)
        for name, v in (("width", width), ("depth", depth), ("features", features)):
            if v < 1:
                raise ValueError(f"{name} must be >= 1, got {v}")
        if precision not in ("float32", "float64"):
            raise ValueError(f"precision must be 'float32' or 'float64', got {precision!r}")
        dtype = torch.float32 if precision == "float32" else torch.float64
        torch.manual_seed(seed)
        d = self.problem.dim
        if arch == "mlp":
            self.net = mlp(d, width, depth)
        elif arch == "fourier":
            self.net = FourierFeatureNet(d, width, depth, features, sigma, seed)
        elif arch == "separable":
            self.net = SeparableNet(d, width, depth, sep_rank)
        else:
            raise ValueError(f"arch must be 'mlp', 'fourier' or 'separable', got {arch!r}")
        self.net = self.net.to(dtype)
        self._dtype = dtype
        self._boundary = self._boundary_data(n_boundary, seed)
        self._init_reference_metrics()
        self._step_counter = 0

    # ------------------------------------------------------------ data of the loss
    def _boundary_data(self, n: int, seed: int) -> dict[str, torch.Tensor]:
        prob = self.problem
        gen = torch.Generator().manual_seed(seed + 7)
        lo = torch.tensor([s.domain[0] for s in prob.specs], dtype=torch.float64)
        hi = torch.tensor([s.domain[1] for s in prob.specs], dtype=torch.float64)

        def box(m: int) -> torch.Tensor:
            return lo + (hi - lo) * torch.rand(m, prob.dim, dtype=torch.float64, generator=gen)

        out: dict[str, torch.Tensor] = {}
        if prob.initial is not None:
            z = box(n)
            z[:, prob.time_axis] = lo[prob.time_axis]
            out["ic_z"], out["ic_g"] = z, prob.initial_values(z)
        for kind in ("periodic", "dirichlet"):
            axes = [j for j, s in enumerate(prob.specs) if s.boundary == kind]
            if not axes:
                continue
            z = box(n)
            which = torch.tensor(axes)[torch.randint(len(axes), (n,), generator=gen)]
            rows = torch.arange(n)
            za, zb = z.clone(), z.clone()
            za[rows, which] = lo[which]
            zb[rows, which] = hi[which]
            out[f"{kind}_a"], out[f"{kind}_b"] = za, zb
        return out

    def forward(self, points: torch.Tensor) -> torch.Tensor:
        """Network values at ``points`` ``(N, D)`` -> ``(N,)`` (float64 output)."""
        if points.dim() != 2 or points.shape[1] != self.problem.dim:
            raise ValueError(
                f"dimension mismatch: points have shape {tuple(points.shape)}, the problem has {self.problem.dim} axes"
            )
        return self.net(points.to(self._dtype)).squeeze(-1).to(torch.float64)

    def collocation_loss(self, z: torch.Tensor) -> torch.Tensor:
        """The PINN loss on collocation points ``z`` (Monte-Carlo residual + IC/BC terms)."""
        dt = self._dtype
        key = (tuple(z.shape), float(z[0, 0]), float(z[-1, -1]))
        if getattr(self, "_source_cache", (None,))[0] != key:
            self._source_cache = (key, self.problem.source_values(z.to(torch.float64)).to(dt))
        res = pde_residual(self.problem, self.net, z.to(dt), self._source_cache[1])
        total = res.pow(2).mean()
        b = self._boundary
        hp = self.hparams
        if "ic_z" in b:
            total = total + hp.ic_weight * (
                (self.net(b["ic_z"].to(dt)).squeeze(-1) - b["ic_g"].to(dt)).pow(2).mean()
            )
        if "periodic_a" in b:
            diff = self.net(b["periodic_a"].to(dt)) - self.net(b["periodic_b"].to(dt))
            total = total + hp.bc_weight * diff.pow(2).mean()
        if "dirichlet_a" in b:
            za, zb = b["dirichlet_a"].to(dt), b["dirichlet_b"].to(dt)
            total = total + hp.bc_weight * 0.5 * (
                self.net(za).pow(2).mean() + self.net(zb).pow(2).mean()
            )
        if self.problem.null_space:
            total = total + self.net(z.to(dt)).mean().pow(2)
        return total

    # ------------------------------------------------------------ Lightning hooks
    def setup(self, stage: str) -> None:
        dm = getattr(self.trainer, "datamodule", None) if self._trainer is not None else None
        if isinstance(dm, ProblemDataModule) and dm.problem.name != self.problem.name:
            raise ValueError(
                f"the model solves {self.problem.name!r} but the data is for {dm.problem.name!r}"
            )

    def configure_optimizers(self):
        adam = torch.optim.Adam(self.net.parameters(), lr=self.hparams.lr)
        lbfgs = torch.optim.LBFGS(
            self.net.parameters(),
            lr=1.0,
            max_iter=self.hparams.lbfgs_iter,
            history_size=50,
            line_search_fn="strong_wolfe",
        )
        return [adam, lbfgs]

    def training_step(self, batch, batch_idx):
        (z,) = batch
        adam, lbfgs = self.optimizers()
        step = self._step_counter
        if step < self.hparams.adam_steps:
            adam.zero_grad()
            value = self.collocation_loss(z)
            self.manual_backward(value)
            adam.step()
        else:

            def closure():
                lbfgs.zero_grad()
                out = self.collocation_loss(z)
                self.manual_backward(out)
                return out

            value = lbfgs.step(closure)
        self._step_counter = step + 1
        value = value.detach()
        self.log("train_loss", value.to(torch.float64), prog_bar=True, batch_size=1)
        return value


def load_solver_checkpoint(path: str | Path):
    """A :class:`LoRFSModule` or :class:`PINNModule` from a checkpoint of ``lorfs fit`` (eval mode).

    Goes through :func:`icml26_shared.cli.load_checkpoint`: a missing or unreadable file, or a
    checkpoint of another module, is a one-line :class:`~icml26_shared.cli.UsageError`.
    """
    from icml26_shared.cli import UsageError, load_checkpoint

    try:
        return load_checkpoint(LoRFSModule, path)
    except UsageError as lorfs_error:
        if "does not exist" in str(lorfs_error):
            raise
        try:
            return load_checkpoint(PINNModule, path)
        except UsageError:
            raise lorfs_error from None
