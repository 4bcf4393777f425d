"""The emulator benchmark: train table rows from ``revit fit`` configs, then test them.

A row of the benchmark *is* a fit config (``configs/kolmogorov-revit.yaml``, ...): its
``model:`` and ``data:`` blocks build the :class:`~revit_equivariant.lightning.EmulatorModule`
and the :class:`~revit_equivariant.lightning.PDEDataModule` (one datamodule per row, so the
"Swin + C4 aug" row is the config with ``data.augment: true``, nothing is changed between
rows), and its ``trainer.max_epochs`` the epochs; :func:`read_fit_config` reads it and a
reproduce preset may shrink the sizes (``data`` / ``epochs`` overrides). Training goes through
the module with :func:`icml26_shared.trainer.quiet_trainer` (:func:`train_emulator`).

Tables:

* :func:`kolmogorov_table`: one-step MSE in distribution, on the 90-degree rotated test set
  and under the unseen 45-degree forcing; rollout MSE; the C4 equivariance error
  ``max_g ||Phi(L_g u) - L_g Phi(u)|| / ||Phi(u)||`` and the approximate SO(2) error at 45
  degrees of the trained models; CPU seconds per epoch and activation memory; the
  persistence anchor ``u_{t+1} = u_t``;
* :func:`o_group_table`: 3D emulators tested under all 24 rotations of O;
* :func:`exactness_table`: the same error at random init, C4 (ReViT2d) and O (ReViT3d), in
  float32 and float64.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from icml26_shared.results import Table

from .fno import neuraloperator_version
from .group import FieldSpec, equivariance_error, octahedral, rotate, so2_equivariance_error
from .lightning import EmulatorModule, EpochTimer, PDEDataModule
from .metrics import activation_memory_mb, one_step_mse, rollout_mse
from .pde_data import PairDataset, problem_spec, simulate
from .reference_model import reference_available
from .transformer import ReViT2d, ReViT3d

PERSISTENCE = "persistence u(t+1)=u(t) (anchor)"


@dataclass
class FitConfig:
    """The parts of a ``revit fit`` config that define a benchmark row."""

    name: str
    model: dict[str, Any]
    data: dict[str, Any]
    epochs: int
    seed: int = 0


def read_fit_config(
    path: str | Path,
    model: Mapping[str, Any] | None = None,
    data: Mapping[str, Any] | None = None,
    epochs: int | None = None,
) -> FitConfig:
    """Read ``model:``, ``data:``, ``trainer.max_epochs`` of a fit config, with overrides.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "row.yaml"
    >>> _ = p.write_text("trainer: {max_epochs: 8}\\nmodel: {backbone: swin}\\ndata: {n_train: 24}\\n")
    >>> read_fit_config(p, data={"n_train": 12}, epochs=3)
    FitConfig(name='row', model={'backbone': 'swin'}, data={'n_train': 12}, epochs=3, seed=0)
    """
    import yaml

    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"fit config {str(path)!r} does not exist")
    cfg = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    trainer = cfg.get("trainer") or {}
    n_epochs = epochs if epochs is not None else trainer.get("max_epochs")
    if not isinstance(n_epochs, int) or n_epochs < 1:
        raise ValueError(f"{path.name}: trainer.max_epochs must be a positive integer")
    return FitConfig(
        path.stem,
        {**(cfg.get("model") or {}), **(model or {})},
        {**(cfg.get("data") or {}), **(data or {})},
        n_epochs,
        int(cfg.get("seed_everything", 0) or 0),
    )


def row_label(config: FitConfig) -> str:
    """The table's name of a row: backbone, plus augmentation and the FNO implementation."""
    backbone = config.model.get("backbone", "revit")
    dim3 = problem_spec(config.model.get("problem", "kolmogorov")).spec.dim == 3
    if backbone == "revit":
        return "ReViT3d" if dim3 else "ReViT"
    if backbone == "swin":
        if dim3:
            return "Swin3d (equivariant=False)"
        return "Swin + C4 aug" if config.data.get("augment") else "Swin (same backbone)"
    if backbone == "fno":
        version = neuraloperator_version()
        if version is None:
            return "FNO (own re-implementation; neuraloperator not installed)"
        return f"FNO (neuraloperator {version})"
    return {
        "unet": "U-Net",
        "fno-own": "FNO (own re-implementation)",
        "reference": "revit-pde (authors' reference, when installed)",
    }.get(backbone, backbone)


