"""Your own fields: trajectories from ``.npz`` / HDF5 files with a declared field layout.

Paper: "ReViT: Rotational-equivariant Vision Transformers for Neural PDE Solvers" (Wei, List,
Thuerey, ICML 2026), Sec. "Group action": a field is a set of scalars ``s(R^-1 x)``, vectors
and pseudovectors ``R u(R^-1 x)`` and rank-2 tensors ``R T R^T``. The model can only be
equivariant if it knows which channel is which, so a user *declares* it:

.. code-block:: yaml

    data:
      problem: custom
      path: flow.npz                       # or flow.h5, or a folder (see below)
      fields: {velocity: vector, pressure: scalar, forcing: vector}
      static: [forcing]                    # input-only channels (forcing, masks, ...)

* :class:`FieldLayout`: the declaration (name -> ``scalar`` | ``vector`` | ``pseudovector``
  | ``tensor``, plus the ``static`` names) and the :class:`~revit_equivariant.group.FieldSpec`
  and state channels it gives; the predicted state is every non-static field.
* :func:`read_fields`: one file as trajectories ``(N, T, C, *grid)`` in float32.
* :func:`read_splits`: ``train`` / ``valid`` / ``test`` trajectories from one file (split by
  trajectory) or from a folder with ``train.*``, ``valid.*`` (optional) and ``test.*``.

Array layout inside a file (one array or HDF5 dataset per declared name, at the root):

* time-varying fields: ``(N, T, *grid)`` for a scalar, ``(N, T, *grid, d)`` for a vector or a
  pseudovector, ``(N, T, *grid, d, d)`` for a tensor;
* static fields may drop ``T`` (``(N, *grid, ...)``) or ``N`` too (``(*grid, ...)``);
* grid axes in image order, ``(H, W)`` = ``(y, x)`` in 2D and ``(D, H, W)`` = ``(z, y, x)`` in
  3D; components in coordinate order ``(x, y[, z])`` (this package's convention,
  :mod:`~revit_equivariant.group`); tensors row-major ``T[i, j]``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from .group import FieldSpec

KINDS = {"scalar": 0, "vector": 1, "pseudovector": 1, "tensor": 2}
SUFFIXES = (".npz", ".h5", ".hdf5")
SPLIT_NAMES = {"train": ("train",), "valid": ("valid", "val"), "test": ("test",)}


@dataclass(frozen=True)
class FieldLayout:
    """Which named field of a file is a scalar, vector, pseudovector or tensor.

    Parameters
    ----------
    fields:
        Field name -> kind (``scalar`` | ``vector`` | ``pseudovector`` | ``tensor``), in
        channel order.
    static:
        Names of input-only fields (forcing, obstacles): fed to the model, never predicted,
        carried over in rollouts.
    dim:
        Spatial dimension (2 or 3); :func:`read_fields` infers it from the arrays.

    Reference: Wei, List, Thuerey, "ReViT" (ICML 2026), Sec. "Group action".

    Examples
    --------
    >>> lay = FieldLayout({"velocity": "vector", "p": "scalar", "f": "vector"}, ("f",), dim=2)
    >>> lay.spec, lay.state, lay.channel_names
    (FieldSpec(n_channels=5, scalars=(2,), vectors=((0, 1), (3, 4)), pseudovectors=(), tensors=(), dim=2), (0, 1, 2), ('velocity_x', 'velocity_y', 'p', 'f_x', 'f_y'))
    """

    fields: Mapping[str, str]
    static: tuple[str, ...] = ()
    dim: int = 0

    def __post_init__(self) -> None:
        if not isinstance(self.fields, Mapping) or not self.fields:
            raise ValueError(
                "declare the fields: a mapping name -> scalar|vector|pseudovector|tensor, "
                "e.g. --data.fields '{velocity: vector, pressure: scalar}'"
            )
        bad = {n: k for n, k in self.fields.items() if k not in KINDS}
        if bad:
            raise ValueError(f"unknown field kind(s) {bad}; choose {', '.join(KINDS)}")
        object.__setattr__(self, "fields", dict(self.fields))
        object.__setattr__(self, "static", tuple(self.static))
        unknown = [n for n in self.static if n not in self.fields]
        if unknown:
            raise ValueError(
                f"static field(s) {unknown} are not among the fields {list(self.fields)}"
            )
        if all(n in self.static for n in self.fields):
            raise ValueError("every field is static: nothing is left to predict")
        if self.dim not in (0, 2, 3):
            raise ValueError(f"dim must be 2 or 3, got {self.dim}")

    def width(self, name: str) -> int:
        """Channels of one field (``d ** rank``)."""
        return self.dim ** KINDS[self.fields[name]]

    @property
    def channel_names(self) -> tuple[str, ...]:
        comp = "xyz"[: self.dim]
        out: list[str] = []
        for name, kind in self.fields.items():
            rank = KINDS[kind]
            if rank == 0:
                out.append(name)
            elif rank == 1:
                out += [f"{name}_{c}" for c in comp]
            else:
                out += [f"{name}_{a}{b}" for a in comp for b in comp]
        return tuple(out)

    def _groups(self) -> dict[str, tuple[int, ...]]:
        if not self.dim:
            raise ValueError("the layout's dim is not known yet (read_fields infers it)")
        out, c = {}, 0
        for name in self.fields:
            w = self.width(name)
            out[name] = tuple(range(c, c + w))
            c += w
        return out

    @property
    def spec(self) -> FieldSpec:
        """The :class:`~revit_equivariant.group.FieldSpec` of all channels (static included)."""
        groups = self._groups()
        by = {k: [groups[n] for n, kind in self.fields.items() if kind == k] for k in KINDS}
        n = sum(len(g) for g in groups.values())
        return FieldSpec(
            n,
            scalars=tuple(g[0] for g in by["scalar"]),
            vectors=tuple(by["vector"]),
            pseudovectors=tuple(by["pseudovector"]),
            tensors=tuple(by["tensor"]),
            dim=self.dim,
        )

    @property
    def state(self) -> tuple[int, ...]:
        """Channels of the predicted (non-static) fields."""
        groups = self._groups()
        return tuple(c for n, g in groups.items() if n not in self.static for c in g)

    def problem_spec(self):
        """The :class:`~revit_equivariant.pde_data.ProblemSpec` (spec and state channels)."""
        from .pde_data import ProblemSpec

        return ProblemSpec(self.spec, self.state)

    def as_dict(self) -> dict:
        """A plain dict (stored in checkpoints' hyperparameters)."""
        return {"fields": dict(self.fields), "static": list(self.static), "dim": self.dim}


def _open(path: Path) -> Mapping[str, np.ndarray]:
    if path.suffix == ".npz":
        try:
            with np.load(path, allow_pickle=False) as npz:
                return {k: npz[k] for k in npz.files}
        except (ValueError, OSError) as exc:
            raise ValueError(f"{path}: not a readable .npz file ({exc})") from None
    import h5py

    try:
        with h5py.File(path, "r") as h5:
            return {k: h5[k][()] for k in h5 if isinstance(h5[k], h5py.Dataset)}
    except OSError as exc:
        raise ValueError(f"{path}: not a readable HDF5 file ({exc})") from None


def read_fields(path: str | Path, layout: FieldLayout) -> tuple[torch.Tensor, FieldLayout]:
    """Trajectories ``(N, T, C, *grid)`` (float32) of one file, and the layout with its dim.

    Examples
    --------
    >>> import tempfile
    >>> f = Path(tempfile.mkdtemp()) / "toy.npz"
    >>> np.savez(f, u=np.zeros((2, 3, 8, 8, 2)), p=np.zeros((2, 3, 8, 8)))
    >>> traj, lay = read_fields(f, FieldLayout({"u": "vector", "p": "scalar"}))
    >>> tuple(traj.shape), lay.dim
    ((2, 3, 3, 8, 8), 2)
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no data file {str(path)!r}")
    if path.suffix not in SUFFIXES:
        raise ValueError(f"{path}: unknown file type; use {', '.join(SUFFIXES)}")
    arrays = _open(path)
    missing = [n for n in layout.fields if n not in arrays]
    if missing:
        raise ValueError(f"{path}: no array(s) {missing}; the file has {sorted(arrays)}")
    # time-varying fields fix N, T, the grid and dim
    dyn = [n for n in layout.fields if n not in layout.static]
    first = dyn[0]
    a0 = arrays[first]
    rank0 = KINDS[layout.fields[first]]
    dim = a0.ndim - 2 - rank0
    if dim not in (2, 3):
        raise ValueError(
            f"{path}: {layout.fields[first]} field {first!r} has shape {a0.shape}; expected "
            f"(N, T, *grid{', d' * rank0}) with a 2D or 3D grid"
        )
    if layout.dim and layout.dim != dim:
        raise ValueError(f"{path}: the fields are {dim}D, the layout was {layout.dim}D")
    layout = FieldLayout(layout.fields, layout.static, dim)
    n, t, grid = a0.shape[0], a0.shape[1], tuple(a0.shape[2 : 2 + dim])
    chans = []
    for name, kind in layout.fields.items():
        a = np.asarray(arrays[name])
        if not np.issubdtype(a.dtype, np.floating) and not np.issubdtype(a.dtype, np.integer):
            raise ValueError(f"{path}: field {name!r} has dtype {a.dtype}, expected numbers")
        rank = KINDS[kind]
        tail = grid + (dim,) * rank
        lead = a.shape[: a.ndim - len(tail)]
        allowed = [(n, t)] + ([(n,), ()] if name in layout.static else [])
        if a.shape[a.ndim - len(tail) :] != tail or lead not in allowed:
            shapes = " or ".join(str((*lead_, *tail)) for lead_ in allowed)
            raise ValueError(
                f"{path}: {kind} field {name!r} has shape {a.shape}, expected {shapes} "
                "(N trajectories, T frames, grid, components)"
            )
        if len(lead) == 1:  # (N, *tail): constant in time
            a = a[:, None]
        elif not lead:  # (*tail): shared by every trajectory and frame
            a = a[None, None]
        a = np.broadcast_to(a, (n, t, *tail)).reshape(n, t, *grid, -1)
        chans.append(np.moveaxis(a, -1, 2))
    traj = torch.from_numpy(np.concatenate(chans, axis=2).astype(np.float32))
    if t < 2:
        raise ValueError(f"{path}: {t} frame(s) per trajectory; one-step pairs need T >= 2")
    if not bool(torch.isfinite(traj).all()):
        raise ValueError(f"{path}: the fields contain NaN or inf")
    return traj.contiguous(), layout


def _split_file(folder: Path, split: str) -> Path | None:
    for stem in SPLIT_NAMES[split]:
        for suffix in SUFFIXES:
            if (folder / f"{stem}{suffix}").is_file():
                return folder / f"{stem}{suffix}"
    return None


def read_splits(
    path: str | Path, layout: FieldLayout, test_fraction: float = 0.2
) -> tuple[dict[str, torch.Tensor], FieldLayout]:
    """``{"train", "valid", "test"}`` trajectories and the layout (dim filled in).

    ``path`` is one file (its trajectories split in order: the last ``test_fraction`` (at
    least one) are ``test``, the one before them ``valid``, the rest ``train``; needs
    N >= 3) or a folder with ``train.{npz,h5,hdf5}``, ``test.*`` and optionally
    ``valid.*`` / ``val.*`` (without one, ``valid`` is the test split).
    """
    root = Path(path)
    if root.is_dir():
        files = {s: _split_file(root, s) for s in SPLIT_NAMES}
        if files["train"] is None or files["test"] is None:
            raise FileNotFoundError(
                f"{root}: a data folder needs train.npz|h5|hdf5 and test.npz|h5|hdf5 "
                "(valid.* optional)"
            )
        out = {}
        for split in ("train", "test", "valid"):
            if files[split] is not None:
                out[split], layout = read_fields(files[split], layout)
        out.setdefault("valid", out["test"])
        shapes = {k: tuple(v.shape[2:]) for k, v in out.items()}
        if len(set(shapes.values())) > 1:
            raise ValueError(f"{root}: the splits differ in channels or grid: {shapes}")
        return out, layout
    traj, layout = read_fields(root, layout)
    n = traj.shape[0]
    if n < 3:
        raise ValueError(
            f"{root}: {n} trajectories; a single file is split by trajectory into train / "
            "valid / test and needs N >= 3 (or give a folder with train.* and test.*)"
        )
    if not 0 < test_fraction < 1:
        raise ValueError(f"test_fraction must be in (0, 1), got {test_fraction}")
    n_test = max(1, round(n * test_fraction))
    n_test = min(n_test, n - 2)
    return {
        "train": traj[: n - n_test - 1],
        "valid": traj[n - n_test - 1 : n - n_test],
        "test": traj[n - n_test :],
    }, layout


def write_fields(path: str | Path, fields: Mapping[str, np.ndarray]) -> None:
    """Write named arrays in the layout :func:`read_fields` reads (``.npz`` or HDF5)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".npz":
        np.savez_compressed(path, **{k: np.asarray(v, np.float32) for k, v in fields.items()})
        return
    import h5py

    with h5py.File(path, "w") as h5:
        for k, v in fields.items():
            h5.create_dataset(k, data=np.asarray(v, np.float32))


def layout_from(fields: Mapping[str, str] | None, static: Sequence[str] | None) -> FieldLayout:
    """A :class:`FieldLayout` from the CLI's ``--data.fields`` / ``--data.static``."""
    if fields is None:
        raise ValueError(
            "problem custom needs the field layout: --data.fields '{velocity: vector, "
            "pressure: scalar}' (and --data.static [forcing] for input-only fields)"
        )
    return FieldLayout(fields, tuple(static or ()))
