"""Lightning parts: the shared contract, fast-dev-run, checkpoint round trip, metrics."""

import pytest
import torch
from icml26_shared.contract import check_contract
from revit_equivariant.group import equivariance_error
from revit_equivariant.lightning import EmulatorModule, PDEDataModule
from revit_equivariant.metrics import VRMSE
from revit_equivariant.pde_data import PairDataset, problem_spec

SMALL = {"window": 2, "embed_dim": 8, "heads": 2, "depths": (1, 1, 1), "width": 4, "modes": 4}


def _data(**kw):
    return PDEDataModule(
        "kolmogorov", n_train=2, n_val=1, n_test=1, n_frames=3, grid=16, batch_size=2, **kw
    )


def _forward(model, batch):
    return model(batch["x"])


@pytest.mark.parametrize("backbone", ["revit", "swin", "unet", "fno-own"])
def test_shared_contract(tmp_path, backbone):
    result = check_contract(
        lambda: EmulatorModule(backbone, **SMALL), _data, tmp_path, forward_fn=_forward
    )
    assert result.output.shape == (2, 2, 16, 16)


def test_trained_revit_checkpoint_stays_equivariant(tmp_path):
    import lightning.pytorch as pl

    module = EmulatorModule("revit", **SMALL)
    trainer = pl.Trainer(
        max_steps=3,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        default_root_dir=tmp_path,
    )
    trainer.fit(module, datamodule=_data(rollout=2))
    path = tmp_path / "m.ckpt"
    trainer.save_checkpoint(path)
    loaded = EmulatorModule.load_from_checkpoint(path, weights_only=False).eval()
    x = torch.randn(2, 4, 16, 16)
    assert torch.equal(loaded(x), module.eval()(x))
    assert equivariance_error(loaded, x, loaded.ps.spec, "c4", loaded.out_spec) < 1e-5
    assert trainer.callback_metrics["val_equiv_err"] < 1e-5


def test_augmented_pairs_are_rotated_consistently():
    traj = torch.randn(1, 3, 4, 8, 8)
    ps = problem_spec("kolmogorov")
    plain = PairDataset(traj, ps)[0]
    aug = PairDataset(traj, ps, augment=True, seed=1)
    from revit_equivariant.group import rotate

    for _ in range(4):
        item = aug[0]
        ks = [
            k for k in range(4) if torch.equal(rotate(plain["x"][None], ps.spec, k)[0], item["x"])
        ]
        assert len(ks) == 1
        assert torch.equal(rotate(plain["y"], problem_spec("decaying").spec, ks[0]), item["y"])


def test_vrmse_of_persistence_is_positive_and_scale_free():
    t = torch.randn(3, 2, 8, 8)
    p = t + 0.1 * torch.randn(3, 2, 8, 8)
    a, b = VRMSE(), VRMSE()
    a.update(p, t)
    b.update(10 * p, 10 * t)
    assert 0 < float(a.compute()) < 0.2
    assert torch.allclose(a.compute(), b.compute())


def test_bad_backbone_and_problem():
    with pytest.raises(ValueError, match="backbone"):
        EmulatorModule("vit")
    with pytest.raises(ValueError, match="problem"):
        EmulatorModule("revit", "mhd")
