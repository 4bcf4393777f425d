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
