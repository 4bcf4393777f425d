"""The Lightning refinement: contract, exactness at the truth, NLL, checkpoints."""

import lightning.pytorch as pl
import numpy as np
import torch
from icml26_shared.contract import check_contract
from ou_ident.interventions import environment_specs
from ou_ident.lightning import MomentDataModule, SteadyStateOU, SyntheticOUDataModule, moment_batch
from ou_ident.synthetic import make_problem


def _forward(model, batch):
    out = model(batch)
    return [out["mean_residual"], out["cov_residual"]]


def test_contract(tmp_path):
    prob = make_problem(4, seed=0)

    def model_fn():
        return SteadyStateOU(prob.mask.tolist(), environment_specs(prob.environments), lr=1e-3)

    def data_fn():
        dm = MomentDataModule(steps_per_epoch=2)
        dm.set_moments(prob.moments(n=500, seed=0), prob.mask, prob.params.A)
        return dm

    check_contract(model_fn, data_fn, tmp_path, forward_fn=_forward)


def test_loss_and_residuals_vanish_at_truth():
    prob = make_problem(5, seed=1)
    model = SteadyStateOU(prob.mask.tolist(), environment_specs(prob.environments))
    model.initialize_from(prob.params, prob.environments)
    batch = moment_batch(prob.moments())
    assert model.moment_loss(batch).item() < 1e-20
    np.testing.assert_allclose(model.params.A, prob.params.A, atol=1e-12)
    # the NLL of population moments is minimal at the truth: gradient zero
    model.zero_grad()
    model.gaussian_nll(batch).backward()
    grads = torch.cat([p.grad.reshape(-1) for p in model.parameters()])
    assert grads.abs().max().item() < 1e-8


def test_joint_initialisation_and_fit_improve_nll(tmp_path):
    dm = SyntheticOUDataModule(p=5, n=5000, seed=2, steps_per_epoch=30)
    model = SteadyStateOU(nll_weight=1.0, lr=2e-3)
    trainer = pl.Trainer(
        max_epochs=2,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        default_root_dir=tmp_path,
        accelerator="cpu",
    )
    trainer.fit(model, datamodule=dm)
    assert bool(model.initialized)
    batch = moment_batch(dm.environment_moments())
    from ou_ident.joint import fit_joint

    fresh = SteadyStateOU(*dm.structure())
    fit = fit_joint(dm.environment_moments(), dm.mask)
    fresh.initialize_from(fit.params, strengths=fit.strengths)
    with torch.no_grad():
        assert model.gaussian_nll(batch) <= fresh.gaussian_nll(batch) + 1e-9
    ckpt = tmp_path / "m.ckpt"
    trainer.save_checkpoint(ckpt)
    loaded = SteadyStateOU.load_from_checkpoint(ckpt, weights_only=False)
    np.testing.assert_allclose(loaded.params.A, model.params.A)
