"""Lightning modules: shared contract, MLE recovers planted parameters, metrics in test_step."""

import numpy as np
import pytest
import torch
from icml26_shared.contract import check_contract
from icml26_shared.trainer import quiet_trainer
from noisy_compress.lightning import (
    ConvolvedMLEModule,
    NoisySampleDataModule,
    SklearnNoisyDataModule,
    TournamentModule,
)
from noisy_compress.metrics import tv_distance


def _trainer(tmp_path, **kw):
    return quiet_trainer(default_root_dir=tmp_path, **kw)


def test_contract_convolved_mle(tmp_path):
    check_contract(
        lambda: ConvolvedMLEModule("uniform", k=2, noise_scale=0.1),
        lambda: NoisySampleDataModule("uniform-mixture", n=300, n_val=20, n_test=20),
        tmp_path,
    )


def test_contract_tournament(tmp_path):
    check_contract(
        lambda: TournamentModule("uniform", noise_scale=0.1, max_candidates=40, search_rounds=3),
        lambda: NoisySampleDataModule("uniform", n=300, n_val=20, n_test=20),
        tmp_path,
        backward=False,
    )


@pytest.mark.parametrize("noise", ["gaussian", "laplace"])
def test_mle_recovers_gaussian(noise):
    rng = np.random.default_rng(0)
    z = rng.normal(0, 0.5, 6000) if noise == "gaussian" else rng.laplace(0, 0.5, 6000)
    y = (rng.normal(1.0, 0.8, 6000) + z)[:, None]
    m = ConvolvedMLEModule("gaussian", noise=noise, noise_scale=0.5, lr=0.05).fit_full_batch(y, 300)
    assert float(m.loc[0].detach()) == pytest.approx(1.0, abs=0.06)
    assert float(torch.exp(m.log_scale[0].detach())) == pytest.approx(0.8, abs=0.06)


def test_tournament_module_test_step_reports_tv(tmp_path):
    dm = NoisySampleDataModule("uniform", noise_scale=0.1, n=2000, n_test=500)
    m = TournamentModule("uniform", noise_scale=0.1, max_candidates=80, search_rounds=8)
    tr = _trainer(tmp_path, max_epochs=1)
    tr.fit(m, dm)
    out = tr.test(m, dm, verbose=False)[0]
    assert out["test_tv"] == pytest.approx(tv_distance(dm.truth, m.winner), abs=2e-3)
    assert out["test_tv"] < 0.08


def test_sklearn_datamodule_and_bad_input():
    dm = SklearnNoisyDataModule("digits", pca_dim=2, noise_scale=0.2)
    assert dm.y_train.shape[1] == 2 and dm.clean_test.shape[1] == 2
    with pytest.raises(ValueError, match="pca_dim"):
        SklearnNoisyDataModule("wine", pca_dim=3)
    with pytest.raises(ValueError, match="unknown dataset"):
        SklearnNoisyDataModule("iris")
    with pytest.raises(ValueError, match="noise"):
        NoisySampleDataModule("uniform", noise_scale=-1.0)
    with pytest.raises(ValueError, match="k must be"):
        ConvolvedMLEModule("gaussian", k=0)
