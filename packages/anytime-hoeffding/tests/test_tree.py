"""The anytime-valid Hoeffding tree: validity, power, recovery, equivalences, bad input."""

import math
import pickle

import numpy as np
import pytest
from anytime_hoeffding import streams
from anytime_hoeffding.tree import AnytimeHoeffdingTreeClassifier as Tree
from split_test_reference import reference_root_log_e

ALPHA = 0.05


def _rate_ok(n_split, runs, alpha=ALPHA):
    return n_split / runs <= alpha + 3 * math.sqrt(alpha * (1 - alpha) / runs)


# ------------------------------------------------------------------ validity
def test_false_split_fraction_on_noise():
    runs = 40
    n_split = sum(
        Tree(alpha=ALPHA).learn_many(*_xy(streams.noise(5_000, seed=r))).n_nodes > 1
        for r in range(runs)
    )
    assert _rate_ok(n_split, runs)


def test_false_split_fraction_on_noise_per_node_spending_three_classes():
    runs = 25
    n_split = sum(
        Tree(alpha=ALPHA, alpha_spending="node", betting="ons")
        .learn_many(*_xy(streams.noise(4_000, n_classes=3, seed=100 + r)))
        .n_nodes
        > 1
        for r in range(runs)
    )
    assert _rate_ok(n_split, runs)


def test_drifting_prior_null_stays_unsplit():
    runs = 10
    n_split = sum(
        Tree(alpha=ALPHA).learn_many(*_xy(streams.drifting_prior(20_000, seed=r))).n_nodes > 1
        for r in range(runs)
    )
    assert _rate_ok(n_split, runs)


def test_river_ht_splits_on_noise_where_ours_does_not():
    """The measured failure this package fixes: river's tie-break splits on pure noise."""
    HT = pytest.importorskip("river.tree").HoeffdingTreeClassifier
    s = streams.noise(3_600, seed=7)  # the tie-break fires at the 3,400th instance
    ht = HT()
    for x, y in zip(s.X.tolist(), s.y.tolist(), strict=True):
        ht.learn_one(dict(enumerate(x)), y)
    assert ht.n_nodes > 1
    assert Tree().learn_many(s.X, s.y).n_nodes == 1


# ------------------------------------------------------------------ recovery and power
@pytest.mark.parametrize("seed", range(5))
def test_planted_threshold_recovered(seed):
    s = streams.planted_threshold(3_000, feature=3, threshold=0.6, flip=0.1, seed=seed)
    tree = Tree(leaf_prediction="mc").learn_many(s.X, s.y)
    first = tree.split_log[0]
    assert first["feature"] == 3
    assert abs(first["threshold"] - 0.6) <= 1 / 16  # one bin of the 16-bin grid
    assert first["t"] <= 1_000


def test_planted_depth_two_tree_recovered():
    s = streams.planted_tree(20_000, seed=0)
    tree = Tree(leaf_prediction="mc").learn_many(s.X, s.y)
    d = tree.to_dict()
    assert d["feature"] == 0 and abs(d["threshold"] - 0.5) < 0.07
    assert d["left"]["feature"] == 1 and abs(d["left"]["threshold"] - 0.3) < 0.07
    assert d["right"]["feature"] == 2 and abs(d["right"]["threshold"] - 0.9) < 0.07


def test_sea_splits_only_on_relevant_features():
    s = streams.sea(20_000, n_drifts=0, seed=1)
    tree = Tree(leaf_prediction="mc").learn_many(s.X, s.y)
    assert tree.n_nodes > 1
    assert {e["feature"] for e in tree.split_log} <= {0, 1}


def _commit_time(eps, seed, cap=60_000):
    tree = Tree(leaf_prediction="mc")
    s = streams.weak_signal(cap, eps=eps, seed=seed)
    for X, y in s.chunks(500):
        tree.learn_many(X, y)
        if tree.first_split is not None:
            return tree.first_split
    return cap


