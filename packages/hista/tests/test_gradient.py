"""Unbiasedness of segment-GAE advantages on a toy token tree, by exact enumeration.

Policy: independent softmax logits for every prefix of a binary token tree of depth 3; reward:
1 iff the sequence holds at least two ``a`` tokens. The exact policy gradient (REINFORCE) is
``grad J`` with ``J = sum_tau p(tau) R(tau)``. The advantage-weighted score-function gradient
``sum_tau p(tau) sum_t A_t grad log pi(a_t | s_t)`` with segment-GAE advantages must equal it
whenever the value is a function of the state only (any values at lambda = 1; the exact values
at any lambda), and is biased when the value leaks the rollout's own reward (the reference
k-NN's ``include_self``).
"""

import itertools

import pytest
import torch
from hista.segment_gae import segment_gae

DEPTH = 3
PREFIXES = ["".join(p) for n in range(DEPTH) for p in itertools.product("ab", repeat=n)]
TRAJ = ["".join(p) for p in itertools.product("ab", repeat=DEPTH)]


def _reward(tau: str) -> float:
    return float(tau.count("a") >= 2)


def _policy(seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(len(PREFIXES), 2, generator=g, dtype=torch.float64).requires_grad_(True)


def _logps(theta, tau):
    """(DEPTH,) log pi(a_t | s_t) along tau."""
    logp = torch.log_softmax(theta, -1)
    return torch.stack([logp[PREFIXES.index(tau[:t]), "ab".index(tau[t])] for t in range(DEPTH)])


def _exact_values(theta):
    """V(s) = P(R = 1 | prefix s) under the policy, for every prefix."""
    with torch.no_grad():
        probs = torch.softmax(theta, -1)
        out = {}
        for s in PREFIXES:
            v = 0.0
            for tau in TRAJ:
                if tau.startswith(s):
                    p = 1.0
                    for t in range(len(s), DEPTH):
                        p *= float(probs[PREFIXES.index(tau[:t]), "ab".index(tau[t])])
                    v += p * _reward(tau)
            out[s] = v
        return out


def _reinforce(theta):
    j = sum(torch.exp(_logps(theta, tau).sum()) * _reward(tau) for tau in TRAJ)
    return torch.autograd.grad(j, theta)[0]


def _advantage_gradient(theta, value, lam):
    """sum_tau p(tau) sum_t A_t grad log pi(a_t|s_t); value(prefix, tau) -> V."""
    total = 0.0
    for tau in TRAJ:
        lp = _logps(theta, tau)
        p = torch.exp(lp.sum()).detach()
        v = torch.tensor([value(tau[:t], tau) for t in range(DEPTH)])
        adv = segment_gae(v, list(range(DEPTH)), DEPTH, _reward(tau), lam).double()
        total = total + p * (adv * lp).sum()
    return torch.autograd.grad(total, theta)[0]


def test_any_state_value_at_lambda_one_is_unbiased():
    theta = _policy()
    arbitrary = {s: float(v) for s, v in zip(PREFIXES, torch.rand(len(PREFIXES)), strict=True)}
    got = _advantage_gradient(theta, lambda s, tau: arbitrary[s], lam=1.0)
    assert torch.allclose(got, _reinforce(theta), atol=1e-6)


@pytest.mark.parametrize("lam", [0.0, 0.5])
def test_exact_values_are_unbiased_at_any_lambda(lam):
    theta = _policy(1)
    exact = _exact_values(theta)
    got = _advantage_gradient(theta, lambda s, tau: exact[s], lam=lam)
    assert torch.allclose(got, _reinforce(theta), atol=1e-6)


def test_a_value_that_leaks_the_own_reward_is_biased():
    theta = _policy(2)
    exact = _exact_values(theta)
    leak = _advantage_gradient(  # half the own outcome mixed in, as a self-including k-NN does
        theta, lambda s, tau: 0.5 * exact[s] + 0.5 * _reward(tau), lam=1.0
    )
    assert not torch.allclose(leak, _reinforce(theta), atol=1e-3)
    # and a wrong state value at lambda < 1 is biased too
    wrong = _advantage_gradient(theta, lambda s, tau: 0.5, lam=0.0)
    assert not torch.allclose(wrong, _reinforce(theta), atol=1e-3)
