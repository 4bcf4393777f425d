"""reproduce end to end on a tiny setting: tables, figure, no stub."""

import json

import pytest
import wsnets.reproduce as rep
from icml26_shared.results import Report

TINY = rep.Setting(
    n_images=24,
    fit_steps=2,
    n_edit=20,
    n_sine=24,
    n_zoo=24,
    epochs=1,
    edit_epochs=1,
    F_values=(1, 2),
    widths={
        "dws": 2,
        "np_pe": 2,
        "nft": 2,
        "gmn": 3,
        "mlp": 8,
        "mlp_aug": 8,
        "canon": 8,
        "statnn": 8,
    },
    seeds=(0, 1),
    batch_size=8,
)


@pytest.mark.slow
def test_reproduce_tiny(tmp_path, monkeypatch):
    monkeypatch.setattr(rep, "QUICK", TINY)
    report = rep.reproduce(tmp_path, quick=True)
    assert isinstance(report, Report)
    report.write()
    data = json.loads((tmp_path / "results.json").read_text())
    main, learn, checks, comm = data["tables"]
    models = [r["model"] for r in main["rows"]]
    assert "DWS (= HNP-NFN)" in models and "no edit (anchor)" in models
    assert "NF-Transformer" in models and any("StatNN" in m for m in models)
    # every family with an equivariant head is swept over F; two seeds give mean ± std cells
    for label in ("flat MLP", "canonicalise + MLP", "NP-NFN+PE", "NF-Transformer"):
        assert {r["F"] for r in main["rows"] if r["model"] == label} == {1, 2}, label
    assert "±" in str(main["rows"][0]["digit-INR acc"])
    assert {r["zoo initialisation"] for r in learn["rows"]} == {"independent", "shared"}
    for row in checks["rows"]:
        if "flat" not in row["model"]:
            assert row["invariant head rel. error"] < 1e-4, row
            if "StatNN" not in row["model"]:
                assert row["equivariant head rel. error"] < 1e-4, row
    for row in comm["rows"]:
        assert row["layer linear params"] == row["commutant dim"]
    assert (tmp_path / "edit_mse_vs_F.png").is_file()


def test_reproduce_wiring_lrs_epochs_and_matched_budgets(tmp_path, monkeypatch):
    """Without training (``fit_and_test`` stubbed): every run gets its setting's learning rate
    and epochs, the F sweep covers every family with an equivariant head, and every F > 1
    editor in the table has at most the F = 1 editor's parameters (matched budgets)."""
    from wsnets.tasks import INREditor

    calls = []

    def fake_fit_and_test(module, datamodule, epochs):
        calls.append((type(module).__name__, module.hparams.lr, epochs))
        return {"test/acc": 0.5, "test/loss": 0.01, "test/psnr": 20.0, "test/r2": 0.1,
                "test/kendall": 0.2, "s_per_epoch": 0.0, "best_epoch": 0}  # fmt: skip

    tiny = rep.Setting(**{**TINY.__dict__, "seeds": (0,), "lr": 7e-3, "edit_lr": 2e-3,
                          "epochs": 3, "edit_epochs": 4, "F_values": (1, 2, 8)})  # fmt: skip
    monkeypatch.setattr(rep, "QUICK", tiny)
    monkeypatch.setattr(rep, "fit_and_test", fake_fit_and_test)
    monkeypatch.setattr(rep, "PARTIAL_EVERY", 10**6)
    monkeypatch.setattr(rep, "commutant_dim", lambda *a: 0)  # SVDs: tested in test_commutant
    monkeypatch.setattr(rep, "invariant_dim", lambda *a: 0)
    report = rep.reproduce(tmp_path, quick=True)
    edit_calls = [c for c in calls if c[0] == INREditor.__name__]
    assert len(edit_calls) == len(rep.EDIT_MODELS) * 3
    assert {(lr, ep) for _, lr, ep in edit_calls} == {(2e-3, 4)}
    assert {(lr, ep) for n, lr, ep in calls if n != INREditor.__name__} == {(7e-3, 3)}
    rows = report.tables[0].rows
    for label in (rep.LABELS[m] for m in rep.EDIT_MODELS):
        by_F = {r["F"]: r["params (edit)"] for r in rows if r["model"] == label}
        assert set(by_F) == {1, 2, 8}, label
        assert all(by_F[F] <= by_F[1] for F in (2, 8)), (label, by_F)