def test_commit_time_follows_inverse_square_law():
    """Halving the signal multiplies the commitment time by about 4 (band [2.5, 6])."""
    strong = np.median([_commit_time(0.1, s) for s in range(9)])
    weak = np.median([_commit_time(0.05, 50 + s) for s in range(9)])
    assert 2.5 <= weak / strong <= 6.0


@pytest.mark.parametrize("seed", [3, 4, 5])
def test_holdout_risk_decreases_at_every_split(seed):
    """With the default (adaptive naive-Bayes) leaves, every split lowers the hold-out Brier
    risk of the deployed tree: the test scores the forecasters the leaves deploy."""
    s = streams.planted_tree(12_000, seed=seed)
    hold = streams.planted_tree(4_000, seed=99)
    onehot = np.eye(2)[hold.y]
    tree = Tree(classes=[0, 1])  # default leaves; columns of predict_proba = labels 0, 1

    def risk():
        return float(((tree.predict_proba_many(hold.X) - onehot) ** 2).sum(axis=1).mean())

    tree.learn_many(s.X[:100], s.y[:100])
    before, n_nodes = risk(), tree.n_nodes
    checked = 0
    for X, y in streams.Stream("s", s.X[100:], s.y[100:], 2).chunks(25):
        tree.learn_many(X, y)
        if tree.n_nodes != n_nodes:
            after = risk()
            assert after < before
            checked += 1
            n_nodes = tree.n_nodes
        before = risk() if tree.n_nodes == n_nodes else before
    assert checked >= 2


# ------------------------------------------------------------------ equivalences
def _xy(s):
    return s.X, s.y


def test_learn_one_loop_equals_learn_many():
    s = streams.sea(3_000, n_irrelevant=2, seed=4)
    a = Tree(seed=1, leaf_prediction="mc").learn_many(s.X, s.y)
    b = Tree(seed=1, leaf_prediction="mc")
    for x, y in zip(s.X, s.y, strict=True):
        b.learn_one({f"f{j}": v for j, v in enumerate(x)}, int(y))
    assert a.n_nodes == b.n_nodes > 1
    log_a = [(e["t"], e["feature"], e["threshold"], e["log_e_value"]) for e in a.split_log]
    log_b = [(e["t"], int(e["feature"][1:]), e["threshold"], e["log_e_value"]) for e in b.split_log]
    assert log_a == log_b
    probe = s.X[:200]
    got = np.array(
        [
            [b.predict_proba_one({f"f{j}": v for j, v in enumerate(x)})[k] for k in (0, 1)]
            for x in probe
        ]
    )
    np.testing.assert_array_equal(a.predict_proba_many(probe), got)


def test_drift_adaptation_is_the_same_in_any_batching():
    """Alarms, swaps, drops and splits happen at their own rows, whatever the batch sizes."""
    s = streams.make_stream("agrawal", 14_000, 0)
    a = Tree(seed=0).learn_many(s.X, s.y)
    b = Tree(seed=0)
    for i in range(0, len(s), 37):
        b.learn_many(s.X[i : i + 37], s.y[i : i + 37])
    assert [e["event"] for e in a.drift_log].count("swap") >= 1
    assert a.drift_log == b.drift_log
    assert a.split_log == b.split_log
    np.testing.assert_array_equal(a.predict_proba_many(s.X[:300]), b.predict_proba_many(s.X[:300]))


def test_drift_swaps_in_a_better_tree_after_an_abrupt_change():
    """STAGGER concept 0 -> 2 at mid-stream: the alternate wins and accuracy recovers."""
    s = streams.make_stream("stagger", 12_000, 1)
    adapt, frozen = Tree(seed=0, classes=[0, 1]), Tree(seed=0, classes=[0, 1], drift=False)
    hits = {"adapt": [], "frozen": []}
    for X, y in s.chunks(1):
        for name, t in (("adapt", adapt), ("frozen", frozen)):
            hits[name].append(t.predict_many(X)[0] == y[0])
            t.learn_many(X, y)
    late = slice(8_000, None)  # well after the drift at 6,000
    assert np.mean(hits["adapt"][late]) >= 0.97
    assert np.mean(hits["adapt"][late]) > np.mean(hits["frozen"][late]) + 0.02
    assert any(e["event"] == "swap" and e["t"] > 6_000 for e in adapt.drift_log)


