"""The plasticity section: warm-started agents against a fresh agent, verdicts, aggregate."""

import math

import numpy as np
from sigreg.warm_start_benchmark import (
    plasticity_aggregate_table,
    plasticity_study,
    plasticity_table,
    second_half_return,
)


def test_second_half_return():
    eps = [(100, 1.0), (250, 2.0), (300, 4.0)]
    assert second_half_return(eps, 300) == 3.0
    assert math.isnan(second_half_return(eps, 1000))


def test_study_on_cartpole_has_every_row_verdict_and_aggregate():
    """Tiny run (CartPole, so no MinAtar needed): structure of the tables and their verdicts;
    two worker processes give exactly the numbers of one."""
    pqn = {"num_envs": 2, "num_steps": 8, "hidden": 16}
    opts = {"adam": 1e-3}
    pre = {"observations": 64, "updates": 10, "batch_size": 32, "target_offset": 100.0}
    runs = plasticity_study(
        ["CartPole-v1"], opts, [0.0, 1.0], iterations=4, pretrain=pre, seeds=2, pqn=pqn
    )
    assert set(runs) == {("CartPole-v1", "adam", m) for m in ("none", "SIGReg l=1", "fresh init")}
    assert all(len(v) == 2 for v in runs.values())
    # every run has the same RL budget; only the warm-started ones were pre-trained
    assert {r["total_steps"] for rs in runs.values() for r in rs} == {4 * 2 * 8}
    assert runs[("CartPole-v1", "adam", "fresh init")][0]["pretrain"] is None
    assert runs[("CartPole-v1", "adam", "none")][0]["pretrain"]["first_loss"] > 0.1
    table = plasticity_table(runs, iterations=4, pretrain=pre, pqn=pqn, optimisers=opts)
    rows = {r["method"]: r for r in table.rows}
    verdicts = ("above", "below", "overlap (null)")
    assert rows["SIGReg l=1"]["SIGReg vs none (AUC)"] in verdicts
    assert rows["none"]["vs fresh init (AUC)"] in verdicts
    assert rows["fresh init"]["vs fresh init (AUC)"] == ""
    assert rows["fresh init"]["srank after pre-training"] is None
    assert rows["none"]["srank after pre-training"] > 0
    agg = plasticity_aggregate_table(runs)
    arow = {r["method"]: r for r in agg.rows}
    assert set(arow) == {"none", "SIGReg l=1", "fresh init"}
    assert arow["none"]["CI low"] <= arow["none"]["IQM"] <= arow["none"]["CI high"]
    assert np.isfinite(arow["SIGReg l=1"]["P(improvement over same optimiser, none)"])


def test_aggregate_normalises_each_optimiser_by_its_own_fresh_agent():
    """Planted AUCs: Adam's fresh agents score ~10, PSGD-Kron's ~1, each optimiser's
    warm-started baseline half of its fresh agent and SIGReg equal to it. Per-optimiser
    normalisation puts both baselines at ~0.5 (below their fresh agents at ~1) and both
    SIGReg rows at ~1 (above the baseline); normalising by Adam's fresh agent instead puts
    every PSGD-Kron row near 0.1 or below."""
    rng = np.random.default_rng(0)
    scale = {"adam": 10.0, "kron": 1.0}
    factor = {"none": 0.5, "SIGReg l=1": 1.0, "fresh init": 1.0}
    runs = {
        (g, o, m): [{"auc": scale[o] * factor[m] * (1 + 0.02 * rng.standard_normal())}
                    for _ in range(5)]
        for g in ("A", "B", "C") for o in scale for m in factor
    }  # fmt: skip
    rows = {(r["optimiser"], r["method"]): r for r in plasticity_aggregate_table(runs).rows}
    for o in ("Adam", "PSGD-Kron"):
        assert abs(rows[(o, "none")]["IQM"] - 0.5) < 0.03
        assert abs(rows[(o, "fresh init")]["IQM"] - 1.0) < 0.03
        assert rows[(o, "none")]["vs fresh init"] == "below"
        assert rows[(o, "SIGReg l=1")]["SIGReg vs none"] == "above"
        assert rows[(o, "SIGReg l=1")]["vs fresh init"] == "overlap (null)"
    by_adam = plasticity_aggregate_table(runs, reference="adam").rows
    assert max(r["IQM"] for r in by_adam if r["optimiser"] == "PSGD-Kron") < 0.15


def test_setting_refuses_bad_values_before_any_run():
    import pytest
    from sigreg.warm_start_benchmark import PlasticitySetting

    good = dict(games=["MinAtar/Breakout-v1"], optimisers={"adam": 1e-3}, lambdas=[0.0],
                iterations=2, pretrain={}, seeds=1, pqn={})  # fmt: skip
    PlasticitySetting(**good)
    for bad, match in [({"optimisers": {"sgdx": 1.0}}, "optimiser"), ({"lambdas": [-1.0]}, ">= 0"),
                       ({"seeds": 0}, "seeds"), ({"pretrain": {"optimizer": "x"}}, "optimizer")]:  # fmt: skip
        with pytest.raises(ValueError, match=match):
            PlasticitySetting(**{**good, **bad})
