"""The episode generator: hard no-margin argmax labels, seeding, variants, bad input."""

import math

import numpy as np
import pytest
import torch
from symicl.episodes import LinearTaskSampler, one_hot_labels


def test_labels_are_argmax_of_linear_map():
    ep = LinearTaskSampler(d=6, n_classes=4, n_context=32, seed=3).sample(50)
    x, w = ep["x"].double(), ep["w"].double()  # (B, N, d), (B, C, d)
    assert ep["x"].shape == (50, 32, 6) and ep["w"].shape == (50, 4, 6)
    assert torch.equal(torch.einsum("bcd,bnd->bnc", w, x).argmax(-1), ep["y"])
    assert torch.equal(torch.einsum("bcd,bd->bc", w, ep["xq"].double()).argmax(-1), ep["yq"])
    # no margin filtering: some points lie very close to a decision boundary
    scores = torch.einsum("bcd,bnd->bnc", w, x).sort(-1).values
    assert (scores[..., -1] - scores[..., -2]).min() < 0.05


def test_quadratic_labels_use_the_quadratic_map():
    ep = LinearTaskSampler(5, 3, 16, kind="quadratic", seed=1).sample(20)
    x = ep["x"].double()
    scores = torch.einsum("bcd,bnd->bnc", ep["w"].double(), x) + torch.einsum(
        "bcd,bnd->bnc", ep["v"].double(), (x**2 - 1) / math.sqrt(2)
    )
    assert torch.equal(scores.argmax(-1), ep["y"])


def test_seeds_reproduce_episodes_independently_of_batching():
    s = LinearTaskSampler(4, 3, 10, seed=7)
    a, b = s.sample(6), s.sample(6)
    for key in a:
        assert torch.equal(a[key], b[key])
    part = s.sample(2, start=4)
    assert torch.equal(part["x"], a["x"][4:]) and torch.equal(part["y"], a["y"][4:])
    other = LinearTaskSampler(4, 3, 10, seed=8).sample(6)
    assert not torch.equal(other["x"], a["x"])
    assert torch.equal(s.batch(5, 3)["x"], s.batch(5, 3)["x"])
    assert not torch.equal(s.batch(5, 3)["x"], s.batch(5, 4)["x"])


def test_label_noise_flips_to_other_classes_at_rate_p():
    ep = LinearTaskSampler(4, 3, 50, noise=0.3, seed=0).sample(200)
    flipped = (ep["y"] != ep["y_clean"]).double().mean().item()
    assert abs(flipped - 0.3) < 0.02
    assert torch.equal(ep["yq"], LinearTaskSampler(4, 3, 50, seed=0).sample(200)["yq"])


def test_unlabeled_points_are_exactly_the_requested_fraction():
    ep = LinearTaskSampler(4, 2, 20, unlabeled=0.5, seed=0).sample(30)
    assert ((ep["y"] == -1).sum(1) == 10).all()
    oh = one_hot_labels(ep["y"], 2)
    assert torch.equal(oh.sum(-1) == 0, ep["y"] == -1)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"n_classes": 1}, "C must be"),
        ({"d": 0}, "d must be"),
        ({"n_context": 0}, "N must be"),
        ({"noise": 1.5}, "noise"),
        ({"noise": -0.1}, "noise"),
        ({"unlabeled": 1.0}, "unlabeled"),
        ({"kind": "cubic"}, "unknown task kind"),
    ],
)
def test_bad_sampler_arguments(kwargs, match):
    args = {"d": 4, "n_classes": 3, "n_context": 8, **kwargs}
    with pytest.raises(ValueError, match=match):
        LinearTaskSampler(**args)


def test_one_hot_rejects_out_of_range_labels():
    with pytest.raises(ValueError, match="labels must lie"):
        one_hot_labels(torch.tensor([[0, 3]]), 3)
    with pytest.raises(ValueError, match="integer labels"):
        one_hot_labels(torch.tensor([[0.0, 1.0]]), 3)
    assert np.allclose(one_hot_labels(torch.tensor([[1, -1]]), 2).numpy(), [[[0, 1], [0, 0]]])