def test_compiled_kernel_matches_numpy_reference():
    s = streams.planted_threshold(1_500, d=4, seed=5)
    tree = Tree(alpha=1e-300, leaf_prediction="mc").learn_many(s.X, s.y)  # never splits
    assert tree.n_nodes == 1
    ref = reference_root_log_e(s.X, s.y, 2)
    got = tree.leaf_log_e_values(0)
    np.testing.assert_allclose(got, ref, rtol=1e-9, atol=1e-9)
    assert got.shape == (4, 15)


def test_deterministic_under_seed():
    s = streams.sea(8_000, seed=6)
    a = Tree(max_features="sqrt", seed=3).learn_many(s.X, s.y)
    b = Tree(max_features="sqrt", seed=3).learn_many(s.X, s.y)
    assert a.split_log == b.split_log
    np.testing.assert_array_equal(a.predict_proba_many(s.X), b.predict_proba_many(s.X))


def test_pickle_round_trip():
    s = streams.sea(6_000, seed=7)
    a = Tree().learn_many(s.X[:3_000], s.y[:3_000])
    b = pickle.loads(pickle.dumps(a))
    np.testing.assert_array_equal(a.predict_proba_many(s.X), b.predict_proba_many(s.X))
    a.learn_many(s.X[3_000:], s.y[3_000:])
    b.learn_many(s.X[3_000:], s.y[3_000:])
    assert a.split_log == b.split_log


def test_zero_weight_rows_are_skipped():
    s = streams.sea(4_000, seed=8)
    w = (np.arange(4_000) % 3 != 0).astype(float)
    a = Tree().learn_many(s.X, s.y, sample_weight=w)
    keep = w > 0
    b = Tree().learn_many(s.X[keep], s.y[keep])
    assert [(e["feature"], e["threshold"]) for e in a.split_log] == [
        (e["feature"], e["threshold"]) for e in b.split_log
    ]


def test_string_labels_learned_in_order_of_appearance():
    tree = Tree()
    tree.learn_one({"a": 1.0}, "cat")
    tree.learn_one({"a": 2.0}, "dog")
    assert tree.classes_ == ["cat", "dog"]
    p = tree.predict_proba_one({"a": 1.5})
    assert set(p) == {"cat", "dog"} and abs(sum(p.values()) - 1) < 1e-12


def test_shapes_and_inspection():
    s = streams.sea(5_000, seed=9)
    tree = Tree(leaf_prediction="mc").learn_many(s.X, s.y)
    assert tree.predict_proba_many(s.X[:7]).shape == (7, 2)  # (n, K)
    assert tree.predict_many(s.X[:7]).shape == (7,)
    assert tree.apply(s.X[:7]).shape == (7,)
    assert tree.n_leaves == (tree.n_nodes + 1) // 2
    assert tree.bytes_per_leaf > 0
    assert "x[" in tree.describe()
    for e in tree.split_log:
        assert e["e_value"] >= e["n_candidates"] / ALPHA  # crossed its threshold


def test_missing_route_policy():
    s = streams.planted_threshold(3_000, seed=10)
    X = s.X.copy()
    X[::7, 0] = np.nan
    tree = Tree(missing="route").learn_many(X, s.y)
    assert tree.split_log[0]["feature"] == 3
    assert np.isfinite(tree.predict_proba_many(X)).all()


# ------------------------------------------------------------------ bad input
@pytest.mark.parametrize(
    "kwargs,msg",
    [
        ({"alpha": 0.0}, "alpha"),
        ({"alpha": 1.0}, "alpha"),
        ({"bet_cap": 1.0}, "bet cap"),
        ({"bet_cap": -0.1}, "bet cap"),
        ({"n_bins": 1}, "n_bins"),
        ({"loss": "hinge"}, "unknown loss"),
        ({"betting": "kelly"}, "unknown betting"),
        ({"alpha_spending": "global"}, "alpha_spending"),
        ({"leaf_prediction": "knn"}, "leaf_prediction"),
        ({"missing": "drop"}, "missing"),
    ],
)
def test_bad_parameters(kwargs, msg):
    with pytest.raises(ValueError, match=msg):
        Tree(**kwargs)


