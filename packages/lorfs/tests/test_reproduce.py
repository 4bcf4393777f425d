"""reproduce: the loss-variance panel's closed form and MC theory; sections on tiny settings."""

import math

import pytest
from lorfs.benchmark import mc_variance
from lorfs.comparison import PINNBudget, headline_table, variance_table
from lorfs.reproduce import EXPERIMENT


def test_closed_form_of_the_product_field_and_mc_spread():
    v = mc_variance(10, samples=500, repeats=20, seed=0)
    assert v["exact"] == pytest.approx(1.125**10, rel=1e-12)
    # at moderate d the measured spread agrees with sqrt((kappa^d - 1) / N) within sampling error
    assert 0.5 < v["mc_rel_std"] / v["theory_rel_std"] < 2.0
    assert v["theory_rel_std"] == pytest.approx(math.sqrt((1.40123**10 - 1) / 500), rel=1e-3)


def test_variance_table_rows():
    table, rows = variance_table([2, 4], samples=2000, repeats=5, seed=0)
    assert [r["d"] for r in rows] == [2, 4]
    assert len(table.rows) == 2


def test_headline_table_lorfs_and_spectral_cells():
    rows = [{"problem": "convection", "params": {"beta": 30}, "baselines": ["spectral"]}]
    table, runs = headline_table(rows, PINNBudget(1, 0, 16), n_test=500)
    row = table.rows[0]
    assert float(row["LoRFS"].split()[0]) < 1e-4
    assert row["spectral"] and not row["PINN"]
    assert {r.method for r in runs} == {"LoRFS", "spectral"}


def test_presets_validate():
    for preset in ("quick", "full", "paper"):
        settings = EXPERIMENT.validate(preset)
        assert set(settings) == {"headline", "high_d", "loss_variance", "nonlinear"}


def test_sections_run_on_a_tiny_override(tmp_path):
    small = tmp_path / "small.yaml"
    small.write_text(
        "adam_steps: 2\nlbfgs_steps: 0\ncollocation: 32\nn_test: 200\n"
        "sections:\n"
        "  headline:\n"
        "    rows: [{problem: torus_poisson, params: {d: 3}, baselines: [PINN]}]\n"
        "  high_d: {d: [3], pinn_d: [3]}\n"
        "  loss_variance: {d: [2, 3], repeats: 3}\n"
        "  nonlinear:\n"
        "    n_test: 500\n"
        "    rows: [{problem: reaction, params: {rho: 2, modes_x: 16}, rank: 4, modes: [6, 16], slabs: 2}]\n"
    )
    report = EXPERIMENT.run(tmp_path / "out", preset="quick", overrides=[small], log=False)
    assert (tmp_path / "out" / "results.json").is_file()
    figures = {f for s in report.sections.values() for f in s.figures}
    assert figures == {"headline.png", "high_d.png", "loss_variance.png", "nonlinear.png"}
    cell = report.sections["headline"].tables[0].rows[0]["LoRFS"]
    assert float(cell.split()[0]) < 1e-8
    nonlinear = report.sections["nonlinear"].tables[0].rows[0]
    assert float(nonlinear["rel. L2 error"]) < 1e-2  # against the exact logistic solution


@pytest.mark.slow
def test_quick_reproduce_writes_report(tmp_path):
    from icml26_shared.paper import discover_papers
    from icml26_shared.reproduce import run_reproduce

    report = run_reproduce(discover_papers()["lorfs"], tmp_path, preset="quick", log=False)
    assert (tmp_path / "results.json").is_file()
    rows = report.sections["headline"].tables[0].rows
    conv = next(r for r in rows if r["problem"].startswith("convection(beta=30"))
    assert float(conv["LoRFS"].split()[0]) <= 1e-4
