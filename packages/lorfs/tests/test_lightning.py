"""Lightning: the shared contract (fast_dev_run + checkpoint round trip) for LoRFS and the PINN."""

import lightning.pytorch as pl
import pytest
import torch
from icml26_shared.contract import check_contract
from lorfs.lightning import LoRFSModule, PINNModule, ProblemDataModule, load_solver_checkpoint


def _data(problem="torus_poisson", params=None):
    return ProblemDataModule(problem, params or {"d": 3}, n_collocation=32, n_test=64)


@pytest.mark.parametrize("solver", ["als", "adam_lbfgs"])
def test_lorfs_module_contract(tmp_path, solver):
    check_contract(
        lambda: LoRFSModule("torus_poisson", {"d": 3}, solver=solver, adam_steps=1),
        _data,
        tmp_path,
    )


@pytest.mark.parametrize("arch", ["mlp", "fourier", "separable"])
def test_pinn_module_contract(tmp_path, arch):
    check_contract(
        lambda: PINNModule("convection", {"beta": 30}, arch=arch, width=8, depth=2, adam_steps=1),
        lambda: _data("convection", {"beta": 30}),
        tmp_path,
    )


def _trainer(tmp_path, epochs):
    return pl.Trainer(
        accelerator="cpu",
        max_epochs=epochs,
        logger=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        default_root_dir=tmp_path,
        enable_checkpointing=False,
    )


def test_lorfs_module_solves_convection_and_round_trips(tmp_path):
    model = LoRFSModule("convection", {"beta": 30}, solver="als")
    trainer = _trainer(tmp_path, 1)
    trainer.fit(model, datamodule=ProblemDataModule("convection", {"beta": 30}, 8, 2000))
    [metrics] = trainer.test(
        model, datamodule=ProblemDataModule("convection", {"beta": 30}, 8, 2000), verbose=False
    )
    assert metrics["test_rel_l2"] < 1e-4
    ckpt = tmp_path / "m.ckpt"
    trainer.save_checkpoint(ckpt)
    loaded = load_solver_checkpoint(ckpt)
    pts = torch.rand(10, 2, dtype=torch.float64)
    assert torch.equal(loaded(pts), model(pts))


def test_adam_lbfgs_lowers_the_closed_form_loss(tmp_path):
    model = LoRFSModule(
        "torus_poisson", {"d": 2}, rank=2, solver="adam_lbfgs", adam_steps=5, lbfgs_iter=30
    )
    before = float(model.physics_loss().detach())
    _trainer(tmp_path, 8).fit(model, datamodule=_data("torus_poisson", {"d": 2}))
    assert float(model.physics_loss().detach()) < 0.1 * before


def test_model_and_data_for_different_problems_are_rejected(tmp_path):
    model = LoRFSModule("torus_poisson", {"d": 3})
    with pytest.raises(ValueError, match="but the data is for"):
        _trainer(tmp_path, 1).fit(model, datamodule=_data("torus_poisson", {"d": 4}))


def test_bad_module_arguments():
    with pytest.raises(ValueError, match="nonlinear"):
        LoRFSModule("reaction", solver="als")
    with pytest.raises(ValueError, match="rank must be a positive integer"):
        LoRFSModule("convection", rank=0)
    with pytest.raises(ValueError, match="dimension mismatch"):
        LoRFSModule("torus_poisson", {"d": 3}, modes=[2, 2])
    with pytest.raises(ValueError, match="dimension mismatch"):
        LoRFSModule("torus_poisson", {"d": 3})(torch.zeros(2, 4, dtype=torch.float64))
    with pytest.raises(ValueError, match="arch must be"):
        PINNModule("convection", arch="kan")
    with pytest.raises(ValueError, match="n_collocation and n_test must be >= 1"):
        ProblemDataModule("convection", n_collocation=0)
