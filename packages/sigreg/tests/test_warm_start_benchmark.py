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
