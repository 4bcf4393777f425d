"""Real-data path: The Well (``the-well``) and the authors' Hugging Face hub data, offline-aware.

Nothing here downloads at run time. Both sources read a *local* copy:

- :func:`well_datamodule` wraps ``the_well.data.WellDataModule`` for ``MHD_64`` (3D:
  density scalar, velocity and magnetic-field vectors), ``active_matter`` (2D 256x256:
  concentration scalar, velocity vector, rank-2 tensors D and E, transforming as
  ``R T R^T``) and ``shear_flow`` (256x512: not square, so only ``equivariant=False``
  backbones accept it). :data:`WELL_SPECS` gives each one's :class:`FieldSpec`.
- :class:`HubKF2D` reads the 2D Kolmogorov files ``train_V.npy`` / ``test_V.npy``
  (``(N, T, 2, n, n)``) of the authors' dataset ``thuerey-group/ReViT`` from a local
  snapshot folder.

A missing package or folder gives one clear error naming the fix.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import torch
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
