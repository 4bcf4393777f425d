"""The blind filter against planted shortcut families, judged by an independent learner."""

import numpy as np
import pytest
from videokr.filters import BlindTextFilter, label_index
from videokr.shortcuts import (
    FAMILIES,
    CrossEncoderLearner,
    audit_family,
    family_world,
    plant_shortcut,
    shortcut_table,
    text_items,
    tune_threshold,
)


def test_genuine_items_carry_no_text_cue():
    items = text_items(200, np.random.default_rng(0))
    labels = np.bincount([label_index(r) for r in items], minlength=4) / len(items)
    assert np.all(np.abs(labels - 0.25) < 0.05)  # balanced answers


@pytest.mark.parametrize("family", FAMILIES)
def test_planting_keeps_items_valid_and_plants_a_cue(family):
    from videokr.schema import normalise_example

    items = text_items(30, np.random.default_rng(1))
    planted = plant_shortcut(items, family, 0.5, np.random.default_rng(2))
    assert len(planted) == 45
    for r in items:
        normalise_example(r)  # still a valid record (answer among the options, letters A-D)
    if family == "question_overlap":  # every option carries a topic word: no bag-of-words cue
        r = next(r for r in items if r["id"] in planted)
        assert all(" near the " in o for o in r["options"])


@pytest.fixture(scope="module")
def worlds():
    return {f: family_world(f, 240, 0.3, seed=0) for f in FAMILIES}


@pytest.mark.slow
@pytest.mark.parametrize("family", FAMILIES)  # five cross-fitted family worlds at the quick size
def test_interaction_probe_separates_planted_from_genuine(worlds, family):
    w = worlds[family]
    planted = np.array([r["id"] in w.planted for r in w.eval])
    assert (w.p_eval[planted] >= 0.5).mean() >= 0.95  # cross-fitted: caught
    assert (w.p_eval[~planted] < 0.5).mean() >= 0.95  # genuine: kept


@pytest.mark.slow  # five cross-fitted family worlds at the quick size
def test_threshold_tuning_ignores_held_out(worlds):
    tuned = [worlds[f] for f in FAMILIES if f != "question_overlap"]
    t = tune_threshold(tuned)
    assert 0.4 <= t <= 0.7
    # the held-out family still gets caught at that threshold
    w = worlds["question_overlap"]
    planted = np.array([r["id"] in w.planted for r in w.eval])
    assert (w.p_eval[planted] >= t).mean() >= 0.95


@pytest.mark.slow  # five cross-fitted family worlds at the quick size
def test_bag_of_words_filter_misses_question_overlap_interaction_filter_does_not(worlds):
    w = worlds["question_overlap"]
    bow = BlindTextFilter(probe="bow")(w.eval)
    inter = BlindTextFilter()(w.eval)
    planted = [r["id"] for r in w.eval if r["id"] in w.planted]
    assert np.mean([i in bow.removed for i in planted]) < 0.5  # the 0.1 filter's blind spot
    assert np.mean([i in inter.removed for i in planted]) >= 0.9


@pytest.mark.slow  # five cross-fitted family worlds at the quick size
def test_learner_learns_the_interaction_shortcut_and_audit_holds(worlds):
    res = audit_family(worlds["question_overlap"], 0.5, learner_epochs=20)
    assert res["learner on planted"] >= 0.9  # the learner is able to exploit the shortcut ...
    assert res["blind before"] >= res["chance"] + 0.15
    assert res["blind after"] <= res["chance"] + 0.05 + 0.07  # ... and filtering removes it (n~360)
    assert res["genuine kept"] >= 0.9
    assert res["bow blind after"] > res["blind after"]


def test_learner_at_chance_on_genuine_items():
    rng = np.random.default_rng(3)
    learner = CrossEncoderLearner(epochs=5).fit(text_items(60, rng))
    assert learner.accuracy(text_items(100, rng)) < 0.35


@pytest.mark.slow  # the quick preset's audit at one seed: about 2 minutes on 2 cores
def test_shortcut_audit_every_family():
    _, runs = shortcut_table(240, 0.3, ["question_overlap"], [0], progress=False)
    for fam, (r,) in runs.items():
        assert r["blind after"] <= r["chance"] + 0.05, fam
        assert r["genuine kept"] >= 0.9, fam
        assert r["learner on planted"] >= 0.9, fam


def test_unknown_family_is_an_error():
    with pytest.raises(ValueError, match="unknown shortcut family"):
        plant_shortcut([], "emoji", 0.1, np.random.default_rng(0))
    with pytest.raises(ValueError, match="held-out family"):
        shortcut_table(10, 0.3, ["emoji"], [0])
