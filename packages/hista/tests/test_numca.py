"""Numca: number extraction, milestone merging, table semantics, segment advantages."""

import pytest
import torch
from hista.numca import NumcaTable, extract_numbers, merge_close_positions, state_key


def test_extract_numbers_drops_the_final_answer_and_handles_edges():
    assert extract_numbers("no numbers here") == []
    assert extract_numbers("42") == []  # the only number is the answer
    assert extract_numbers("42", drop_last=False) == [("42", 2)]
    assert [n for n, _ in extract_numbers("a1b22 c333;")] == ["1", "22"]


def test_state_is_a_set_order_and_repeats_ignored():
    assert state_key(["7", "12"]) == state_key(["12", "7", "7"])
    assert state_key(["07"]) == state_key(["7"])


def test_merge_rule_on_hand_made_examples():
    assert merge_close_positions([], 5) == []
    assert merge_close_positions([0, 100], 50) == [0, 100]
    assert merge_close_positions([0, 10, 20, 30], 50) == [30, 30, 30, 30]  # one cluster
    assert merge_close_positions([0, 60, 70], 50) == [0, 70, 70]
    with pytest.raises(ValueError, match="non-decreasing"):
        merge_close_positions([5, 1], 3)


def test_value_is_the_hand_computed_mean_over_rollouts_through_the_state():
    t = NumcaTable()
    t.update("p", ["3", "5"], 1.0)
    t.update("p", ["3", "6"], 0.0)
    t.update("p", ["3", "5", "3"], 1.0)  # repeat of 3 ignored
    t.update("p", ["4"], 0.0)
    assert t.value("p", []) == pytest.approx(0.5)  # root: all-time mean
    assert t.value("p", ["3"]) == pytest.approx(2 / 3)
    assert t.value("p", ["5", "3"]) == 1.0  # set, order-free
    assert t.value("p", ["3", "6"]) == 0.0
    assert t.value("p", ["9"]) == 0.0  # unseen -> unseen_value
    assert t.value("other", []) == 0.0  # tables are per problem id


def test_table_persists_through_json():
    t = NumcaTable(unseen_value=0.25)
    t.update("a", ["1", "2"], 1.0)
    t.update("b", [], 0.0)
    back = NumcaTable.from_json(t.to_json())
    for pid, nums in [("a", []), ("a", ["1"]), ("a", ["2", "1"]), ("b", []), ("b", ["5"])]:
        assert back.value(pid, nums) == t.value(pid, nums)
    back.update("a", ["1"], 0.0)  # keeps accumulating after the round trip
    assert back.value("a", ["1"]) == 0.5


def test_non_binary_reward_is_rejected_unless_declared():
    with pytest.raises(ValueError, match="not binary"):
        NumcaTable().update("p", ["1"], 0.5)
    t = NumcaTable(binary=False)
    t.update("p", ["1"], 0.5)
    assert t.value("p", ["1"]) == 0.5


def _table():
    t = NumcaTable()
    for nums, r in [(["7", "12"], 1.0), (["7", "13"], 0.0), (["8", "12"], 0.0), (["7", "12"], 1.0)]:
        t.update("p", nums, r)
    return t


def test_segment_advantages_lambda_one_is_reward_minus_segment_start_value():
    t = _table()
    resp = "7 12 15;"
    offsets = [(i, i + 1) for i in range(len(resp))]
    adv = t.segment_advantages("p", resp, offsets, 1.0, merge_threshold=1, lam=1.0)
    v_root, v7, v712 = t.value("p", []), t.value("p", ["7"]), t.value("p", ["7", "12"])
    expect = [1 - v_root] * 1 + [1 - v7] * 3 + [1 - v712] * 4
    assert adv.tolist() == pytest.approx(expect)


def test_segment_advantages_lambda_zero_are_deltas_and_they_telescope():
    t = _table()
    resp = "7 12 15;"
    offsets = [(i, i + 1) for i in range(len(resp))]
    adv = t.segment_advantages("p", resp, offsets, 0.0, merge_threshold=1, lam=0.0)
    v_root, v7, v712 = t.value("p", []), t.value("p", ["7"]), t.value("p", ["7", "12"])
    deltas = [v7 - v_root, v712 - v7, 0.0 - v712]
    assert adv[[0, 1, 4]].tolist() == pytest.approx(deltas)
    assert sum(deltas) == pytest.approx(0.0 - v_root)


def test_merging_gives_one_milestone_for_clustered_numbers():
    t = _table()
    resp = "7 12 15;"
    offsets = [(i, i + 1) for i in range(len(resp))]
    adv = t.segment_advantages("p", resp, offsets, 1.0, merge_threshold=50, lam=1.0)
    # 7 and 12 merge into the milestone of 12: two segments, root then {7, 12}
    assert adv[0] == pytest.approx(1 - t.value("p", []))
    assert adv[-1] == pytest.approx(1 - t.value("p", ["7", "12"]))
    assert len(set(adv.tolist())) == 2


