"""The real-data path end to end: local Well / hub files -> PDEDataModule -> EmulatorModule.

Tiny files in The Well's HDF5 layout (``real_data.write_well_hdf5``) and the hub's ``.npy``
layout stand in for the real datasets (which need the network).
"""

import lightning.pytorch as pl
import numpy as np
import pytest
import torch
from revit_equivariant.cli import main
from revit_equivariant.group import equivariance_error
from revit_equivariant.lightning import EmulatorModule, PDEDataModule
from revit_equivariant.real_data import write_well_hdf5

SMALL = {"patch": 2, "window": 2, "embed_dim": 8, "heads": 2, "depths": (1, 1, 1)}


def _active_matter(root, n=16):
    rng = np.random.default_rng(0)
    for split in ("train", "valid", "test"):
        folder = root / "datasets" / "active_matter" / "data" / split
        folder.mkdir(parents=True)
        shape = (2, 3, n, n)
        write_well_hdf5(
            folder / "am.hdf5",
            {"concentration": rng.standard_normal(shape)},
            {"velocity": rng.standard_normal((*shape, 2))},
            {"D": rng.standard_normal((*shape, 2, 2)), "E": rng.standard_normal((*shape, 2, 2))},
        )
    return root


def _mhd(root, n=8):
    rng = np.random.default_rng(1)
    for split in ("train", "valid", "test"):
        folder = root / "MHD_64" / "data" / split
        folder.mkdir(parents=True)
        shape = (1, 3, n, n, n)
        write_well_hdf5(
            folder / "mhd.hdf5",
            {"density": rng.standard_normal(shape)},
            {
                "magnetic_field": rng.standard_normal((*shape, 3)),
                "velocity": rng.standard_normal((*shape, 3)),
            },
        )
    return root


def _trainer(tmp_path, **kw):
    return pl.Trainer(
        max_steps=2,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        default_root_dir=tmp_path,
        **kw,
    )


def test_well_2d_with_tensors_trains_and_rotated_test_equals_id(tmp_path):
    root = _active_matter(tmp_path / "well")
    module = EmulatorModule("revit", "active_matter", **SMALL)
    dm = PDEDataModule("active_matter", path=str(root), batch_size=2)
    trainer = _trainer(tmp_path)
    trainer.fit(module, datamodule=dm)
    assert trainer.callback_metrics["val_equiv_err"] < 1e-5
    x = next(iter(dm.train_dataloader()))["x"]
    assert x.shape == (2, 11, 16, 16)  # concentration, velocity (2), D (4), E (4)
    assert module(x).shape == x.shape  # every channel is predicted
    ids = trainer.test(module, datamodule=dm, verbose=False)[0]["test_mse"]
    rot = PDEDataModule("active_matter", path=str(root), batch_size=2, test_variant="rot90")
    rotated = trainer.test(module, datamodule=rot, verbose=False)[0]["test_mse"]
    assert rotated == pytest.approx(ids, rel=1e-5)  # exactly equivariant, tensors included


def test_well_3d_mhd_trains_revit3d_equivariant_over_o(tmp_path, capsys):
    root = _mhd(tmp_path / "well")
    module = EmulatorModule("revit", "MHD_64", **SMALL)
    trainer = _trainer(tmp_path)
    trainer.fit(module, datamodule=PDEDataModule("MHD_64", path=str(root), batch_size=1))
    assert module.equiv_group == "o"
    assert trainer.callback_metrics["val_equiv_err"] < 1e-5
    x = torch.randn(1, 7, 8, 8, 8)
    assert equivariance_error(module, x, module.ps.spec, "o", module.out_spec) < 1e-5
    with pytest.raises(ValueError, match="2D only"):
        EmulatorModule("unet", "MHD_64")
    ckpt = tmp_path / "mhd.ckpt"
    trainer.save_checkpoint(ckpt)
    assert main(["equivariance", f"--checkpoint={ckpt}", "--group=o", "--grid=8", "--batch=1"]) == 0
    out = capsys.readouterr().out
    assert "over O (24 elements)" in out and float(out.split(":")[-1]) < 1e-5
    assert main(["equivariance", f"--checkpoint={ckpt}", "--group=c4"]) == 2
    assert "use --group o" in capsys.readouterr().err


def test_hub_kf2d_trains(tmp_path):
    np.save(tmp_path / "train_V.npy", np.random.default_rng(0).standard_normal((2, 3, 2, 16, 16)))
    np.save(tmp_path / "test_V.npy", np.random.default_rng(1).standard_normal((1, 3, 2, 16, 16)))
    module = EmulatorModule("revit", "kf2d", **SMALL)
    trainer = _trainer(tmp_path)
    trainer.fit(module, datamodule=PDEDataModule("kf2d", path=str(tmp_path), batch_size=2))
    assert trainer.callback_metrics["val_equiv_err"] < 1e-5


def test_real_data_bad_input(tmp_path):
    with pytest.raises(ValueError, match="--data.path"):
        PDEDataModule("active_matter")
    with pytest.raises(ValueError, match="simulated"):
        PDEDataModule("kolmogorov", path=str(tmp_path))
    with pytest.raises(ValueError, match="rollout must be 1"):
        PDEDataModule("kf2d", path=str(tmp_path), rollout=2)
    with pytest.raises(ValueError, match="force45"):
        PDEDataModule("kf2d", path=str(tmp_path), test_variant="force45")
    with pytest.raises(FileNotFoundError, match="the-well-download"):
        PDEDataModule("shear_flow", path=str(tmp_path)).setup("fit")
    root = _active_matter(tmp_path / "am")
    # the active_matter files read as shear_flow: the layouts differ
    (root / "datasets" / "shear_flow").symlink_to(root / "datasets" / "active_matter")
    with pytest.raises(ValueError, match="layout of shear_flow"):
        PDEDataModule("shear_flow", path=str(root)).setup("fit")


def test_cli_fits_local_well_files_and_rejects_mismatches(tmp_path, capsys):
    root = _active_matter(tmp_path / "well")
    common = [
        "--data.problem=active_matter",
        f"--data.path={root}",
        "--data.batch_size=2",
        "--model.window=2",
        "--model.embed_dim=8",
        "--model.depths=[1, 1, 1]",
        "--trainer.max_steps=1",
        "--trainer.logger=false",
        "--trainer.enable_checkpointing=false",
        "--trainer.enable_progress_bar=false",
        f"--trainer.default_root_dir={tmp_path}",
    ]
    assert main(["fit", "--model.problem=active_matter", *common]) == 0
    capsys.readouterr()
    assert main(["fit", "--model.problem=kolmogorov", *common]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--model.problem active_matter" in err[0]
    assert main(["fit", "--data.problem=MHD_64", "--model.problem=MHD_64"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--data.path" in err[0]