def test_bad_batches():
    tree = Tree(classes=[0, 1])
    X = np.zeros((4, 3))
    with pytest.raises(ValueError, match="NaN or inf"):
        tree.learn_many(np.full((2, 3), np.inf), [0, 1])
    with pytest.raises(ValueError, match="rows but y has"):
        tree.learn_many(X, [0, 1])
    with pytest.raises(ValueError, match="numeric"):
        tree.learn_many(np.array([["a", "b", "c"]]), [0])
    with pytest.raises(ValueError, match="declared classes"):
        tree.learn_many(X, [0, 1, 2, 1])
    with pytest.raises(ValueError, match="non-negative"):
        tree.learn_many(X, [0, 1, 0, 1], sample_weight=[1, -1, 1, 1])
    tree.learn_many(X, [0, 1, 0, 1])
    with pytest.raises(ValueError, match="features but the tree was built on 3"):
        tree.learn_many(np.zeros((2, 4)), [0, 1])
    n = tree.n_seen
    tree.learn_many(np.zeros((0, 3)), [])  # empty batch: a no-op
    assert tree.n_seen == n


def test_dict_features_absent_are_missing_and_new_ones_ignored():
    """river's convention: features may disappear (missing, routed left) or appear (ignored)."""
    tree = Tree()
    tree.learn_one({"a": 1.0, "b": 2.0}, 0)
    tree.learn_one({"a": 1.0, "c": 2.0}, 1)  # b absent, c new
    assert tree.feature_names_ == ["a", "b"]
    p = tree.predict_proba_one({"c": 5.0})
    assert set(p) == {0, 1} and abs(sum(p.values()) - 1) < 1e-12


def test_river_check_estimator():
    """river's own conventions suite (clone, pickling, emerging/disappearing features, ...)."""
    try:
        from river.checks import check_estimator  # river >= 0.22
    except ImportError:  # pragma: no cover - older river
        from river.utils.estimator_checks import check_estimator

    check_estimator(Tree(seed=0))


def test_regrown_alternate_keeps_the_partition_with_fresh_leaves():
    s = streams.planted_threshold(3_000, seed=2)
    tree = Tree(seed=0, drift=False).learn_many(s.X, s.y)
    t = tree._tree
    assert t.n_nodes >= 3
    new = t.regrown(t=6_000)
    n = t.n_nodes
    for name in ("feature", "threshold", "left", "right", "depth"):
        np.testing.assert_array_equal(getattr(new, name)[:n], getattr(t, name)[:n])
    np.testing.assert_array_equal(_leaves(new, s.X), _leaves(t, s.X))
    leaf_slots = new.node_slot[:n][new.feature[:n] < 0]
    assert sorted(leaf_slots.tolist()) == list(range(len(leaf_slots)))  # one fresh slot each
    assert not new.counts[leaf_slots].any() and not new.gauss[leaf_slots].any()
    assert not new.ready[leaf_slots].any()
    assert new.kept_splits == set(np.flatnonzero(t.feature[:n] >= 0).tolist())


def _leaves(t, X):
    from anytime_hoeffding.flat_tree import leaves_of

    return leaves_of(X, t.feature, t.threshold, t.left, t.right)


