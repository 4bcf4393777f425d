"""Offline-aware real-data path: clear errors when the data or the-well are absent."""

import numpy as np
import pytest
import torch
from revit_equivariant.group import rotate
from revit_equivariant.real_data import WELL_SPECS, HubKF2D, well_datamodule


def test_missing_well_folder_names_the_download(tmp_path):
    with pytest.raises(FileNotFoundError, match="the-well-download"):
        well_datamodule("MHD_64", tmp_path)


def test_well_specs_are_rotatable():
    x = torch.randn(1, 11, 8, 8)
    y = rotate(rotate(x, WELL_SPECS["active_matter"], 1), WELL_SPECS["active_matter"], 3)
    torch.testing.assert_close(x, y)
    assert WELL_SPECS["MHD_64"].dim == 3


def test_hub_kf2d_pairs_and_errors(tmp_path):
    traj = np.random.default_rng(0).normal(size=(2, 4, 2, 8, 8)).astype(np.float32)
    np.save(tmp_path / "train_V.npy", traj)
    ds = HubKF2D(tmp_path)
    assert len(ds) == 6
    item = ds[4]
    np.testing.assert_array_equal(item["x"].numpy(), traj[1, 1])
    np.testing.assert_array_equal(item["y"][0].numpy(), traj[1, 2])
    with pytest.raises(FileNotFoundError, match="snapshot_download"):
        HubKF2D(tmp_path, "test")
    np.save(tmp_path / "test_V.npy", np.zeros((2, 4, 3, 8, 8), np.float32))
    with pytest.raises(ValueError, match="expected"):
        HubKF2D(tmp_path, "test")
