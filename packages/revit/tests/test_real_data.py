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


def _well_file(path, n_traj=2, n_t=4, nx=8, ny=8, seed=0):
    """A tiny file in The Well's HDF5 layout, written with raw h5py (grid axes x, y)."""
    h5py = pytest.importorskip("h5py")
    rng = np.random.default_rng(seed)
    x = np.arange(nx) * 2 * np.pi / nx
    y = np.arange(ny) * 2 * np.pi / ny
    xx, yy = np.meshgrid(x, y, indexing="ij")  # (nx, ny): first grid axis is x
    amp = rng.normal(size=(n_traj, n_t, 1, 1))
    phi = amp * (np.sin(xx) + 2 * np.cos(2 * yy))  # potential
    grad = np.stack(  # exact gradient, components (d/dx, d/dy) in the last axis
        [amp * np.cos(xx) + 0 * yy, amp * (-4 * np.sin(2 * yy)) + 0 * xx], axis=-1
    )
    tens = rng.normal(size=(n_traj, n_t, nx, ny, 2, 2))
    visc = np.float32(0.3) * np.ones((nx, ny))  # constant field: not sample/time varying
    with h5py.File(path, "w") as f:
        f.attrs["dataset_name"] = "toy"
        f.attrs["grid_type"] = "cartesian"
        f.attrs["n_spatial_dims"] = 2
        f.attrs["n_trajectories"] = n_traj
        dims = f.create_group("dimensions")
        dims.attrs["spatial_dims"] = ["x", "y"]
        dims.create_dataset("time", data=np.arange(n_t, dtype=np.float32))
        dims.create_dataset("x", data=x.astype(np.float32))
        dims.create_dataset("y", data=y.astype(np.float32))
        bc = f.create_group("boundary_conditions").create_group("x_periodic")
        bc.attrs["bc_type"] = "periodic"
        t0 = f.create_group("t0_fields")
        t0.attrs["field_names"] = ["phi", "visc"]
        t0.create_dataset("phi", data=phi.astype(np.float32))
        v = t0.create_dataset("visc", data=visc.astype(np.float32))
        v.attrs["sample_varying"] = False
        v.attrs["time_varying"] = False
        t1 = f.create_group("t1_fields")
        t1.attrs["field_names"] = ["grad_phi"]
        t1.create_dataset("grad_phi", data=grad.astype(np.float32))
        t2 = f.create_group("t2_fields")
        t2.attrs["field_names"] = ["T"]
        t2.create_dataset("T", data=tens.astype(np.float32))
    return phi, grad, tens


def test_well_hdf5_reads_shapes_fields_and_components(tmp_path):
    from revit_equivariant.real_data import WellHDF5

    phi, grad, tens = _well_file(tmp_path / "toy.hdf5", nx=8, ny=16)
    ds = WellHDF5(tmp_path / "toy.hdf5")
    assert ds.channel_names == (
        "phi", "visc", "grad_phi_x", "grad_phi_y", "T_xx", "T_xy", "T_yx", "T_yy",
    )  # fmt: skip
    assert ds.spec.scalars == (0, 1) and ds.spec.vectors == ((2, 3),)
    assert ds.spec.tensors == ((4, 5, 6, 7),) and ds.spec.dim == 2
    assert ds.grid == (16, 8)  # (H=y, W=x)
    assert len(ds) == 2 * 3
    item = ds[4]  # trajectory 1, frame 1 -> 2
    assert item["x"].shape == (8, 16, 8) and item["y"].shape == (1, 8, 16, 8)  # (C, H=y, W=x)
    # grid axes reversed: the Well's [x, y] is [W, H] here; components keep (x, y) order
    np.testing.assert_allclose(item["x"][0].numpy(), phi[1, 1].T, rtol=1e-6)
    np.testing.assert_allclose(item["y"][0, 2].numpy(), grad[1, 2, :, :, 0].T, rtol=1e-6)
    np.testing.assert_allclose(item["x"][5].numpy(), tens[1, 1, :, :, 0, 1].T, rtol=1e-6)
    np.testing.assert_allclose(item["x"][1].numpy(), 0.3, rtol=1e-6)  # broadcast constant
    sub = WellHDF5(tmp_path, fields=["grad_phi", "phi"])  # a folder, a subset, reordered
    assert sub.channel_names == ("grad_phi_x", "grad_phi_y", "phi")
    assert sub.spec.vectors == ((0, 1),) and sub.spec.scalars == (2,)


