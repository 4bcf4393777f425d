"""``revit reproduce``: the paper's headline comparison at CPU scale.

Paper: "ReViT: Rotational-equivariant Vision Transformers for Neural PDE Solvers"
(Wei, List, Thuerey, ICML 2026). One run, on 2D Kolmogorov flow generated here
(pseudo-spectral, forcing as an input vector channel, trained with ``x_hat`` forcing):

* trains ReViT, the same Swin backbone with ``equivariant=False``, that Swin with C4
  augmentation, a periodic U-Net, an FNO (``neuraloperator``'s when installed, else the
  re-implementation :class:`~revit_equivariant.fno.FNO2d`) and, when installed, the authors'
  ``revit-pde`` with the same data, epochs, optimiser and seed;
* evaluates each on the in-distribution test set, on the same test set rotated by 90 degrees
  (:func:`~revit_equivariant.group.rotate`), on fresh trajectories under the 45-degree
  forcing, in an autoregressive rollout, and measures the C4 equivariance error, the
  approximate SO(2) error at 45 degrees (:func:`~revit_equivariant.group.so2_equivariance_error`), CPU
  seconds per epoch (process CPU time, one thread: robust to other jobs on the machine) and
  the activation memory of one training step (:func:`activation_memory_mb`); the
  persistence anchor ``u_{t+1} = u_t`` is evaluated alongside;
* measures the exact O-group equivariance of ReViT3d (all 24 elements) next to the
  non-equivariant 3D Swin backbone, and the float64 C4 error of ReViT2d.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from pathlib import Path

import lightning.pytorch as pl
import torch
from icml26_shared.progress import progress
from icml26_shared.results import Report, Table

from .emulator import EmulatorModule
from .fno import neuraloperator_version
from .group import FieldSpec, equivariance_error, octahedral, rotate, so2_equivariance_error
from .navier_stokes3d import NavierStokes3D, random_velocity3d
from .pde_data import PairDataset, PDEDataModule, problem_spec, simulate
from .reference_model import reference_available
from .transformer import ReViT2d, ReViT3d

MODELS = (
    ("ReViT", "revit", False),
    ("Swin (same backbone)", "swin", False),
    ("Swin + C4 aug", "swin", True),
    ("U-Net", "unet", False),
)
REFERENCE = ("revit-pde (authors' reference, when installed)", "reference", False)


@dataclass(frozen=True)
class Setting:
    """Sizes of one reproduce run."""

    n_train: int
    n_test: int
    n_frames: int
    epochs: int
    rollout: int
    batch_size: int = 8
    embed_dim: int = 24
    lr: float = 3e-3


QUICK = Setting(n_train=12, n_test=4, n_frames=8, epochs=3, rollout=5)
FULL = Setting(n_train=24, n_test=8, n_frames=12, epochs=8, rollout=10)


def fno_row() -> tuple[str, str, bool]:
    """The FNO row: ``neuraloperator``'s FNO when installed, else the re-implementation."""
    version = neuraloperator_version()
    if version is None:
        return ("FNO (own re-implementation; neuraloperator not installed)", "fno-own", False)
    return (f"FNO (neuraloperator {version})", "fno", False)


class EpochTimer(pl.Callback):
    """CPU time (``time.process_time``) of every training epoch.

    CPU time rather than wall time: on a shared machine the wall time of one epoch grows with
    the other jobs' load, the CPU time of a one-thread run does not.
    """

    def __init__(self) -> None:
        self.times: list[float] = []
        self._t0 = 0.0

    def on_train_epoch_start(self, trainer, pl_module) -> None:
        self._t0 = time.process_time()

    def on_train_epoch_end(self, trainer, pl_module) -> None:
        self.times.append(time.process_time() - self._t0)


