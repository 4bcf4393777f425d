"""Anchors: prototype and in-context GD closed forms, scikit-learn estimators."""

import numpy as np
import pytest
import torch
from symicl.baselines import gd_scores, prototype_scores, sklearn_predict, tune_gd_lr
from symicl.episodes import LinearTaskSampler, one_hot_labels
from symicl.evaluation import anchor_accuracies, shifted_sampler


def _ep(n=200, **kw):
    return LinearTaskSampler(8, 2, 32, seed=11, **kw).sample(n)


def test_one_gd_step_with_unit_step_is_the_prototype():
    ep = _ep(50)
    y = one_hot_labels(ep["y"], 2)
    assert torch.allclose(
        gd_scores(ep["x"], y, ep["xq"], 1, 1.0), prototype_scores(ep["x"], y, ep["xq"]), atol=1e-6
    )


def test_many_gd_steps_converge_to_least_squares():
    ep = _ep(5)
    y = one_hot_labels(ep["y"], 2).double()
    x, xq = ep["x"].double(), ep["xq"].double()
    got = gd_scores(x, y, xq, 2000, 0.5)
    w = torch.linalg.lstsq(x, y).solution  # (B, d, C)
    assert torch.allclose(got, torch.einsum("bdc,bd->bc", w, xq), atol=1e-6)


def test_prototype_numpy_reference():
    ep = _ep(10)
    y = one_hot_labels(ep["y"], 2).numpy()
    x, xq = ep["x"].numpy(), ep["xq"].numpy()
    want = np.stack([(y[b] * (x[b] @ xq[b])[:, None]).sum(0) / 32 for b in range(10)])
    assert np.allclose(
        prototype_scores(ep["x"], torch.from_numpy(y), ep["xq"]).numpy(), want, atol=1e-5
    )


def test_anchors_order_on_the_linear_task():
    acc = anchor_accuracies(
        _ep(300), 2, {4: tune_gd_lr(LinearTaskSampler(8, 2, 32, seed=12).sample(200), 2, 4)}
    )
    assert 0.75 < acc["prototype"] < 0.92  # notes: about 0.83 at (8, 2, 32)
    assert acc["logistic"] > acc["1-nn"] and acc["ridge"] > acc["1-nn"]
    assert acc["GD k=4"] >= acc["prototype"] - 0.02
    assert 0.6 < acc["1-nn"] < 0.85


def test_sklearn_uses_only_labelled_points_and_handles_single_class():
    ep = LinearTaskSampler(4, 3, 6, unlabeled=0.5, seed=0).sample(40)
    for name in ("ridge", "logistic", "1-nn"):
        pred = sklearn_predict(name, ep)
        assert pred.shape == (40,) and pred.min() >= 0 and pred.max() < 3
    with pytest.raises(ValueError, match="unknown baseline"):
        sklearn_predict("svm", ep)


def test_gd_and_shift_bad_input():
    ep = _ep(2)
    y = one_hot_labels(ep["y"], 2)
    with pytest.raises(ValueError, match="steps >= 1"):
        gd_scores(ep["x"], y, ep["xq"], 0, 1.0)
    with pytest.raises(ValueError, match="unknown shift"):
        shifted_sampler(LinearTaskSampler(4, 2, 8), "rotate")
    assert shifted_sampler(LinearTaskSampler(4, 2, 8), "longer").n_context == 16
