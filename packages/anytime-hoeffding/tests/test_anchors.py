"""The anchors: river's and MOA's learners behind one driver, on the same arrays as ours."""

import numpy as np
import pytest
from anytime_hoeffding import anchors, streams
from anytime_hoeffding.anchors import MOA_ANCHORS, make_method, moa_available
from anytime_hoeffding.prequential import prequential

needs_moa = pytest.mark.skipif(not moa_available(), reason="capymoa or Java not available")


def test_unknown_method_lists_every_family():
    with pytest.raises(ValueError, match="MOA HT") as err:
        make_method("no such tree", 3, 2)
    assert "river HT" in str(err.value) and "ours" in str(err.value)


def test_moa_without_java_is_one_clear_error(monkeypatch):
    monkeypatch.setattr(anchors, "moa_available", lambda: False)
    with pytest.raises(RuntimeError, match=r"anytime-hoeffding\[bench\]"):
        make_method("MOA HT", 3, 2)


def test_river_ht_finds_the_planted_split():
    s = streams.planted_threshold(3_000, seed=1)
    r = prequential(make_method("river HT", s.X.shape[1], s.n_classes), s)
    assert r.accuracy > 0.8 and r.first_split is not None and r.n_nodes >= 3


@needs_moa
@pytest.mark.parametrize("name", ["MOA HT", "MOA HAT", "MOA EFDT"])
def test_moa_trees_find_the_planted_split(name):
    s = streams.planted_threshold(3_000, seed=1)
    m = make_method(name, s.X.shape[1], s.n_classes)
    r = prequential(m, s)
    # 10% flipped labels: the Bayes accuracy is 0.9
    assert 0.8 < r.accuracy <= 0.95
    assert r.first_split is not None and 1 <= r.first_split <= 3_000
    assert r.n_nodes >= 3 and r.depth >= 1


@needs_moa
def test_moa_first_split_is_exact_and_chunking_does_not_change_it():
    s = streams.planted_threshold(2_000, seed=2)
    whole = make_method("MOA HT", s.X.shape[1], 2)
    whole.test_then_train(s.X, s.y)
    chunked = make_method("MOA HT", s.X.shape[1], 2)
    preds = [chunked.test_then_train(X, y) for X, y in s.chunks(300)]
    assert whole.first_split == chunked.first_split is not None
    assert np.concatenate(preds).shape == (2_000,)


@needs_moa
def test_moa_declares_every_class_up_front():
    rng = np.random.default_rng(0)
    X = rng.uniform(size=(600, 2))
    y = np.minimum((X[:, 0] * 3).astype(np.int64), 2)  # classes 0, 1, 2
    m = make_method("MOA HT", 2, 3)
    p = m.test_then_train(X, y)
    assert set(np.unique(p[p >= 0])) <= {0, 1, 2}
    assert (p[300:] == y[300:]).mean() > 0.8


@needs_moa
def test_moa_forest_reports_sizes():
    s = streams.planted_threshold(1_500, seed=3)
    m = make_method("MOA ARF(10)", s.X.shape[1], 2)
    m.test_then_train(s.X, s.y)
    assert m.n_nodes >= 10 and m.first_split is not None
    assert set(MOA_ANCHORS) == {"MOA HT", "MOA HAT", "MOA EFDT", "MOA ARF(10)"}