def runnable(config: FitConfig) -> bool:
    """False for the ``reference`` row when ``revit-pde`` is not installed."""
    return config.model.get("backbone") != "reference" or reference_available()


@dataclass
class TrainedEmulator:
    """A trained row: the module (eval mode), its datamodule and CPU seconds per epoch."""

    label: str
    module: EmulatorModule
    datamodule: PDEDataModule
    cpu_s_per_epoch: float
    extra: dict[str, float] = field(default_factory=dict)


def train_emulator(config: FitConfig, seed: int | None = None) -> TrainedEmulator:
    """Train one row through :class:`EmulatorModule` and the quiet Trainer (no validation).

    ``seed`` (default: the config's ``seed_everything``) seeds the initialisation and is the
    data seed, so every row of a table sees the same trajectories.
    """
    import lightning.pytorch as pl
    from icml26_shared.trainer import quiet_trainer

    seed = config.seed if seed is None else seed
    pl.seed_everything(seed, verbose=False)
    module = EmulatorModule(**{**config.model, "check_equivariance": False})
    datamodule = PDEDataModule(**{**config.data, "seed": seed})
    timer = EpochTimer()
    trainer = quiet_trainer(
        max_epochs=config.epochs, num_sanity_val_steps=0, limit_val_batches=0, callbacks=[timer]
    )
    trainer.fit(module, datamodule=datamodule)
    return TrainedEmulator(row_label(config), module.eval(), datamodule, timer.mean)


def same_data(configs: Sequence[FitConfig], ignore: Sequence[str] = ("augment",)) -> dict:
    """The data block all rows share (except ``ignore``); rows on different data raise."""
    blocks = [{k: v for k, v in c.data.items() if k not in ignore} for c in configs]
    for c, b in zip(configs, blocks, strict=True):
        if b != blocks[0]:
            raise ValueError(
                f"benchmark rows must share their data: {c.name} has {b}, "
                f"{configs[0].name} has {blocks[0]}"
            )
    return blocks[0]


def _persistence(x: torch.Tensor) -> torch.Tensor:
    return x[:, :2]


