"""reproduce: the loss-variance panel's closed form and MC theory; the quick run end to end (slow)."""

import math

import pytest
from lorfs.benchmark import mc_variance
from lorfs.reproduce import Budget, budget, variance_panel


def test_closed_form_of_the_product_field_and_mc_spread():
    v = mc_variance(10, samples=500, repeats=20, seed=0)
    assert v["exact"] == pytest.approx(1.125**10, rel=1e-12)
    # at moderate d the measured spread agrees with sqrt((kappa^d - 1) / N) within sampling error
    assert 0.5 < v["mc_rel_std"] / v["theory_rel_std"] < 2.0
    assert v["theory_rel_std"] == pytest.approx(math.sqrt((1.40123**10 - 1) / 500), rel=1e-3)


def test_variance_panel_rows():
    b = budget(quick=True)
    small = Budget(b.adam, b.lbfgs, b.collocation, b.n_test, [], [], [], [2, 4], 5)
    table, rows = variance_panel(small, seed=0)
    assert [r["d"] for r in rows] == [2, 4]
    assert len(table.rows) == 2


@pytest.mark.slow
def test_quick_reproduce_writes_report(tmp_path):
    from icml26_shared.paper import discover_papers
    from icml26_shared.reproduce import run_reproduce

    report = run_reproduce(discover_papers()["lorfs"], tmp_path, quick=True)
    assert (tmp_path / "results.json").is_file()
    assert {p.name for p in report.figures} == {"headline.png", "high_d.png", "loss_variance.png"}
    rows = report.tables[0].rows
    conv = next(r for r in rows if r["problem"].startswith("convection(beta=30"))
    assert float(conv["LoRFS"].split()[0]) <= 1e-4