def test_collapse_merges_two_leaves_into_the_pooled_statistics():
    """Closed form: the merged naive-Bayes Gaussians equal those of the pooled data."""
    from anytime_hoeffding.flat_tree import FlatTree

    rng = np.random.default_rng(0)
    t = FlatTree(n_features=2, n_bins=4, warmup=10, betting_code=0)
    t.grid[0] = 0.5
    t.split(0, 0, 0, t=0)
    lnode, rnode = int(t.left[0]), int(t.right[0])
    data = {}
    for node, loc in ((lnode, -1.0), (rnode, 2.0)):
        slot = t.node_slot[node]
        for k in range(2):
            x = rng.normal(loc + k, 1.0 + k, size=(50 + 10 * k, 2))
            data.setdefault(k, []).append(x)
            t.gauss[slot, k, :, 0] = len(x)
            t.gauss[slot, k, :, 1] = x.mean(0)
            t.gauss[slot, k, :, 2] = ((x - x.mean(0)) ** 2).sum(0)
            t.counts[slot, k] = len(x)
    leaf = t.collapse(0)
    assert leaf == 0 and t.n_nodes == 1 and t.feature[0] == -1
    slot = t.node_slot[0]
    assert len(t.free_slots) == 1 and slot not in t.free_slots
    for k in range(2):
        pooled = np.concatenate(data[k])
        np.testing.assert_allclose(t.gauss[slot, k, :, 0], len(pooled))
        np.testing.assert_allclose(t.gauss[slot, k, :, 1], pooled.mean(0))
        np.testing.assert_allclose(t.gauss[slot, k, :, 2], ((pooled - pooled.mean(0)) ** 2).sum(0))
        assert t.counts[slot, k] == len(pooled)
    assert not t.ready[slot]  # the merged leaf restarts its warm-up and split test


def test_regrown_alternate_keeps_the_splits_both_concepts_share():
    """Agrawal function 0 -> 2: both depend on age bands, so the regrown alternate (the
    default) keeps the age splits and recovers faster than a tree restarted from one leaf."""
    from river.datasets import synth

    parts = [
        streams.from_river(
            synth.Agrawal(classification_function=f, seed=1 + f, perturbation=0.05), n, "agrawal"
        )  # fmt: skip
        for f, n in ((0, 6_000), (2, 4_000))
    ]  # abrupt drift at 6,000
    X = np.concatenate([p.X for p in parts])
    y = np.concatenate([p.y for p in parts])
    late = {}
    for mode in ("regrow", "fresh"):
        t = Tree(seed=1, classes=[0, 1], drift_alternate=mode).learn_many(X[:8_000], y[:8_000])
        assert any(e["event"] == "swap" and e["t"] > 6_000 for e in t.drift_log)
        late[mode] = float((t.predict_many(X[8_000:]) == y[8_000:]).mean())
    assert late["regrow"] > late["fresh"] + 0.05


def test_fresh_challenger_simplifies_a_regrown_tree_on_stagger():
    """STAGGER concept 0 (size and colour) -> 2 (size only): the regrown tree keeps a colour
    split the new concept does not need; the one-leaf challenger replaces it."""
    s = streams.make_stream("stagger", 20_000, 0)
    t = Tree(seed=0).learn_many(s.X, s.y)
    events = [e["event"] for e in t.drift_log]
    assert "swap" in events and "simplify" in events
    assert t.n_nodes <= 3
    with pytest.raises(ValueError, match="drift_alternate"):
        Tree(drift_alternate="copy")


def test_binary_brier_fast_path_matches_the_general_kernel(monkeypatch):
    """The scalar path of learn_kernel (two classes, Brier, aGRAPA) gives the same splits,
    e-processes and predictor hits, bit for bit, as the general array path."""
    from anytime_hoeffding import tree as tree_module
    from anytime_hoeffding.flat_tree import TestSpec

    s = streams.planted_tree(6_000, seed=4)
    runs = {}
    for fast in (True, False):
        monkeypatch.setattr(tree_module, "TestSpec", lambda *a, fast=fast: TestSpec(*a, fast))
        runs[fast] = Tree(seed=0).learn_many(s.X, s.y)
    a, b = runs[True], runs[False]
    assert len(a.split_log) >= 2 and a.split_log == b.split_log
    np.testing.assert_array_equal(a._tree.estate, b._tree.estate)
    np.testing.assert_array_equal(a._tree.cand_hits, b._tree.cand_hits)
    np.testing.assert_array_equal(a.predict_proba_many(s.X[:200]), b.predict_proba_many(s.X[:200]))