def kolmogorov_table(
    configs: Sequence[FitConfig], rollout: int, seed: int = 0
) -> tuple[Table, list[dict], dict[str, list[float]]]:
    """Train every row on the same Kolmogorov data and test it (see the module docstring).

    Returns the table, its rows and the rollout curves (per step, for the figure).
    """
    from icml26_shared.progress import progress

    data = PDEDataModule(**{**same_data(configs), "seed": seed}).hparams
    ps = problem_spec(data.problem)
    n_test, n_frames = data.n_test, data.n_frames
    sizes = (data.grid, data.sim_grid, data.interval)
    tests = {
        "id": simulate(data.problem, n_test, n_frames, seed + 2, *sizes),
        "rot90": simulate(data.problem, n_test, n_frames, seed + 2, *sizes, variant="rot90"),
        "force45": simulate(data.problem, n_test, n_frames, seed + 3, *sizes, variant="force45"),
    }
    test_id = tests["id"]
    model0 = configs[0].model
    roll_col = f"rollout MSE ({rollout} steps)"
    cols = ["model", "params", "MSE id", "MSE rot90", "rot90/id", "MSE 45deg forcing", roll_col,
            "equiv err", "SO(2) err 45deg", "CPU s/epoch", "act MB"]  # fmt: skip
    table = Table(
        f"2D Kolmogorov flow ({data.grid}x{data.grid}, forcing as input vector channel): "
        "one-step emulators",
        cols,
        notes=(
            f"{data.n_train} training trajectories x {n_frames} frames (dt = {data.interval}), "
            f"{configs[0].epochs} AdamW epochs, batch {data.batch_size}, lr {model0.get('lr')} "
            f"(cosine), seed {seed}, same data for every model; test: {n_test} fresh "
            "trajectories (id), the same trajectories rotated by 90 degrees (grid and "
            "components), and fresh trajectories under the 45-degree forcing "
            "sin(4(x+y))(1,-1)/sqrt2 (never seen in training). rollout: mean MSE over the "
            "autoregressive steps from frame 0 of each id test trajectory. equiv err = max over "
            "C4 of ||Phi(L_g u) - L_g Phi(u)|| / ||Phi(u)|| (float32, trained model, 4 test "
            "inputs). SO(2) err 45deg = the same relative error for a 45-degree rotation "
            "(bilinear, periodic resampling; group.rotate_angle), measured in the disk of radius "
            "0.35 n about the centre: approximate for every model, since 45 degrees does not map "
            "the grid onto itself. CPU s/epoch = process CPU time per training epoch (one "
            "thread). act MB = tensors saved for backward in one training step on a batch "
            "(activation memory, parameters excluded)."
        ),
    )
    rows, curves = [], {}
    for config in progress([c for c in configs if runnable(c)], desc="training"):
        run = train_emulator(config, seed)
        module = run.module
        batch = next(iter(torch.utils.data.DataLoader(
            PairDataset(run.datamodule.train_traj, ps), data.batch_size)))  # fmt: skip
        module.train()
        act_mb = activation_memory_mb(module, lambda m=module, b=batch: m.rollout(b["x"], 1).sum())
        module.zero_grad()
        module.eval()
        mse = {k: one_step_mse(module, v, ps.state) for k, v in tests.items()}
        roll = rollout_mse(module, test_id, rollout)
        curves[run.label] = roll
        rows.append({
            "model": run.label,
            "params": sum(p.numel() for p in module.parameters()),
            "MSE id": mse["id"],
            "MSE rot90": mse["rot90"],
            "rot90/id": mse["rot90"] / mse["id"],
            "MSE 45deg forcing": mse["force45"],
            roll_col: sum(roll) / len(roll),
            "equiv err": equivariance_error(module, test_id[:4, 0], ps.spec, "c4", module.out_spec),
            "SO(2) err 45deg": so2_equivariance_error(
                module, test_id[:4, 0], ps.spec, math.pi / 4, module.out_spec),
            "CPU s/epoch": run.cpu_s_per_epoch,
            "act MB": act_mb,
        })  # fmt: skip
    pers = {k: one_step_mse(_persistence, v, ps.state) for k, v in tests.items()}
    pers_roll = [
        float((test_id[:, 0, :2] - test_id[:, t, :2]).double().pow(2).mean())
        for t in range(1, 1 + rollout)
    ]
    curves["persistence"] = pers_roll
    rows.append({
        "model": PERSISTENCE,
        "params": 0,
        "MSE id": pers["id"],
        "MSE rot90": pers["rot90"],
        "rot90/id": pers["rot90"] / pers["id"],
        "MSE 45deg forcing": pers["force45"],
        roll_col: sum(pers_roll) / len(pers_roll),
        "equiv err": 0.0,
        "SO(2) err 45deg": so2_equivariance_error(
            _persistence, test_id[:4, 0], ps.spec, math.pi / 4, FieldSpec(2, vectors=((0, 1),))),
    })  # fmt: skip
    table.extend(rows)
    return table, rows, curves


def overhead_note(rows: Sequence[Mapping[str, Any]]) -> str:
    """ReViT's CPU time and activation memory over the same Swin backbone, and rot90/id."""
    by = {r["model"]: r for r in rows}
    revit, swin, aug = by.get("ReViT"), by.get("Swin (same backbone)"), by.get("Swin + C4 aug")
    if revit is None or swin is None:
        return ""
    note = (
        "Compute overhead of ReViT over the same non-equivariant Swin backbone: "
        f"{revit['CPU s/epoch'] / swin['CPU s/epoch']:.2f}x CPU seconds per epoch, "
        f"{revit['act MB'] / swin['act MB']:.2f}x activation memory. "
        f"ReViT rot90/id = {revit['rot90/id']:.6f} (an exactly equivariant model gives 1 up to "
        f"float32 rounding), Swin rot90/id = {swin['rot90/id']:.3f}"
    )
    return note + (f", Swin + C4 aug rot90/id = {aug['rot90/id']:.3f}." if aug else ".")


