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


def test_fresh_init_run_starts_at_the_requested_phase_and_learns_it():
    """The fresh-init reference: a new network on phase 2's labels only, scored on them."""
    dm = DigitsShuffleDataModule(phases=3, epochs_per_phase=2, n_samples=64, start_phase=2)
    dm.setup("fit")
    assert dm.phase() == 2
    res = run_shuffled_labels(
        "none", phases=3, epochs_per_phase=6, hidden=64, depth=2, n_samples=128,
        batch_size=32, lr=1e-2, seed=0, start_phase=2,
    )  # fmt: skip
    assert [p["phase"] for p in res["phases"]] == [2]
    assert res["phases"][0]["accuracy"] > 0.3  # random labels of 128 images: memorisable
    with pytest.raises(ValueError, match="start_phase"):
        DigitsShuffleDataModule(phases=2, start_phase=2)


def test_diagnostics_are_read_at_the_classifier_input_for_every_sigreg_layer():
    """pre-ReLU and post-ReLU rows are diagnosed on the same layer: ReLU(last Linear)."""
    from sigreg.plasticity_metrics import isotropy_gap, srank

    x = torch.randn(200, 64, generator=torch.Generator().manual_seed(0))
    for layer in ("pre-relu", "post-relu"):
        torch.manual_seed(0)
        m = ShuffledLabelClassifier(64, 10, hidden=32, depth=2, method="sigreg", sigreg_layer=layer)
        out = m.diagnose(x)
        feats = torch.relu(m.trunk.net(x))  # the classifier's input in both placements
        assert out["isotropy_gap"] == pytest.approx(isotropy_gap(feats), rel=1e-5)
        assert out["srank"] == srank(feats)
    # the two placements have the same weights under the same seed: identical diagnostics
    torch.manual_seed(0)
    a = ShuffledLabelClassifier(64, 10, hidden=32, depth=2, sigreg_layer="pre-relu").diagnose(x)
    torch.manual_seed(0)
    b = ShuffledLabelClassifier(64, 10, hidden=32, depth=2, sigreg_layer="post-relu").diagnose(x)
    for key in ("dormant_tau0", "srank", "isotropy_gap", "sigreg_stat"):
        assert a[key] == pytest.approx(b[key], rel=1e-6), key


def test_table_has_a_fresh_init_row_and_a_verdict_against_it():
    from sigreg.shuffled_labels_benchmark import FRESH, shuffled_labels_table

    methods = [("none", "none", 0.0, "post-relu")]
    table, curves = shuffled_labels_table(
        [0, 1], phases=2, epochs_per_phase=2, n_samples=64, lejepa_slices=8, methods=methods
    )
    rows = {r["method"]: r for r in table.rows}
    assert set(rows) == {"none", FRESH}
    assert rows["none"]["vs fresh init (AUC)"] in ("above", "below", "overlap (null)")
    assert rows[FRESH]["acc phase 1"] is None
    assert rows["none"]["AUC CI low"] <= rows["none"]["AUC (mean acc phases 2..P)"]
    assert len(curves[FRESH]) == 2