def test_well_hdf5_vector_components_rotate_with_the_grid(tmp_path):
    """Sign convention on read data: rotate(phi) then differentiate == rotate(grad phi)."""
    from revit_equivariant.real_data import WellHDF5

    _well_file(tmp_path / "toy.hdf5", nx=16, ny=16)
    ds = WellHDF5(tmp_path / "toy.hdf5", fields=["phi", "grad_phi"])
    u = torch.stack([ds[0]["x"], ds[3]["x"]]).double()  # frame 0 of both: phi, d/dx, d/dy

    def spectral_grad(s):
        n = s.shape[-1]
        k = torch.fft.fftfreq(n, 1.0 / n).double()
        sh = torch.fft.fft2(s)
        dx = torch.fft.ifft2(1j * k[None, :] * sh).real  # x along W
        dy = torch.fft.ifft2(1j * k[:, None] * sh).real  # y along H
        return torch.stack([dx, dy], 1)

    torch.testing.assert_close(spectral_grad(u[:, 0]), u[:, 1:], atol=1e-5, rtol=1e-5)
    for k in (1, 2, 3):
        r = rotate(u, ds.spec, k)
        torch.testing.assert_close(spectral_grad(r[:, 0]), r[:, 1:], atol=1e-5, rtol=1e-5)


def test_well_hdf5_bad_files(tmp_path):
    h5py = pytest.importorskip("h5py")
    from revit_equivariant.real_data import WellHDF5

    with pytest.raises(FileNotFoundError, match="the-well-download"):
        WellHDF5(tmp_path)
    with h5py.File(tmp_path / "bad.hdf5", "w") as f:
        f.attrs["n_spatial_dims"] = 2
    with pytest.raises(ValueError, match="not in The Well's layout"):
        WellHDF5(tmp_path / "bad.hdf5")
    _well_file(tmp_path / "ok.hdf5")
    with pytest.raises(ValueError, match="no field"):
        WellHDF5(tmp_path / "ok.hdf5", fields=["pressure"])
    with h5py.File(tmp_path / "ok.hdf5", "a") as f:
        f["t1_fields"].create_dataset("bad", data=np.zeros((2, 4, 8, 8, 3), np.float32))
        f["t1_fields"].attrs["field_names"] = ["grad_phi", "bad"]
    with pytest.raises(ValueError, match="field bad has shape"):
        WellHDF5(tmp_path / "ok.hdf5", fields=["bad"])
    _well_file(tmp_path / "ok.hdf5")
    with h5py.File(tmp_path / "ok.hdf5", "a") as f:
        f["t0_fields"]["phi"][1, 2, 0, 0] = np.nan
    ds = WellHDF5(tmp_path / "ok.hdf5")
    ds[0]  # finite pair
    with pytest.raises(ValueError, match="non-finite"):
        ds[3 + 1]  # trajectory 1, frames 1-2


def test_hub_unreachable_gives_the_offline_error(tmp_path, monkeypatch):
    import socket

    from revit_equivariant import real_data

    def refuse(*args, **kwargs):
        raise OSError("network unreachable")

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(socket, "create_connection", refuse)
    real_data.hub_reachable.cache_clear()  # the shared probe caches its answer per process
    assert not real_data.hub_reachable()
    with pytest.raises(ConnectionError, match="unreachable \\(offline\\)"):
        well_datamodule("MHD_64", "hf://datasets/polymathic-ai/")
    with pytest.raises(ConnectionError, match="unreachable \\(offline\\)"):
        real_data.WellHDF5("hf://datasets/polymathic-ai/MHD_64/data/train")
    monkeypatch.setattr(socket, "create_connection", lambda *a, **k: pytest.fail("probed"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    real_data.hub_reachable.cache_clear()
    assert not real_data.hub_reachable()  # offline mode never touches the network