def o_group_table(configs: Sequence[FitConfig], seed: int = 0) -> Table:
    """Train 3D rows (``decaying3d``) one-step; test them under all 24 rotations of O."""
    data = PDEDataModule(**{**same_data(configs), "seed": seed}).hparams
    spec = problem_spec(data.problem).spec
    n = data.grid
    test = simulate(
        data.problem, data.n_test, data.n_frames, seed + 2, n, data.sim_grid, data.interval
    )
    xt, yt = test[:, :-1].flatten(0, 1), test[:, 1:].flatten(0, 1)
    model0 = configs[0].model
    table = Table(
        f"3D decaying Navier-Stokes ({n}^3 cube): one-step emulators over all 24 rotations of O",
        ["model", "params", "MSE id", "MSE O-rotated", "rot/id", "equiv err (24)", "CPU s/epoch"],
        notes=(
            f"{data.n_train} training trajectories x {data.n_frames} frames (interval "
            f"{data.interval}, nu = 0.05, random divergence-free initial velocity), "
            f"{configs[0].epochs} AdamW epochs (lr {model0.get('lr')}, cosine, batch "
            f"{data.batch_size}), seed {seed}, trained through EmulatorModule; test: "
            f"{data.n_test} fresh trajectories (id) and the same pairs under each of the 24 "
            "rotations of O (MSE O-rotated = mean over the 23 non-identity elements). equiv err "
            "= max over O of ||Phi(L_g u) - L_g Phi(u)|| / ||Phi(u)|| of the trained model "
            f"(float32, 2 test inputs). persistence MSE id: {float((xt - yt).pow(2).mean()):.4g}."
        ),
    )
    for config in configs:
        run = train_emulator(config, seed)
        net = run.module
        with torch.no_grad():
            mse = float((net(xt) - yt).pow(2).mean())
            rot = [
                float((net(rotate(xt, spec, r)) - rotate(yt, spec, r)).pow(2).mean())
                for r in octahedral()[1:]
            ]
        table.add_row(
            model=run.label,
            params=sum(p.numel() for p in net.parameters()),
            **{
                "MSE id": mse,
                "MSE O-rotated": sum(rot) / len(rot),
                "rot/id": sum(rot) / len(rot) / mse,
                "equiv err (24)": equivariance_error(net, xt[:2], spec, "o", net.out_spec),
                "CPU s/epoch": run.cpu_s_per_epoch,
            },
        )
    return table


