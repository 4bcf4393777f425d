"""Real-data path: The Well (``the-well``) and the authors' Hugging Face hub data, offline-aware.

Nothing here downloads at run time. Both sources read a *local* copy:

- :class:`WellHDF5` reads The Well's HDF5 layout directly with ``h5py``:
  ``t0_fields`` (scalars, ``(B, T, *grid)``), ``t1_fields`` (vectors, ``(B, T, *grid, d)``),
  ``t2_fields`` (rank-2 tensors, ``(B, T, *grid, d, d)``), constant fields broadcast from
  their ``sample_varying`` / ``time_varying`` attributes. The Well orders the grid axes as
  ``dimensions@spatial_dims`` (``x, y[, z]``) and the components the same way; this package
  puts x along the *last* axis (:mod:`~revit_equivariant.group`), so the reader reverses the
  grid axes and keeps the component order, and returns the matching :class:`FieldSpec`.
- :func:`well_datamodule` wraps ``the_well.data.WellDataModule`` for ``MHD_64`` (3D:
  density scalar, velocity and magnetic-field vectors), ``active_matter`` (2D 256x256:
  concentration scalar, velocity vector, rank-2 tensors D and E, transforming as
  ``R T R^T``) and ``shear_flow`` (256x512: not square, so only ``equivariant=False``
  backbones accept it). :data:`WELL_SPECS` gives each one's :class:`FieldSpec`.
- :class:`HubKF2D` reads the 2D Kolmogorov files ``train_V.npy`` / ``test_V.npy``
  (``(N, T, 2, n, n)``) of the authors' dataset ``thuerey-group/ReViT`` from a local
  snapshot folder.

A missing package or folder gives one clear error naming the fix; a hub path
(``hf://...``) while the hub is unreachable gives one clear offline error
(:func:`icml26_shared.hub.hub_reachable`).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import torch
from icml26_shared.hub import hub_reachable
from torch.utils.data import Dataset

from .group import FieldSpec

WELL_SPECS: dict[str, FieldSpec] = {
    "MHD_64": FieldSpec(7, scalars=(0,), vectors=((1, 2, 3), (4, 5, 6))),
    "active_matter": FieldSpec(
        11, scalars=(0,), vectors=((1, 2),), tensors=((3, 4, 5, 6), (7, 8, 9, 10))
    ),
    "shear_flow": FieldSpec(4, scalars=(0, 1), vectors=((2, 3),)),
}
HUB_HINT = (
    'huggingface_hub.snapshot_download("thuerey-group/ReViT", repo_type="dataset", '
    "local_dir=...) on a machine with network"
)


def _require_hub(path: str) -> None:
    if not hub_reachable():
        raise ConnectionError(
            f"{path} is on the Hugging Face hub, which is unreachable (offline): download the "
            "data on a machine with network (`the-well-download --base-path DIR --dataset "
            "NAME`) and pass the local DIR"
        )


def _attr_list(value) -> list[str]:
    if isinstance(value, (str, bytes)):
        value = [value]
    return [v.decode() if isinstance(v, bytes) else str(v) for v in value]


class WellHDF5(Dataset):
    """One-step pairs from local HDF5 files in The Well's layout, read lazily with ``h5py``.

    Items are ``{"x": u_t, "y": u_{t+1}[None]}`` as float32 ``(C, *grid)`` /
    ``(1, C, *grid)`` with the grid axes reversed to this package's order (x last) and the
    channels ``[t0 fields, t1 fields (x, y[, z]), t2 fields (row-major)]``; :attr:`spec` is
    the matching :class:`FieldSpec` and :attr:`channel_names` names every channel. Only the
    two frames of an item are read from disk.

    Parameters
    ----------
    path:
        One ``.hdf5`` / ``.h5`` file or a folder of them (e.g. ``.../data/train``); all
        files must carry the same fields and grid.
    fields:
        Optional subset / order of field names (default: every field, in the file's order).

    Examples
    --------
    >>> import tempfile
    >>> f = f"{tempfile.mkdtemp()}/toy.hdf5"
    >>> rho, u = np.zeros((2, 3, 8, 8), np.float32), np.zeros((2, 3, 8, 8, 2), np.float32)
    >>> write_well_hdf5(f, {"density": rho}, {"velocity": u})
    >>> ds = WellHDF5(f)
    >>> len(ds), ds[0]["x"].shape, ds.channel_names, ds.spec.vectors
    (4, torch.Size([3, 8, 8]), ('density', 'velocity_x', 'velocity_y'), ((1, 2),))
    """

    def __init__(self, path: str | Path, fields: list[str] | None = None) -> None:
        if str(path).startswith("hf://"):
            _require_hub(str(path))
            raise ValueError(f"{path}: WellHDF5 reads local files; download them first")
        if importlib.util.find_spec("h5py") is None:
            raise ImportError("reading The Well's HDF5 files needs h5py: pip install h5py")
        root = Path(path)
        if root.is_dir():
            files = sorted([*root.glob("*.hdf5"), *root.glob("*.h5")])
        else:
            files = [root] if root.is_file() else []
        if not files:
            raise FileNotFoundError(
                f"no Well HDF5 files at {root} (offline: download them first with "
                "`the-well-download --base-path DIR --dataset NAME`)"
            )
        self.files = files
        scans = [self._scan(f, fields) for f in files]
        self.layout, self.channel_names, self.spec, self.grid = scans[0][:4]
        for f, scan in zip(files, scans, strict=True):
            if scan[1:4] != (self.channel_names, self.spec, self.grid):
                raise ValueError(f"{f}: fields or grid differ from those of {files[0]}")
        # (file index, trajectory, first frame) of every pair
        self.index = [
            (k, n, t) for k, scan in enumerate(scans) for n in range(scan[4]) for t in range(scan[5] - 1)
        ]  # fmt: skip
        self._handles: dict[int, object] = {}

    @staticmethod
    def _scan(file: Path, fields: list[str] | None):
        import h5py

        with h5py.File(file, "r") as h5:
            try:
                d = int(h5.attrs["n_spatial_dims"])
                n_traj = int(h5.attrs["n_trajectories"])
                n_t = h5["dimensions"]["time"].shape[0]
            except KeyError as exc:
                raise ValueError(f"{file}: not in The Well's layout (missing {exc})") from None
            found: dict[str, tuple[str, int, bool, bool]] = {}
            grid = None
            for rank in (0, 1, 2):
                group = h5.get(f"t{rank}_fields")
                if group is None:
                    continue
                for name in _attr_list(group.attrs.get("field_names", list(group.keys()))):
                    ds = group[name]
                    sample = bool(ds.attrs.get("sample_varying", True))
                    time = bool(ds.attrs.get("time_varying", True))
                    lead = (n_traj,) * sample + (n_t,) * time
                    shape = ds.shape
                    ok = (
                        len(shape) == len(lead) + d + rank
                        and shape[: len(lead)] == lead
                        and shape[len(shape) - rank :] == (d,) * rank
                    )
                    if not ok:
                        raise ValueError(
                            f"{file}: field {name} has shape {shape}, expected "
                            f"{'(n_traj, ' if sample else '('}{'n_steps, ' if time else ''}"
                            f"*grid{', d' * rank}) with d = {d}"
                        )
                    here = tuple(shape[len(lead) : len(lead) + d])
                    if grid is not None and here != grid:
                        raise ValueError(f"{file}: field {name} grid {here} differs from {grid}")
                    grid = here
                    found[name] = (f"t{rank}_fields", rank, sample, time)
        names = list(found) if fields is None else list(fields)
        missing = [n for n in names if n not in found]
        if missing:
            raise ValueError(f"{file}: no field(s) {missing}; available: {list(found)}")
        channel_names, scalars, vectors, tensors, layout = [], [], [], [], []
        comp = "xyz"[:d]
        for name in names:
            group, rank, sample, time = found[name]
            idx = tuple(range(len(channel_names), len(channel_names) + d**rank))
            if rank == 0:
                scalars.append(idx[0])
                channel_names.append(name)
            elif rank == 1:
                vectors.append(idx)
                channel_names += [f"{name}_{c}" for c in comp]
            else:
                tensors.append(idx)
                channel_names += [f"{name}_{a}{b}" for a in comp for b in comp]
            layout.append((group, name, rank, sample, time))
        spec = FieldSpec(
            len(channel_names),
            scalars=tuple(scalars),
            vectors=tuple(vectors),
            tensors=tuple(tensors),
            dim=d,
        )
        return tuple(layout), tuple(channel_names), spec, tuple(reversed(grid or ())), n_traj, n_t

    def __len__(self) -> int:
        return len(self.index)

    def _file(self, k: int):
        import h5py

        if k not in self._handles:  # one handle per file and per (worker) process
            self._handles[k] = h5py.File(self.files[k], "r")
        return self._handles[k]

    def __getstate__(self) -> dict:
        return {**self.__dict__, "_handles": {}}

    def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
        k, n, t = self.index[i]
        h5 = self._file(k)
        d = self.spec.dim
        chans = []
        for group, name, rank, sample, time in self.layout:
            ds = h5[group][name]
            key = (n,) * sample + (slice(t, t + 2),) * time
            arr = np.asarray(ds[key] if key else ds[()], dtype=np.float32)
            if not time:
                arr = np.broadcast_to(arr[None], (2, *arr.shape))
            # (2, x, y[, z], d..) -> (2, d.. flattened, [z,] y, x)
            arr = np.transpose(arr, (0, *range(d, 0, -1), *range(1 + d, 1 + d + rank)))
            arr = arr.reshape(*arr.shape[: 1 + d], -1)
            chans.append(np.moveaxis(arr, -1, 1))
        pair = torch.from_numpy(np.ascontiguousarray(np.concatenate(chans, axis=1)))
        if not torch.isfinite(pair).all():
            raise ValueError(f"non-finite values in {self.files[k]}, trajectory {n}, frame {t}")
        return {"x": pair[0], "y": pair[1:]}


def write_well_hdf5(
    path: str | Path,
    t0: dict[str, np.ndarray],
    t1: dict[str, np.ndarray] | None = None,
    t2: dict[str, np.ndarray] | None = None,
    dataset_name: str = "custom",
) -> None:
    """Write fields ``(B, T, x, y[, z][, d[, d]])`` as an HDF5 file in The Well's layout.

    For converting one's own simulations so that :class:`WellHDF5` (and ``the-well``) read
    them; grid axes and components are in The Well's order (x first).
    """
    import h5py

    groups = {"t0_fields": t0, "t1_fields": t1 or {}, "t2_fields": t2 or {}}
    rank, first = next((r, v) for r, g in enumerate(groups.values()) for v in g.values())
    d = first.ndim - 2 - rank
    with h5py.File(path, "w") as h5:
        h5.attrs.update(
            dataset_name=dataset_name, grid_type="cartesian", n_spatial_dims=d,
            n_trajectories=first.shape[0], simulation_parameters=[],
        )  # fmt: skip
        dims = h5.create_group("dimensions")
        dims.attrs["spatial_dims"] = list("xyz"[:d])
        dims.create_dataset("time", data=np.arange(first.shape[1], dtype=np.float32))
        for ax, name in enumerate("xyz"[:d]):
            n = first.shape[2 + ax]
            dims.create_dataset(name, data=np.linspace(0, 1, n, endpoint=False, dtype=np.float32))
        h5.create_group("boundary_conditions")
        h5.create_group("scalars").attrs["field_names"] = []
        for gname, fields in groups.items():
            group = h5.create_group(gname)
            group.attrs["field_names"] = list(fields)
            for name, arr in fields.items():
                ds = group.create_dataset(name, data=np.asarray(arr, np.float32))
                ds.attrs.update(sample_varying=True, time_varying=True, dim_varying=[True] * d)


def well_datamodule(dataset: str, base_path: str | Path, batch_size: int = 4, **kwargs):
    """The Well's ``WellDataModule`` for a local copy of ``dataset`` under ``base_path``.

    Examples
    --------
    >>> well_datamodule("nope", "/nonexistent")
    Traceback (most recent call last):
    ...
    ValueError: unknown Well dataset 'nope'; choose MHD_64, active_matter or shear_flow
    """
    if dataset not in WELL_SPECS:
        raise ValueError(
            f"unknown Well dataset {dataset!r}; choose MHD_64, active_matter or shear_flow"
        )
    if str(base_path).startswith("hf://"):
        _require_hub(str(base_path))
        if importlib.util.find_spec("the_well") is None:
            raise ImportError("the Well loader needs the-well: pip install the-well")
        from the_well.data import WellDataModule

        return WellDataModule(
            well_base_path=str(base_path),
            well_dataset_name=dataset,
            batch_size=batch_size,
            **kwargs,
        )
    root = Path(base_path)
    if not (root / "datasets" / dataset).is_dir() and not (root / dataset).is_dir():
        raise FileNotFoundError(
            f"The Well dataset {dataset} not found under {root} (offline: download it first "
            f"with `the-well-download --base-path {root} --dataset {dataset}`)"
        )
    if importlib.util.find_spec("the_well") is None:
        raise ImportError("the Well loader needs the-well: pip install the-well")
    from the_well.data import WellDataModule

    return WellDataModule(
        well_base_path=str(root / "datasets") if (root / "datasets").is_dir() else str(root),
        well_dataset_name=dataset,
        batch_size=batch_size,
        **kwargs,
    )


class HubKF2D(Dataset):
    """One-step pairs from the authors' local 2D Kolmogorov files (``{split}_V.npy``).

    Items are ``{"x": u_t, "y": u_{t+1}[None]}`` as float32 ``(2, n, n)`` / ``(1, 2, n, n)``,
    the layout of :class:`~revit_equivariant.pde_data.PairDataset` (velocity only: the
    hub files carry no forcing channel).

    Examples
    --------
    >>> import tempfile
    >>> d = tempfile.mkdtemp()
    >>> np.save(f"{d}/train_V.npy", np.zeros((2, 3, 2, 8, 8), np.float32))
    >>> ds = HubKF2D(d, "train")
    >>> len(ds), ds[0]["x"].shape
    (4, torch.Size([2, 8, 8]))
    """

    spec = FieldSpec(2, vectors=((0, 1),))

    def __init__(self, root: str | Path, split: str = "train") -> None:
        path = Path(root) / f"{split}_V.npy"
        if not path.is_file():
            raise FileNotFoundError(f"{path} not found (offline: fetch it with {HUB_HINT})")
        data = np.load(path, mmap_mode="r")
        if data.ndim != 5 or data.shape[2] != 2 or data.shape[-1] != data.shape[-2]:
            raise ValueError(f"{path}: expected (N, T, 2, n, n), got {tuple(data.shape)}")
        self.data = data

    def __len__(self) -> int:
        n, t = self.data.shape[:2]
        return n * (t - 1)

    def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
        n, t = divmod(i, self.data.shape[1] - 1)
        pair = torch.from_numpy(np.array(self.data[n, t : t + 2], dtype=np.float32))
        if not torch.isfinite(pair).all():
            raise ValueError(f"non-finite values in trajectory {n}, frame {t}")
        return {"x": pair[0], "y": pair[1:]}
