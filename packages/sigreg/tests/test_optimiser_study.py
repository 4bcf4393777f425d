"""The optimiser x SIGReg study: optimisers by name, the fresh-init reference, the verdicts."""

import math

import numpy as np
import pytest
import torch
from sigreg.lightning import PQNModule, make_optimizer
from sigreg.optimiser_study import (
    interval_verdict,
    last_phase_return,
    optimiser_aggregate_table,
    optimiser_study,
    optimiser_table,
)


@pytest.mark.parametrize("name, lr", [("adam", 0.05), ("radam", 0.005), ("kron", 0.05)])
def test_every_optimiser_minimises_an_ill_conditioned_quadratic(name, lr):
    """Curvatures 200 and 2: each optimiser brings the loss down by > 20x in 500 steps
    (RAdam's first steps are un-rectified SGD with momentum, hence its smaller lr)."""
    if name == "kron":
        pytest.importorskip("kron_torch")
    w = torch.nn.Parameter(torch.tensor([1.0, 1.0]))
    scale = torch.tensor([100.0, 1.0])
    opt = make_optimizer(name, [w], lr)
    start = float((scale * w**2).sum())
    with torch._dynamo.config.patch(disable=True):
        for _ in range(500):
            opt.zero_grad()
            loss = (scale * w**2).sum()
            loss.backward()
            opt.step()
    assert float((scale * w**2).sum().detach()) < 0.05 * start


def test_unknown_optimiser_is_refused():
    with pytest.raises(ValueError, match="unknown optimizer"):
        make_optimizer("lbfgs", [torch.nn.Parameter(torch.zeros(1))], 1e-3)
    with pytest.raises(ValueError, match="unknown optimizer"):
        PQNModule(num_envs=1, num_steps=2, hidden=4, optimizer="lbfgs")


def test_last_phase_return_and_verdicts():
    eps = [(100, 1.0), (250, 2.0), (300, 4.0)]
    assert last_phase_return(eps, 300, 100) == 3.0
    assert math.isnan(last_phase_return(eps, 1000, 100))
    assert interval_verdict(0.5, 0.6, 0.1, 0.4) == "above"
    assert interval_verdict(0.0, 0.09, 0.1, 0.4) == "below"
    assert interval_verdict(0.4, 0.6, 0.1, 0.4) == "overlap (null)"  # touching is not separated


def test_study_on_cartpole_has_every_row_verdict_and_aggregate():
    """Tiny run (CartPole, so no MinAtar needed): structure of the tables and their verdicts."""
    pqn = {"num_envs": 2, "num_steps": 8, "hidden": 16}
    opts = {"adam": 1e-3}
    runs = optimiser_study(
        ["CartPole-v1"], opts, [0.0, 1.0], iterations=4, phase_iterations=2, seeds=2, pqn=pqn
    )
    assert set(runs) == {("CartPole-v1", "adam", m) for m in ("none", "SIGReg l=1", "fresh init")}
    assert all(len(v) == 2 for v in runs.values())
    assert runs[("CartPole-v1", "adam", "fresh init")][0]["total_steps"] == 2 * 2 * 8
    assert runs[("CartPole-v1", "adam", "none")][0]["total_steps"] == 4 * 2 * 8
    table = optimiser_table(runs, iterations=4, phase_iterations=2, pqn=pqn, optimisers=opts)
    rows = {r["method"]: r for r in table.rows}
    verdicts = ("above", "below", "overlap (null)")
    assert rows["SIGReg l=1"]["SIGReg vs none (AUC)"] in verdicts
    assert rows["none"]["vs fresh init (last phase)"] in verdicts
    assert rows["fresh init"]["vs fresh init (last phase)"] == ""
    agg = optimiser_aggregate_table(runs)
    arow = {r["method"]: r for r in agg.rows}
    assert set(arow) == {"none", "SIGReg l=1"}
    assert arow["none"]["CI low"] <= arow["none"]["IQM"] <= arow["none"]["CI high"]
    assert np.isfinite(arow["SIGReg l=1"]["P(improvement over same optimiser, none)"])