def exactness_table(
    seed: int = 0,
    grid2: int = 32,
    grid3: int = 16,
    model2: Mapping[str, Any] | None = None,
    model3: Mapping[str, Any] | None = None,
) -> Table:
    """Random-init equivariance error of ReViT2d (C4) and ReViT3d (all 24 elements of O).

    ``model2`` / ``model3``: ReViT2d / ReViT3d settings (default: window 4, width 24 in 2D;
    window 2, width 12, depths (1, 1, 1) in 3D); each is compared with ``equivariant=False``.
    """
    model2 = {"window": 4, "embed_dim": 24, **(model2 or {})}
    model3 = {"window": 2, "embed_dim": 12, "depths": (1, 1, 1), **(model3 or {})}
    table = Table(
        "Exact equivariance at random init: C4 (2D) and the 24 rotations of O (3D)",
        ["model", "group", "elements", "params", "equiv err fp32", "equiv err fp64", "fwd CPU s"],
        notes=(
            "max over the group's non-identity elements of ||Phi(L_g u) - L_g Phi(u)|| / "
            f"||Phi(u)||; 2D: batch 2, {grid2}x{grid2}, velocity + forcing (two vectors); 3D: "
            f"batch 1, {grid3}^3, velocity + a scalar, frames from mean velocity and mean "
            "vorticity (aovc). fwd CPU s = CPU time of one forward pass."
        ),
    )
    g = torch.Generator().manual_seed(seed)
    spec2 = problem_spec("kolmogorov").spec
    x2 = torch.randn(2, 4, grid2, grid2, generator=g)
    spec3 = FieldSpec(4, scalars=(3,), vectors=((0, 1, 2),))
    x3 = torch.randn(1, 4, grid3, grid3, grid3, generator=g)
    cases = []
    for eq in (True, False):
        torch.manual_seed(seed)
        net = ReViT2d(spec2, (0, 1), equivariant=eq, **model2)
        cases.append(("ReViT2d" if eq else "Swin2d (equivariant=False)", "C4", net, x2, spec2))
    for eq in (True, False):
        torch.manual_seed(seed)
        net = ReViT3d(spec3, (0, 1, 2, 3), equivariant=eq, **model3)
        cases.append(("ReViT3d" if eq else "Swin3d (equivariant=False)", "O", net, x3, spec3))
    for name, group, net, x, spec in cases:
        key = group.lower()
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


class LearningCurve:
    """Training loss and validation one-step MSE per epoch; keeps the best epoch's weights.

    A Lightning callback: ``curve[e]`` is the MSE on the validation trajectories after epoch
    ``e + 1``, ``train_curve[e]`` the mean training loss of the batches of that epoch (in
    training mode: with drop-path active, and with the rotations of an augmented row);
    :meth:`restore_best` loads the weights of the epoch with the lowest validation MSE (model
    selection on validation data, never on the test set; the same rule for every row).
    """

    def __init__(self, val_traj: torch.Tensor, state: tuple[int, ...]) -> None:
        import lightning.pytorch as pl

        self.callback = type(
            "_Curve",
            (pl.Callback,),
            {
                "on_train_epoch_end": lambda _, t, m: self._epoch(m),
                "on_train_batch_end": lambda _, t, m, out, b, i: self._batch(out, b),
            },
        )()
        self.val_traj, self.state = val_traj, state
        self.curve: list[float] = []
        self.train_curve: list[float] = []
        self._sum, self._n = 0.0, 0
        self.best_state: dict[str, torch.Tensor] | None = None

    def _batch(self, out, batch) -> None:
        loss = out["loss"] if isinstance(out, dict) else out
        n = int(batch["x"].shape[0])
        self._sum += float(loss) * n
        self._n += n

    def _epoch(self, module) -> None:
        was = module.training
        module.eval()
        mse = one_step_mse(module, self.val_traj, self.state)
        module.train(was)
        if not self.curve or mse < min(self.curve):
            self.best_state = {k: v.detach().clone() for k, v in module.state_dict().items()}
        self.curve.append(mse)
        if self._n:
            self.train_curve.append(self._sum / self._n)
        self._sum, self._n = 0.0, 0

    @property
    def best_epoch(self) -> int:
        """1-based epoch of the lowest validation MSE."""
        return 1 + min(range(len(self.curve)), key=self.curve.__getitem__)

    def restore_best(self, module) -> None:
        if self.best_state is not None:
            module.load_state_dict(self.best_state)


def _mean_sd(values: Sequence[float]) -> str:
    m = sum(values) / len(values)
    sd = (sum((v - m) ** 2 for v in values) / max(1, len(values) - 1)) ** 0.5
    return f"{m:.4g} ± {sd:.2g}"