def activation_memory_mb(module: torch.nn.Module, loss_fn) -> float:
    """MiB of the tensors autograd saves for backward in ``loss_fn()`` (parameters excluded).

    Counted once per storage through ``torch.autograd.graph.saved_tensors_hooks``: the
    activation memory of one training step, deterministic and independent of the allocator
    and of other processes (resident-memory growth on a CPU is mostly allocator noise).
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


@torch.no_grad()
def one_step_mse(net, traj: torch.Tensor, state: tuple[int, ...], batch: int = 32) -> float:
    """Mean one-step MSE over all pairs of trajectories ``(N, T, C, n, n)``."""
    x = traj[:, :-1].flatten(0, 1)
    y = traj[:, 1:, list(state)].flatten(0, 1)
    total = 0.0
    for i in range(0, x.shape[0], batch):
        total += float((net(x[i : i + batch]) - y[i : i + batch]).double().pow(2).sum())
    return total / y.numel()


@torch.no_grad()
def rollout_mse(module: EmulatorModule, traj: torch.Tensor, steps: int) -> list[float]:
    """MSE per step of an autoregressive rollout from frame 0 of each trajectory."""
    pred = module.rollout(traj[:, 0], steps)
    target = traj[:, 1 : 1 + steps, list(module.ps.state)]
    return (pred - target).double().pow(2).mean((0, 2, 3, 4)).tolist()


def _persistence(x: torch.Tensor) -> torch.Tensor:
    return x[:, :2]


def reproduce(out: Path, quick: bool = False, seed: int = 0) -> Report:
    """Train the five emulators, evaluate them with the persistence anchor, return the report."""
    torch.set_num_threads(1)
    cpu_start = time.process_time()
    s = QUICK if quick else FULL
    report = Report("revit-equivariant", out)
    ps = problem_spec("kolmogorov")
    dm = PDEDataModule(
        "kolmogorov", s.n_train, 2, s.n_test, s.n_frames, batch_size=s.batch_size, seed=seed
    )
    dm.setup("fit")
    dm.setup("test")
    test_id = dm.test_traj
    tests = {
        "id": test_id,
        "rot90": simulate("kolmogorov", s.n_test, s.n_frames, seed + 2, variant="rot90"),
        "force45": simulate("kolmogorov", s.n_test, s.n_frames, seed + 3, variant="force45"),
    }
    cols = [
        "model",
        "params",
        "MSE id",
        "MSE rot90",
        "rot90/id",
        "MSE 45deg forcing",
        f"rollout MSE ({s.rollout} steps)",
        "equiv err",
        "SO(2) err 45deg",
        "CPU s/epoch",
        "act MB",
    ]
    table = Table(
        "2D Kolmogorov flow (32x32, forcing as input vector channel): one-step emulators",
        cols,
        notes=(
            f"{s.n_train} training trajectories x {s.n_frames} frames (dt = 0.2), {s.epochs} "
            f"AdamW epochs, batch {s.batch_size}, lr {s.lr} (cosine), seed {seed}, same data "
            f"for every model; test: {s.n_test} fresh trajectories (id), the same trajectories "
            "rotated by 90 degrees (grid and components), and fresh trajectories under the "
            "45-degree forcing sin(4(x+y))(1,-1)/sqrt2 (never seen in training). rollout: "
            "mean MSE over the autoregressive steps from frame 0 of each id test trajectory. "
            "equiv err = max over C4 of ||Phi(L_g u) - L_g Phi(u)|| / ||Phi(u)|| (float32, "
            "trained model, 4 test inputs). SO(2) err 45deg = the same relative error for a "
            "45-degree rotation (bilinear, periodic resampling; group.rotate_angle), measured "
            "in the disk of radius 0.35 n about the centre: approximate for every model, "
            "since 45 degrees does not map the grid onto itself. CPU s/epoch = process CPU time "
            "per training epoch (one thread). act MB = tensors saved for backward in one "
            "training step on a batch (activation memory, parameters excluded)."
        ),
    )
    curves: dict[str, list[float]] = {}
    rows = []
    models = MODELS + (fno_row(),) + ((REFERENCE,) if reference_available() else ())
    for name, backbone, augment in progress(models, desc="training", total=len(models)):
        pl.seed_everything(seed, verbose=False)
        module = EmulatorModule(
            backbone, "kolmogorov", embed_dim=s.embed_dim, lr=s.lr, check_equivariance=False
        )
        dm.hparams.augment = augment
        timer = EpochTimer()
        trainer = pl.Trainer(
            max_epochs=s.epochs,
            logger=False,
            enable_checkpointing=False,
            enable_progress_bar=False,
            enable_model_summary=False,
            num_sanity_val_steps=0,
            limit_val_batches=0,
            callbacks=[timer],
            accelerator="cpu",
            devices=1,
        )
        trainer.fit(module, train_dataloaders=dm.train_dataloader())
        module.eval()
        batch = next(
            iter(torch.utils.data.DataLoader(PairDataset(dm.train_traj, ps), s.batch_size))
        )
        module.train()
        act_mb = activation_memory_mb(module, lambda m=module, b=batch: m.rollout(b["x"], 1).sum())
        module.zero_grad()
        module.eval()
        mse = {k: one_step_mse(module, v, ps.state) for k, v in tests.items()}
        roll = rollout_mse(module, test_id, s.rollout)
        curves[name] = roll
        err = equivariance_error(module, test_id[:4, 0], ps.spec, "c4", module.out_spec)
        err45 = so2_equivariance_error(
            module, test_id[:4, 0], ps.spec, math.pi / 4, module.out_spec
        )
        rows.append(
            {
                "model": name,
                "params": sum(p.numel() for p in module.parameters()),
                "MSE id": mse["id"],
                "MSE rot90": mse["rot90"],
                "rot90/id": mse["rot90"] / mse["id"],
                "MSE 45deg forcing": mse["force45"],
                cols[6]: sum(roll) / len(roll),
                "equiv err": err,
                "SO(2) err 45deg": err45,
                "CPU s/epoch": sum(timer.times) / len(timer.times),
                "act MB": act_mb,
            }
        )
    dm.hparams.augment = False
    pers = {k: one_step_mse(_persistence, v, ps.state) for k, v in tests.items()}
    pers_roll = [
        float((test_id[:, 0, :2] - test_id[:, t, :2]).double().pow(2).mean())
        for t in range(1, 1 + s.rollout)
    ]
    curves["persistence"] = pers_roll
    rows.append(
        {
            "model": "persistence u(t+1)=u(t) (anchor)",
            "params": 0,
            "MSE id": pers["id"],
            "MSE rot90": pers["rot90"],
            "rot90/id": pers["rot90"] / pers["id"],
            "MSE 45deg forcing": pers["force45"],
            cols[6]: sum(pers_roll) / len(pers_roll),
            "equiv err": 0.0,
            "SO(2) err 45deg": so2_equivariance_error(
                _persistence, test_id[:4, 0], ps.spec, math.pi / 4, FieldSpec(2, vectors=((0, 1),))
            ),
        }
    )
    table.extend(rows)
    report.add_table(table)
    report.add_table(_exactness_table(seed, quick))
    report.add_table(_flow3d_table(seed, quick))
    _plot(report, rows, curves)
    by = {r["model"]: r for r in rows}
    ratio = by["ReViT"]["CPU s/epoch"] / by["Swin (same backbone)"]["CPU s/epoch"]
    mem_ratio = by["ReViT"]["act MB"] / by["Swin (same backbone)"]["act MB"]
    report.note(
        f"Compute overhead of ReViT over the same non-equivariant Swin backbone: {ratio:.2f}x "
        f"CPU seconds per epoch, {mem_ratio:.2f}x activation memory. "
        f"ReViT rot90/id = {by['ReViT']['rot90/id']:.6f} (an exactly equivariant model gives 1 "
        "up to float32 rounding), Swin rot90/id = "
        f"{by['Swin (same backbone)']['rot90/id']:.3f}, Swin + C4 aug rot90/id = "
        f"{by['Swin + C4 aug']['rot90/id']:.3f}."
    )
    report.note(
        (
            "revit-pde reference row: trained with the same data, sizes and optimiser. "
            if reference_available()
            else "revit-pde is not installed (pip install 'revit-equivariant[bench]'): no reference row. "
        )
        + "Not in this table: The Well / hub datasets (they need the network; with a local "
        "copy, `revit fit --data.problem NAME --model.problem NAME --data.path DIR` trains on them)."
    )
    report.note(f"CPU time of this run (one thread): {time.process_time() - cpu_start:.0f} s.")
    return report


def _flow3d_table(seed: int, quick: bool) -> Table:
    """Train ReViT3d and Swin3d one-step on the small 3D flow; test on all 24 rotations of O."""
    n, n_train, n_test, frames, epochs = (8, 6, 3, 5, 6) if quick else (8, 12, 4, 6, 15)
    ns = NavierStokes3D(n, nu=0.05, dt=0.05)
    train = ns.trajectory(random_velocity3d(n_train, n, seed + 10), frames, 0.2).float()
    test = ns.trajectory(random_velocity3d(n_test, n, seed + 11), frames, 0.2).float()
    spec = FieldSpec(3, vectors=((0, 1, 2),))
    xs, ys = train[:, :-1].reshape(-1, 3, n, n, n), train[:, 1:].reshape(-1, 3, n, n, n)
    xt, yt = test[:, :-1].reshape(-1, 3, n, n, n), test[:, 1:].reshape(-1, 3, n, n, n)
    table = Table(
        f"3D decaying Navier-Stokes ({n}^3 cube): one-step emulators over all 24 rotations of O",
        ["model", "params", "MSE id", "MSE O-rotated", "rot/id", "equiv err (24)", "CPU s/epoch"],
        notes=(
            f"{n_train} training trajectories x {frames} frames (interval 0.2, nu = 0.05, random "
            f"divergence-free initial velocity), {epochs} AdamW epochs (lr 3e-3, batch 8), "
            f"seed {seed}; test: {n_test} fresh trajectories (id) and the same pairs under each "
            "of the 24 rotations of O (MSE O-rotated = mean over the 23 non-identity elements). "
            "equiv err = max over O of ||Phi(L_g u) - L_g Phi(u)|| / ||Phi(u)|| of the trained "
            "model (float32, 2 test inputs). persistence MSE id: "
            f"{float((xt - yt).pow(2).mean()):.4g}."
        ),
    )
    for eq in (True, False):
        torch.manual_seed(seed)
        net = ReViT3d(spec, (0, 1, 2), window=2, embed_dim=12, depths=(1, 1, 1), equivariant=eq)
        opt = torch.optim.AdamW(net.parameters(), lr=3e-3, weight_decay=1e-4)
        g = torch.Generator().manual_seed(seed)
        times = []
        for _ in range(epochs):
            t0 = time.process_time()
            for idx in torch.randperm(len(xs), generator=g).split(8):
                loss = (net(xs[idx]) - ys[idx]).pow(2).mean()
                opt.zero_grad()
                loss.backward()
                opt.step()
            times.append(time.process_time() - t0)
        net.eval()
        with torch.no_grad():
            mse = float((net(xt) - yt).pow(2).mean())
            rot = [
                float((net(rotate(xt, spec, r)) - rotate(yt, spec, r)).pow(2).mean())
                for r in octahedral()[1:]
            ]
        table.add_row(
            model="ReViT3d" if eq else "Swin3d (equivariant=False)",
            params=sum(p.numel() for p in net.parameters()),
            **{
                "MSE id": mse,
                "MSE O-rotated": sum(rot) / len(rot),
                "rot/id": sum(rot) / len(rot) / mse,
                "equiv err (24)": equivariance_error(net, xt[:2], spec, "o", net.out_spec),
                "CPU s/epoch": sum(times) / len(times),
            },
        )
    return table


def _exactness_table(seed: int, quick: bool) -> Table:
    """Random-init equivariance error of ReViT2d (C4) and ReViT3d (all 24 elements of O)."""
    table = Table(
        "Exact equivariance at random init: C4 (2D) and the 24 rotations of O (3D)",
        ["model", "group", "elements", "params", "equiv err fp32", "equiv err fp64", "fwd CPU s"],
        notes=(
            "max over the group's non-identity elements of ||Phi(L_g u) - L_g Phi(u)|| / "
            "||Phi(u)||; 2D: batch 2, 32x32, velocity + forcing (two vectors); 3D: batch 1, "
            "16^3 (8^3 in --quick), velocity + a scalar, frames from mean velocity and mean "
            "vorticity (aovc). fwd CPU s = CPU time of one forward pass."
        ),
    )
    g = torch.Generator().manual_seed(seed)
    spec2 = problem_spec("kolmogorov").spec
    x2 = torch.randn(2, 4, 32, 32, generator=g)
    spec3 = FieldSpec(4, scalars=(3,), vectors=((0, 1, 2),))
    n3 = 8 if quick else 16
    x3 = torch.randn(1, 4, n3, n3, n3, generator=g)
    cases = []
    for eq in (True, False):
        torch.manual_seed(seed)
        cases.append(
            (
                "ReViT2d" if eq else "Swin2d (equivariant=False)",
                "C4",
                ReViT2d(spec2, (0, 1), window=4, embed_dim=24, equivariant=eq),
                x2,
                spec2,
                "c4",
            )
        )
    for eq in (True, False):
        torch.manual_seed(seed)
        cases.append(
            (
                "ReViT3d" if eq else "Swin3d (equivariant=False)",
                "O",
                ReViT3d(
                    spec3, (0, 1, 2, 3), window=2, embed_dim=12, depths=(1, 1, 1), equivariant=eq
                ),
                x3,
                spec3,
                "o",
            )
        )
    for name, group, net, x, spec, key in cases:
        net.eval()
        t0 = time.process_time()
        with torch.no_grad():
            net(x)
        fwd = time.process_time() - t0
        e32 = equivariance_error(net, x, spec, key, net.out_spec)
        e64 = equivariance_error(net.double(), x.double(), spec, key, net.out_spec)
        table.add_row(
            model=name,
            group=group,
            elements=4 if key == "c4" else 24,
            params=sum(p.numel() for p in net.parameters()),
            **{"equiv err fp32": e32, "equiv err fp64": e64, "fwd CPU s": fwd},
        )
    return table


def _plot(report: Report, rows: list[dict], curves: dict[str, list[float]]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
    names = [
        r["model"].split(" (")[0].replace("persistence u(t+1)=u(t)", "persistence") for r in rows
    ]
    keys = ["MSE id", "MSE rot90", "MSE 45deg forcing"]
    width = 0.27
    for j, key in enumerate(keys):
        axes[0].bar(
            [i + (j - 1) * width for i in range(len(rows))],
            [r[key] for r in rows],
            width,
            label=key,
        )
    axes[0].set_xticks(range(len(rows)), names, rotation=30, ha="right", fontsize=7)
    axes[0].set(ylabel="one-step MSE", title="in-distribution vs rotated")
    axes[0].set_yscale("log")
    axes[0].legend(fontsize=7)
    for name, roll in curves.items():
        axes[1].plot(range(1, len(roll) + 1), roll, marker="o", label=name)
    axes[1].set(xlabel="rollout step", ylabel="MSE", title="autoregressive rollout (id test)")
    axes[1].set_yscale("log")
    axes[1].legend(fontsize=7)
    fig.tight_layout()
    report.save_figure(fig, "kolmogorov_comparison.png")