def test_response_without_numbers_falls_back_to_the_root_value():
    t = _table()
    resp = "abc"
    adv = t.segment_advantages("p", resp, [(0, 1), (1, 2), (2, 3)], 1.0)
    assert torch.allclose(adv, torch.full((3,), 1 - t.value("p", [])))


def test_mismatched_offsets_are_rejected():
    with pytest.raises(ValueError, match="offsets cover"):
        _table().segment_advantages("p", "7 1;", [(i, i + 1) for i in range(10)], 1.0)
    with pytest.raises(ValueError, match="empty response"):
        _table().segment_advantages("p", "", [], 1.0)


def test_numca_error_vs_exact_teacher_values_shrinks_like_one_over_sqrt_g():
    """On noisy-teacher groups the table's value of every visited state is a mean of i.i.d.
    Bernoulli outcomes with the exact value as mean, so its error falls as 1/sqrt(G)."""
    import numpy as np
    from hista.advantage_variance import milestone_prefixes
    from hista.arith_chain import NoisyTeacher, reward, sample_problems

    teacher, rng = NoisyTeacher(), np.random.default_rng(0)
    problems = sample_problems(30, seed=5)
    err = {}
    for g in (8, 128):
        errs = []
        for pid, p in enumerate(problems):
            t = NumcaTable()
            outs = [teacher.sample(p, rng) for _ in range(g)]
            for o in outs:
                t.update(str(pid), [n for n, _ in extract_numbers(o)], reward(p, o))
            for q in milestone_prefixes(outs[0]):
                nums = [n for n, _ in extract_numbers(q, drop_last=False)]
                errs.append(abs(t.value(str(pid), nums) - teacher.exact_value(p, q)))
        err[g] = float(np.mean(errs))
    ratio = err[8] / err[128]  # sqrt(128 / 8) = 4 for states visited by most rollouts
    assert 2.5 < ratio < 8.0, err


def test_milestones_at_number_start_follow_the_reference_positions():
    from hista.numca import milestones

    offs = [(i, i + 1) for i in range(8)]
    # the reference's number_parse positions: match.start() of every number but the last
    assert [p for p, _ in milestones("7 12 15;", offs, 1, at="start")] == [0, 2]
    # two-character tokens "7 " | "12" | " 1" | "5;": "12" starts in token 1
    two = [(0, 2), (2, 4), (4, 6), (6, 8)]
    assert milestones("7 12 15;", two, 1, at="start") == [(0, ["7"]), (1, ["7", "12"])]


def test_segment_advantages_at_start_telescope_without_the_root():
    t = NumcaTable()
    t.update("p", ["7", "12"], 1.0)
    t.update("p", ["7", "13"], 0.0)
    offs = [(i, i + 1) for i in range(8)]
    adv = t.segment_advantages("p", "7 12 15;", offs, 1.0, merge_threshold=1, lam=0.0, at="start")
    # segments [0, 2) -> V({7,12}) - V({7}) = 0.5, [2, 8) -> R - V({7,12}) = 0
    assert adv.tolist() == pytest.approx([0.5, 0.5] + [0.0] * 6)
    lam1 = t.segment_advantages("p", "7 12 15;", offs, 1.0, merge_threshold=1, at="start")
    assert float(lam1[0]) == pytest.approx(1.0 - t.value("p", ["7"]))  # root never used


def test_leave_one_out_values_equal_a_table_without_that_rollout():
    rollouts = [(["3", "5"], 1.0), (["3", "6"], 0.0), (["3", "5"], 0.0), (["4"], 1.0)]
    full, states = NumcaTable(), [["3"], ["3", "5"]]
    for nums, r in rollouts:
        full.update("p", nums, r)
    for i, (nums, r) in enumerate(rollouts):
        others = NumcaTable()
        for j, (n2, r2) in enumerate(rollouts):
            if j != i:
                others.update("p", n2, r2)
        loo = full.path_values("p", states, fallback=0.5, unseen="fallback", exclude=(nums, r))
        ref = others.path_values("p", states, fallback=0.5, unseen="fallback")
        assert loo == pytest.approx(ref)


def test_prior_shrinks_toward_the_parent_and_unseen_options():
    t = NumcaTable()
    t.update("p", ["3"], 1.0)
    t.update("p", ["4"], 0.0)
    assert t.path_values("p", [["3"]], prior=0.0) == [0.5, 1.0]
    assert t.path_values("p", [["3"]], prior=1.0) == [0.5, 0.75]  # (1 + 0.5) / (1 + 1)
    assert t.path_values("p", [["3"]], prior=1e9)[1] == pytest.approx(0.5)  # -> the parent
    assert t.path_values("p", [["9"]]) == [0.5, 0.0]  # unseen: table value 0 (reference)
    assert t.path_values("p", [["9"]], unseen="parent") == [0.5, 0.5]
    assert t.path_values("p", [["9"]], 0.3, unseen="fallback") == [0.5, 0.3]
    with pytest.raises(ValueError, match="unseen"):
        t.path_values("p", [["9"]], unseen="nope")
