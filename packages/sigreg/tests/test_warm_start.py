"""Random-target pre-training (the games study's warm start): it fits, it carries SIGReg,
and it is what run_agent warm-starts from."""

import pytest
import torch
from sigreg.lightning import PQNModule
from sigreg.rl_benchmark import run_agent
from sigreg.sigreg_loss import SIGReg
from sigreg.warm_start import pretrain_on_random_targets, random_policy_observations


def _agent(lam=0.0, seed=0):
    torch.manual_seed(seed)
    return PQNModule(num_envs=2, num_steps=4, hidden=32, lr=1e-2, sigreg_lambda=lam, seed=seed,
                     optimizer="adam")  # fmt: skip


def test_random_policy_observations_are_seeded_game_states():
    a = random_policy_observations("CartPole-v1", 50, seed=3)
    b = random_policy_observations("CartPole-v1", 50, seed=3)
    assert a.shape == (50, 4) and torch.equal(a, b)
    assert a.std(0).min() > 0  # the random policy moves the cart: not one repeated state


def test_pretraining_fits_a_constant_offset():
    """Planted target: scale 0, offset 5 -> every Q-value must move to 5; the loss (in units
    of the targets' second moment, 25) falls from about 0.5 to well below 1 % of that; the
    head is kept (reset_head=False) to read the fitted values."""
    agent = _agent()
    out = pretrain_on_random_targets(
        agent,
        observations=128,
        updates=400,
        batch_size=64,
        target_scale=0.0,
        target_offset=5.0,
        reset_head=False,
    )
    assert out["first_loss"] == pytest.approx(0.5, rel=0.2)
    assert out["last_loss"] < 0.01 * out["first_loss"]
    q = agent.q(random_policy_observations("CartPole-v1", 64, seed=99))
    assert torch.allclose(q, torch.full_like(q, 5.0), atol=0.5)


def test_pretraining_loss_carries_sigreg():
    """Zero targets: the regression term alone leaves the trunk's features unconstrained;
    with lambda = 5 the pre-training also lowers their SIGReg statistic."""
    obs = random_policy_observations("CartPole-v1", 512, seed=7)
    stat = SIGReg(num_slices=64, seed=0)

    def after(lam):
        agent = _agent(lam, seed=1)
        pretrain_on_random_targets(
            agent, observations=256, updates=150, batch_size=128, target_scale=0.0
        )
        with torch.no_grad():
            return float(stat(agent.q.features(obs)))

    assert after(5.0) < 0.5 * after(0.0)


def test_run_agent_warm_starts_pqn_only():
    res = run_agent("pqn", iterations=2, num_envs=2, num_steps=8, hidden=16,
                    pretrain={"observations": 32, "updates": 5, "batch_size": 16})  # fmt: skip
    assert set(res["pretrain"]) == {"first_loss", "last_loss", "diagnostics"}
    assert res["total_steps"] == 2 * 2 * 8
    assert run_agent("pqn", iterations=1, num_envs=2, num_steps=4, hidden=8)["pretrain"] is None
    with pytest.raises(ValueError, match="PQN agent only"):
        run_agent("ppo", iterations=1, num_envs=2, num_steps=4, pretrain={"updates": 1})


@pytest.mark.parametrize("reset_head", [False, True])
def test_head_keeps_or_forgets_the_offset_while_the_trunk_keeps_its_change(reset_head):
    """After 100 updates towards offset 100 the kept head outputs large values (the
    protocol's default); a re-initialised head is back at the fresh scale. The trunk keeps
    what pre-training did to it either way."""
    agent = _agent()
    obs = random_policy_observations("CartPole-v1", 64, seed=5)
    before = agent.q.features(obs).detach()
    pretrain_on_random_targets(agent, observations=128, updates=100, batch_size=64,
                               target_scale=0.0, target_offset=100.0, reset_head=reset_head,
                               permute_inputs=False)  # fmt: skip
    q = agent.q(obs).detach().abs()
    assert (q.max() < 5.0) if reset_head else (q.min() > 20.0)
    assert (agent.q.features(obs).detach() - before).abs().max() > 0.1


def test_pretraining_optimiser_overrides_the_agents():
    """optimizer/lr in the pre-training settings replace the agent's own: an agent whose
    optimiser is Adam at a learning rate far too small to move (1e-7) does not fit the
    planted offset by itself, and does fit it when the warm start uses Adam at 1e-2; the
    agent's own optimiser setting is left as it was."""
    kw = dict(observations=128, updates=300, batch_size=64, target_scale=0.0, target_offset=5.0)
    slow = _agent()
    slow.hparams.lr = 1e-7
    own = pretrain_on_random_targets(slow, **kw)
    slow2 = _agent()
    slow2.hparams.lr = 1e-7
    shared = pretrain_on_random_targets(slow2, **kw, optimizer="adam", lr=1e-2)
    assert own["last_loss"] > 0.5 * own["first_loss"]
    assert shared["last_loss"] < 0.01 * shared["first_loss"]
    assert slow2.hparams.lr == 1e-7 and slow2.hparams.optimizer == "adam"


@pytest.mark.parametrize(
    "bad, match",
    [({"optimizer": "sgdx"}, "optimizer"), ({"lr": 0}, "lr must be > 0"), ({"updates": 0}, ">= 1")],
)
def test_check_pretrain_refuses_bad_settings(bad, match):
    from sigreg.warm_start import check_pretrain

    with pytest.raises(ValueError, match=match):
        check_pretrain(bad)