def seeded_table(
    configs: Sequence[FitConfig], seeds: Sequence[int]
) -> tuple[Table, Table, dict, dict, list[dict]]:
    """Train every row on every seed (data and initialisation), best-validation epoch, test.

    Returns the summary table (mean ± sample standard deviation over seeds), the per-seed
    table, the learning curves ``{model: {seed: [val MSE per epoch]}}``, the training-loss
    curves (same layout) and the raw per-seed records. Rows share their data per seed (:func:`same_data`); the test sets are fresh
    trajectories (data seed + 2) and the same trajectories rotated by 90 degrees.
    """
    import lightning.pytorch as pl
    from icml26_shared.progress import progress
    from icml26_shared.trainer import quiet_trainer

    data = PDEDataModule(**{**same_data(configs), "seed": seeds[0]}).hparams
    ps = problem_spec(data.problem)
    sizes = (data.grid, data.sim_grid, data.interval)
    records, curves, train_curves = [], {}, {}
    jobs = [(c, s) for c in configs if runnable(c) for s in seeds]
    tests: dict[int, dict[str, torch.Tensor]] = {}
    for config, seed in progress(jobs, desc="training (rows x seeds)"):
        if seed not in tests:
            tests[seed] = {
                "id": simulate(data.problem, data.n_test, data.n_frames, seed + 2, *sizes),
                "rot90": simulate(
                    data.problem, data.n_test, data.n_frames, seed + 2, *sizes, variant="rot90"
                ),
            }
        pl.seed_everything(seed, verbose=False)
        module = EmulatorModule(**{**config.model, "check_equivariance": False})
        dm = PDEDataModule(**{**config.data, "seed": seed})
        dm.setup("fit")
        curve = LearningCurve(dm.val_traj, ps.state)
        timer = EpochTimer()
        trainer = quiet_trainer(
            max_epochs=config.epochs,
            num_sanity_val_steps=0,
            limit_val_batches=0,
            callbacks=[timer, curve.callback],
        )
        trainer.fit(module, datamodule=dm)
        curve.restore_best(module)
        module.eval()
        label = row_label(config)
        mse = {k: one_step_mse(module, v, ps.state) for k, v in tests[seed].items()}
        curves.setdefault(label, {})[seed] = curve.curve
        train_curves.setdefault(label, {})[seed] = curve.train_curve
        records.append({
            "model": label, "seed": seed,
            "params": sum(p.numel() for p in module.parameters()),
            "MSE id": mse["id"], "MSE rot90": mse["rot90"],
            "train loss": curve.train_curve[curve.best_epoch - 1],
            "best epoch": curve.best_epoch, "CPU s/epoch": timer.mean,
        })  # fmt: skip
    for seed, t in tests.items():
        pers = {k: one_step_mse(_persistence, v, ps.state) for k, v in t.items()}
        records.append({"model": PERSISTENCE, "seed": seed, "params": 0,
                        "MSE id": pers["id"], "MSE rot90": pers["rot90"]})  # fmt: skip
    epochs = configs[0].epochs
    reg = configs[0].model
    notes = (
        f"{len(seeds)} seeds ({', '.join(map(str, seeds))}): each seed draws its own training, "
        f"validation and test trajectories and initialisation. {data.n_train} training "
        f"trajectories x {data.n_frames} frames on a {data.grid}x{data.grid} grid (simulated "
        f"at {data.sim_grid}x{data.sim_grid}), up to {epochs} AdamW epochs (batch "
        f"{data.batch_size}, cosine lr, weight decay {reg.get('weight_decay', 1e-4)}; "
        f"transformers: drop-path {reg.get('drop_path', 0.0)}), the weights of the epoch with the lowest validation "
        f"MSE ({data.n_val} validation trajectories; the same rule for every row); test: "
        f"{data.n_test} fresh trajectories (id) and the same ones rotated by 90 degrees "
        "(the y-forced flow, never seen in training). Cells: mean ± sample standard deviation "
        "over the seeds."
    )
    summary = Table(
        f"2D Kolmogorov flow ({data.grid}x{data.grid}), {len(seeds)} seeds: one-step MSE, "
        "in distribution and rotated",
        [
            "model",
            "params",
            "MSE id",
            "MSE rot90",
            "rot90/id",
            "train loss",
            "best epoch",
            "CPU s/epoch",
        ],
        notes=notes,
    )
    per_seed = Table(
        "Per seed: one-step MSE id / rot90",
        ["model", *(f"seed {s}" for s in seeds)],
        notes="Each cell: MSE id / MSE rot90 of one seed.",
    )
    for label in dict.fromkeys(r["model"] for r in records):
        rs = [r for r in records if r["model"] == label]
        ids, rots = [r["MSE id"] for r in rs], [r["MSE rot90"] for r in rs]
        summary.add_row(
            model=label,
            params=rs[0]["params"],
            **{
                "MSE id": _mean_sd(ids),
                "MSE rot90": _mean_sd(rots),
                "rot90/id": _mean_sd([b / a for a, b in zip(ids, rots, strict=True)]),
                "train loss": _mean_sd([r["train loss"] for r in rs]) if "train loss" in rs[0] else None,
                "best epoch": _mean_sd([r["best epoch"] for r in rs]) if "best epoch" in rs[0] else None,
                "CPU s/epoch": _mean_sd([r["CPU s/epoch"] for r in rs]) if "CPU s/epoch" in rs[0] else None,
            },
        )  # fmt: skip
        by_seed = {r["seed"]: r for r in rs}
        per_seed.add_row(model=label, **{
            f"seed {s}": f"{by_seed[s]['MSE id']:.4g} / {by_seed[s]['MSE rot90']:.4g}"
            for s in seeds if s in by_seed
        })  # fmt: skip
    return summary, per_seed, curves, train_curves, records


