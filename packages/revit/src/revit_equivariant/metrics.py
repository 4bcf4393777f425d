"""Emulator metrics: VRMSE, the equivariance error, one-step / rollout MSE, activation memory.

* :class:`VRMSE` (torchmetrics): ``sqrt(MSE / Var(u))`` per sample and channel, averaged;
* :class:`EquivarianceError` (torchmetrics): ``max_g ||Phi(L_g u) - L_g Phi(u)|| / ||Phi(u)||``
  over C4 (2D) or O (3D), through :func:`~revit_equivariant.group.equivariance_error`;
* :func:`one_step_mse` ``mean ||Phi(u_t) - u_{t+1}||^2`` over all pairs of trajectories and
  :func:`rollout_mse`, the MSE per step of the autoregressive rollout
  ``u_{t+k} = Phi^k(u_t)`` (:meth:`~revit_equivariant.lightning.EmulatorModule.rollout`);
* :func:`activation_memory_mb`: the memory autograd keeps for one training step.
"""

from __future__ import annotations

import torch
from torchmetrics import Metric

from .group import equivariance_error


class VRMSE(Metric):
    """Variance-scaled RMSE ``sqrt(mean((y - t)^2) / var(t))`` per sample and channel, averaged.

    Examples
    --------
    >>> m = VRMSE(); t = torch.randn(4, 2, 8, 8)
    >>> m.update(t, t); float(m.compute())
    0.0
    """

    def __init__(self) -> None:
        super().__init__()
        self.add_state("total", torch.tensor(0.0, dtype=torch.float64), dist_reduce_fx="sum")
        self.add_state("count", torch.tensor(0), dist_reduce_fx="sum")

    def update(self, pred: torch.Tensor, target: torch.Tensor) -> None:
        dims = tuple(range(2, target.ndim))
        mse = (pred - target).double().pow(2).mean(dims)
        var = target.double().var(dims).clamp_min(1e-12)
        self.total += (mse / var).sqrt().sum()
        self.count += mse.numel()

    def compute(self) -> torch.Tensor:
        return self.total / self.count.clamp_min(1)


class EquivarianceError(Metric):
    """Largest relative C4 equivariance error seen over the updates.

    Examples
    --------
    >>> from revit_equivariant.group import FieldSpec
    >>> m = EquivarianceError(); spec = FieldSpec(2, vectors=((0, 1),))
    >>> m.update(lambda u: 3 * u, torch.randn(1, 2, 8, 8), spec, spec); float(m.compute()) < 1e-6
    True
    """

    def __init__(self, group: str = "c4") -> None:
        super().__init__()
        self.group = group
        self.add_state("worst", torch.tensor(0.0, dtype=torch.float64), dist_reduce_fx="max")

    def update(self, model, x: torch.Tensor, spec, out_spec) -> None:
        err = equivariance_error(model, x, spec, self.group, out_spec)
        self.worst = torch.maximum(self.worst, torch.tensor(err, dtype=torch.float64))

    def compute(self) -> torch.Tensor:
        return self.worst


@torch.no_grad()
def one_step_mse(net, traj: torch.Tensor, state: tuple[int, ...], batch: int = 32) -> float:
    """Mean one-step MSE ``mean ||net(u_t) - u_{t+1}[state]||^2`` over all pairs of ``(N, T, C, ...)``.

    Examples
    --------
    >>> traj = torch.zeros(1, 3, 2, 4, 4)
    >>> one_step_mse(lambda x: x[:, :2] + 1, traj, (0, 1))
    1.0
    """
    x = traj[:, :-1].flatten(0, 1)
    y = traj[:, 1:, list(state)].flatten(0, 1)
    total = 0.0
    for i in range(0, x.shape[0], batch):
        total += float((net(x[i : i + batch]) - y[i : i + batch]).double().pow(2).sum())
    return total / y.numel()


@torch.no_grad()
def rollout_mse(module, traj: torch.Tensor, steps: int) -> list[float]:
    """MSE per step of an autoregressive rollout of ``module`` from frame 0 of each trajectory.

    ``module`` is an :class:`~revit_equivariant.lightning.EmulatorModule` (its ``rollout`` and
    its problem's state channels ``module.ps.state``).
    """
    pred = module.rollout(traj[:, 0], steps)
    target = traj[:, 1 : 1 + steps, list(module.ps.state)]
    err = (pred - target).double().pow(2)
    return err.mean([d for d in range(err.ndim) if d != 1]).tolist()


def activation_memory_mb(module: torch.nn.Module, loss_fn) -> float:
    """MiB of the tensors autograd saves for backward in ``loss_fn()`` (parameters excluded).

    Counted once per storage through ``torch.autograd.graph.saved_tensors_hooks``: the
    activation memory of one training step, deterministic and independent of the allocator
    and of other processes (resident-memory growth on a CPU is mostly allocator noise).
    ``loss_fn()`` is backpropagated (gradients accumulate in ``module``).
    """
    storages: dict[int, int] = {}

    def pack(t: torch.Tensor) -> torch.Tensor:
        st = t.untyped_storage()
        storages[st.data_ptr()] = st.nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        loss = loss_fn()
    loss.backward()
    params = {p.untyped_storage().data_ptr() for p in module.parameters()}
    return sum(n for ptr, n in storages.items() if ptr not in params) / 2**20
