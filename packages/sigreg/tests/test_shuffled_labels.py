"""Shuffled-label digits: data schedule, baselines in the harness, the shared contract."""

import pytest
import torch
from icml26_shared.contract import check_contract
from sigreg.lightning import DigitsShuffleDataModule, ShuffledLabelClassifier
from sigreg.shuffled_labels import phase_labels
from sigreg.shuffled_labels_benchmark import run_shuffled_labels


def test_phase_labels_are_permutations_of_the_true_labels():
    y = torch.arange(30) % 10
    lab = phase_labels(y, 4, seed=1)
    assert torch.equal(lab[0], y)
    for p in range(1, 4):
        assert torch.equal(torch.sort(lab[p]).values, torch.sort(y).values)
        assert not torch.equal(lab[p], y)
    with pytest.raises(ValueError, match="phases"):
        phase_labels(y, 0)


@pytest.mark.parametrize("method", ["sigreg", "sigreg-lejepa", "l2-init"])
def test_shared_contract(tmp_path, method):
    check_contract(
        lambda: ShuffledLabelClassifier(
            hidden=16, depth=2, method=method, sigreg_slices=8 if "lejepa" in method else None
        ),
        lambda: DigitsShuffleDataModule(phases=2, epochs_per_phase=1, batch_size=32, n_samples=64),
        tmp_path,
    )


@pytest.mark.parametrize("method", ["none", "redo", "shrink-perturb", "layernorm", "sigreg"])
def test_every_method_runs_through_phases(method):
    res = run_shuffled_labels(
        method,
        phases=2,
        epochs_per_phase=4,
        hidden=32,
        depth=2,
        n_samples=128,
        batch_size=32,
        lr=1e-2,
        seed=0,
    )
    assert [p["phase"] for p in res["phases"]] == [0, 1]
    assert res["phases"][0]["accuracy"] > 0.3  # true labels are learnable
    assert all(0 <= p["dormant_tau0"] <= 1 for p in res["phases"])


def test_sigreg_shapes_the_trunk_towards_isotropic_gaussian():
    a = run_shuffled_labels(
        "none", phases=1, epochs_per_phase=8, hidden=32, depth=2, n_samples=256, seed=0
    )
    b = run_shuffled_labels(
        "sigreg",
        phases=1,
        epochs_per_phase=8,
        hidden=32,
        depth=2,
        n_samples=256,
        seed=0,
        sigreg_layer="pre-relu",
    )
    assert b["phases"][0]["sigreg_stat"] < a["phases"][0]["sigreg_stat"]


def test_bad_settings():
    with pytest.raises(ValueError, match="unknown method"):
        ShuffledLabelClassifier(method="magic")
    with pytest.raises(ValueError, match="sigreg_lambda"):
        ShuffledLabelClassifier(method="sigreg", sigreg_lambda=-1)
    with pytest.raises(ValueError, match=">= 1"):
        DigitsShuffleDataModule(phases=0)
