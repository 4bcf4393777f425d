"""VinePPO and PPO-critic advantages behind the one provider interface."""

import numpy as np
import pytest
import torch
from hista.advantage_provider import (
    CriticAdvantages,
    RolloutGroup,
    VineAdvantages,
    make_provider,
)
from hista.advantage_variance import milestone_prefixes
from hista.arith_chain import NoisyTeacher, Problem, reward
from hista.numca import milestones


def _char_offsets(text):
    return [(i, i + 1) for i in range(len(text))]


def test_vine_recovers_the_exact_teacher_values_at_milestones():
    """Planted ground truth: with many continuations from the noisy teacher, the Monte-Carlo
    value at every milestone is the teacher's exact value, so A = R - V_exact(segment start)."""
    teacher, rng = NoisyTeacher(p_base=0.1, p_carry=0.3), np.random.default_rng(0)
    p = Problem((7, 5, 9, 8))
    truth = p.partial_sums()
    responses = [" ".join(map(str, truth)) + ";", f"{truth[0]} {truth[1] + 1} 40;"]
    rewards = [reward(p, r) for r in responses]

    def sampler(pid, prefix, k):  # the milestone token is the space after a number
        assert pid == p.prompt and not prefix.endswith(" ")
        cut = prefix + " "
        return [reward(p, cut + teacher.continue_from(p, cut, rng)) for _ in range(k)]

    group = RolloutGroup(p.prompt, responses, rewards, [_char_offsets(r) for r in responses])
    prov = VineAdvantages(sampler, k=2000, merge_threshold=1)
    adv = prov(group)
    std = float(np.std(rewards, ddof=1)) + 1e-4
    for resp, a, r in zip(responses, adv, rewards, strict=True):
        marks = milestones(resp, _char_offsets(resp), 1)
        assert [resp[: pos + 1] for pos, _ in marks] == milestone_prefixes(resp)[1:]
        for pos, _ in marks:
            exact = teacher.exact_value(p, resp[: pos + 1])
            assert float(a[pos]) * std == pytest.approx(r - exact, abs=0.04)
        assert float(a[0]) * std == pytest.approx(r - np.mean(rewards), abs=1e-4)


def test_vine_rejects_a_bad_sampler_and_needs_one():
    group = RolloutGroup("p", ["7 9;", "8 9;"], [1.0, 0.0], [_char_offsets("7 9;")] * 2)
    with pytest.raises(ValueError, match="2 rewards in"):
        VineAdvantages(lambda pid, prefix, k: [2.0] * k, k=2, merge_threshold=1)(group)
    with pytest.raises(ValueError, match="2 rewards in"):
        VineAdvantages(lambda pid, prefix, k: [1.0], k=2, merge_threshold=1)(group)
    with pytest.raises(ValueError, match="needs sampler"):
        make_provider("vine")
    with pytest.raises(ValueError, match="k "):
        VineAdvantages(lambda pid, prefix, k: [], k=0)


def _critic_group(lengths, starts, h_dim=3, seed=0):
    g = torch.Generator().manual_seed(seed)
    hid = [torch.randn(s + n, h_dim, generator=g) for s, n in zip(starts, lengths, strict=True)]
    offs = [[(i, i + 1) for i in range(n)] for n in lengths]
    return RolloutGroup("p", ["x" * n for n in lengths], [1.0, 0.0, 1.0], offs, hid, starts)


def test_critic_advantage_is_reward_minus_value_of_the_state_before_each_token():
    group = _critic_group([4, 2, 3], [3, 5, 2])

    def head(h):  # (N, H) -> (N,): reads the first feature, so the state used is visible
        return torch.sigmoid(h[:, 0])

    std = float(torch.tensor(group.rewards).std()) + 1e-4
    adv = CriticAdvantages(head)(group)
    for a, h, s, n, r in zip(
        adv, group.hidden, group.response_starts, group.lengths, group.rewards, strict=True
    ):
        assert a.shape == (n,)
        expect = r - torch.sigmoid(h[s - 1 : s - 1 + n, 0])  # state before token t
        assert torch.allclose(a * std, expect, atol=1e-5)
    # lambda = 0: one-step TD errors V(s_{t+1}) - V(s_t), R - V(s_last) at the end
    a0 = CriticAdvantages(head, lam=0.0)(group)[0] * std
    v = torch.sigmoid(group.hidden[0][2:6, 0])
    assert torch.allclose(a0, torch.cat([v[1:], torch.tensor([1.0])]) - v, atol=1e-5)


def test_critic_bad_inputs():
    group = _critic_group([4, 2, 3], [3, 5, 2])
    with pytest.raises(ValueError, match="shape"):
        CriticAdvantages(lambda h: torch.zeros(h.shape[0], 2))(group)
    no_hidden = RolloutGroup("p", ["a", "b"], [1.0, 0.0], [[(0, 1)]] * 2)
    with pytest.raises(ValueError, match="hidden states"):
        CriticAdvantages(lambda h: h[:, 0])(no_hidden)
    with pytest.raises(ValueError, match="needs critic"):
        make_provider("critic")
    group.response_starts = [0, 5, 2]
    group.hidden[0] = torch.randn(4, 3)
    with pytest.raises(ValueError, match="response start"):
        CriticAdvantages(lambda h: h[:, 0])(group)


def test_equal_reward_groups_get_zero_vine_and_critic_advantages():
    group = _critic_group([4, 2, 3], [3, 5, 2])
    group.rewards = [1.0, 1.0, 1.0]
    assert all(float(a.abs().max()) == 0 for a in CriticAdvantages(lambda h: h[:, 0])(group))


def test_cli_real_advantages_vine_needs_the_python_api(capsys):
    from hista.cli import main
    from icml26_shared.contract import assert_one_line_error

    code = main(["real-advantages", "--estimator", "vine"])
    assert_one_line_error(capsys.readouterr().err, "continuation sampler", code)
