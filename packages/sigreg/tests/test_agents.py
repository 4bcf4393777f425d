"""PQN / PPO: returns in closed form, the shared contract, and learning CartPole."""

import numpy as np
import pytest
import torch
from icml26_shared.contract import check_contract
from sigreg.lightning import PPOModule, PQNModule, RolloutDataModule
from sigreg.ppo_agent import gae
from sigreg.pqn_agent import q_lambda_returns
from sigreg.rl_benchmark import bootstrap_ci, iqm, return_auc, run_agent


def test_q_lambda_one_is_discounted_monte_carlo_return_and_dones_cut():
    r = torch.tensor([[1.0], [2.0], [3.0]])
    d = torch.zeros(3, 1)
    v = torch.tensor([[10.0], [20.0], [5.0]])
    g = 0.5
    out = q_lambda_returns(r, d, v, g, 1.0).flatten()
    assert out.tolist() == pytest.approx(
        [1 + g * 2 + g**2 * 3 + g**3 * 5, 2 + g * 3 + g**2 * 5, 3 + g * 5]
    )
    d[1] = 1.0  # episode ends after step 1
    out = q_lambda_returns(r, d, v, g, 0.65).flatten()
    assert float(out[1]) == 2.0
    assert float(out[0]) == pytest.approx(1 + g * (0.65 * 2 + 0.35 * 10))


def test_gae_lambda_one_is_monte_carlo_advantage():
    r = torch.tensor([[1.0], [1.0]])
    v = torch.tensor([[0.5], [0.2]])
    nv = torch.tensor([[0.2], [3.0]])
    d = torch.zeros(2, 1)
    adv, ret = gae(r, v, d, nv, 0.9, 1.0)
    assert float(ret[0]) == pytest.approx(1 + 0.9 * 1 + 0.81 * 3.0)
    assert float(adv[1]) == pytest.approx(1 + 0.9 * 3.0 - 0.2)


def _obs_forward(model, batch):
    out = model(torch.linspace(-1, 1, 12).reshape(3, 4))
    return out


@pytest.mark.parametrize("cls", [PQNModule, PPOModule])
def test_shared_contract(tmp_path, cls):
    check_contract(
        lambda: cls(num_envs=2, num_steps=8, hidden=16, sigreg_lambda=1.0),
        lambda: RolloutDataModule(2),
        tmp_path,
        forward_fn=_obs_forward,
    )


def test_pqn_learns_cartpole_smoke():
    res = run_agent(
        "pqn", iterations=40, seed=0, lr=1e-3, num_envs=8, num_steps=32, sigreg_lambda=1.0
    )
    assert res["total_steps"] == 40 * 8 * 32
    assert res["final"] > 40  # a random policy averages ~22
    assert res["reg_s"] > 0 and 0 <= res["diagnostics"]["dormant_tau0"] <= 1


def test_ppo_learns_cartpole_smoke():
    res = run_agent("ppo", iterations=20, seed=0, lr=2.5e-3, num_envs=4, num_steps=128)
    assert res["final"] > 40
    d = res["diagnostics"]
    assert 0 <= d["dormant_tau0"] <= 1 and 1 <= d["srank"] <= 64


def test_rl_bad_input():
    with pytest.raises(ValueError, match="discrete action space"):
        PQNModule(env_id="Pendulum-v1", num_envs=1)
    with pytest.raises(ValueError, match="discrete action space"):
        PPOModule(env_id="MountainCarContinuous-v0", num_envs=1)
    with pytest.raises(ValueError, match="unknown environment id"):
        PQNModule(env_id="NoSuch-v0")
    with pytest.raises(ValueError, match="sigreg_lambda"):
        PQNModule(sigreg_lambda=-1.0, num_envs=1)
    with pytest.raises(ValueError, match="agent"):
        run_agent("dqn", iterations=1)
    with pytest.raises(ValueError, match="iterations"):
        RolloutDataModule(0)


def test_auc_and_interval_helpers():
    eps = [(10, 10.0), (20, 30.0)]
    assert return_auc(eps, 20, bins=2) == pytest.approx(20.0)
    assert iqm([1, 2, 3, 4, 5, 6, 7, 8]) == pytest.approx(4.5)
    lo, hi = bootstrap_ci(np.arange(20.0))
    assert lo < iqm(np.arange(20.0)) < hi


def test_aggregate_iqm_and_probability_of_improvement_on_a_tiny_score_matrix(monkeypatch):
    import sys

    from sigreg.rl_benchmark import aggregate_interval, probability_of_improvement

    monkeypatch.setitem(sys.modules, "rliable", None)  # the numpy fallback
    a = np.array([[1.0, 1.2], [0.8, 1.1], [1.3, 0.9], [1.0, 1.0]])  # (runs, tasks)
    b = a + 0.5
    est = aggregate_interval({"a": a, "b": b}, reps=200)
    for key, m in (("a", a), ("b", b)):
        point, lo, hi, how = est[key]
        assert how == "bootstrap"
        assert point == pytest.approx(iqm(m.ravel()))
        assert lo <= point <= hi
    assert est["b"][0] == pytest.approx(est["a"][0] + 0.5)
    assert probability_of_improvement(b, a) > 0.9 > 0.1 > probability_of_improvement(a, b)
    with pytest.raises(ValueError, match="runs, tasks"):
        aggregate_interval({"a": np.ones(3)})


@pytest.mark.slow  # importing rliable alone costs seconds of CPU; the numpy path is tested above
def test_rliable_agrees_with_the_numpy_definitions():
    pytest.importorskip("rliable")
    from rliable import metrics as rlm
    from sigreg.rl_benchmark import (
        aggregate_interval,
        interval_estimate,
        probability_of_improvement,
    )

    x = np.array([[3.0, 1.0], [5.0, 2.0], [4.0, 7.0], [1.0, 1.0], [9.0, 0.0]])
    y = np.array([[2.0, 1.0], [6.0, 3.0], [1.0, 2.0], [0.0, 1.0], [3.0, 5.0]])
    assert rlm.aggregate_iqm(x) == pytest.approx(iqm(x.ravel()))
    assert rlm.probability_of_improvement(x, y) == pytest.approx(probability_of_improvement(x, y))
    point, lo, hi, how = interval_estimate(x[:, 0])
    assert how == "rliable" and lo <= point <= hi
    point, lo, hi, how = aggregate_interval({"x": x}, reps=100)["x"]  # stratified bootstrap
    assert how == "rliable" and point == pytest.approx(iqm(x.ravel())) and lo <= point <= hi
