"""The reproduce experiment: presets, the drift section end to end, the lightly anchor."""

import pytest
from sigreg.reproduce import EXPERIMENT


def test_drift_section_matches_closed_form_and_ranks_isotropy_first(tmp_path):
    small = tmp_path / "small.yaml"
    small.write_text("sections:\n  drift: {steps: 600, chains: 48, random_spectra: 50}\n")
    report = EXPERIMENT.run(
        tmp_path / "out", preset="quick", overrides=[small], sections=["drift"], log=False
    )
    table = report.sections["drift"].tables[0]
    full = [r for r in table.rows if r["mode"] == "full"]
    assert [r["kappa"] for r in full] == [1, 10, 100]
    assert all(r["rel. err"] < 0.08 for r in full)  # 5 % with more chains: test_drifting_target
    assert full[0]["ratio vs isotropic"] == pytest.approx(1.0)
    assert full[1]["ratio vs isotropic"] < full[2]["ratio vs isotropic"]
    assert table.rows[-1]["ratio vs isotropic"] >= 1.0
    assert (tmp_path / "out" / "results.md").is_file()
    assert (tmp_path / "out" / "drift.png").is_file()


@pytest.mark.slow  # lightly is slow to import; test_sigreg_loss checks the agreement by default
def test_lightly_anchor_agrees():
    pytest.importorskip("lightly")
    from sigreg.anchors import lightly_agreement_table

    table = lightly_agreement_table(seed=0)
    assert all(r["abs diff"] < 1e-3 * max(1.0, r["lightly"]) for r in table.rows)


def test_quick_is_smaller_than_full_and_paper():
    q, f, p = (EXPERIMENT.validate(preset) for preset in ("quick", "full", "paper"))
    for a, b in ((q, f), (f, p)):
        assert a["digits"].phases <= b["digits"].phases
        assert a["digits"].seeds <= b["digits"].seeds
        assert a["control"].pqn_iterations <= b["control"].pqn_iterations
    assert q["control"].lambdas == [0.0, 0.2, 1.0]