def claim_verdict(records: Sequence[Mapping[str, Any]], seeds: Sequence[int]) -> str:
    """The issue's two checks, computed: ReViT id <= Swin id per seed; best rotated-data MSE."""
    by = {(r["model"], r["seed"]): r for r in records}
    wins = [
        s for s in seeds
        if ("ReViT", s) in by and ("Swin (same backbone)", s) in by
        and by["ReViT", s]["MSE id"] <= by["Swin (same backbone)", s]["MSE id"]
    ]  # fmt: skip
    rot = {}
    for r in records:
        rot.setdefault(r["model"], []).append(r["MSE rot90"])
    mean_rot = {m: sum(v) / len(v) for m, v in rot.items()}
    best = min(mean_rot, key=mean_rot.get)
    best_seeds = sum(
        1 for s in seeds
        if min((by[m, s]["MSE rot90"], m) for m in rot if (m, s) in by)[1] == "ReViT"
    )  # fmt: skip
    return (
        f"ReViT in-distribution MSE <= the same Swin's on {len(wins)} of {len(seeds)} seeds "
        f"({', '.join(map(str, wins)) or 'none'}). Lowest mean rotated-data MSE: {best} "
        f"({mean_rot[best]:.4g}); ReViT has the lowest rotated-data MSE of all rows on "
        f"{best_seeds} of {len(seeds)} seeds."
    )


def seeds_result(configs: Sequence[FitConfig], seeds: Sequence[int]):
    """The ``seeds2d`` section: tables (summary, per seed, learning curves), figure, verdict."""
    from .plots import learning_curves_figure

    summary, per_seed, curves, train_curves, records = seeded_table(configs, seeds)
    epochs = max(len(c) for by in curves.values() for c in by.values())
    curve_table = Table(
        "Learning curves: training loss / validation one-step MSE after each epoch (mean over "
        "seeds)",
        ["epoch", *curves],
        notes="The curves of the figure (solid: validation, dashed: training); the validation "
        "trajectories are separate from the training and test sets.",
    )

    def mean_at(by: Mapping[int, Sequence[float]], e: int) -> float:
        vals = [c[e] for c in by.values() if len(c) > e]
        return sum(vals) / len(vals) if vals else float("nan")

    for e in range(epochs):
        curve_table.add_row(epoch=e + 1, **{
            m: f"{mean_at(train_curves[m], e):.4g} / {mean_at(by, e):.4g}"
            for m, by in curves.items()
        })  # fmt: skip
    figures = {"seeds2d_learning_curves.png": learning_curves_figure(curves, train_curves)}
    return [summary, per_seed, curve_table], figures, [claim_verdict(records, seeds)]
