"""extract_recursion / Recursion: reproduces the transformer's logits, serialises, refuses bad input."""

import numpy as np
import pytest
import torch
from symicl.episodes import LinearTaskSampler, one_hot_labels
from symicl.recursion import Recursion, extract_recursion
from symicl.transformer import EquivariantICLTransformer


def _episodes(d=5, c=3, n=16, unlabeled=0.0, b=32):
    return LinearTaskSampler(d, c, n, unlabeled=unlabeled, seed=4).sample(b)


@pytest.mark.parametrize("attention", ["softmax", "linear"])
@pytest.mark.parametrize("unlabeled", [0.0, 0.5])
def test_recursion_reproduces_tied_model_logits(attention, unlabeled):
    torch.manual_seed(0)
    scale = 0.5 if attention == "softmax" else 0.1  # linear attention grows polynomially
    model = EquivariantICLTransformer(5, 3, 4, 2, "tied", attention, init_scale=scale)
    rec = extract_recursion(model)
    assert rec.depth == 4 and np.asarray(rec.qk).shape == (4, 2, 6)
    assert rec.verify(model, _episodes(unlabeled=unlabeled)) < 1e-5


def test_recursion_trajectory_matches_model_states():
    torch.manual_seed(1)
    model = EquivariantICLTransformer(5, 3, 3, 1, "tied", init_scale=0.5).double()
    ep = _episodes()
    y = one_hot_labels(ep["y"], 3)
    _, states = model(ep["x"].double(), y.double(), ep["xq"].double(), return_trajectory=True)
    _, (tx, ty) = extract_recursion(model).run(ep["x"], y, ep["xq"], return_trajectory=True)
    assert np.allclose(tx, states[..., :5].detach().numpy(), atol=1e-10)
    assert np.allclose(ty, states[..., 5:].detach().numpy(), atol=1e-10)


@pytest.mark.parametrize("symmetry", ["none", "augment"])
def test_extraction_from_unconstrained_model_requires_projection(symmetry):
    torch.manual_seed(2)
    model = EquivariantICLTransformer(5, 3, 2, 2, symmetry, init_scale=0.5)
    with pytest.raises(ValueError, match="not projected onto the commutant"):
        extract_recursion(model)
    rec = extract_recursion(model, project=True)  # projects a copy
    assert not bool(model.projected)
    projected = model.project_()
    assert rec.verify(projected, _episodes()) < 1e-5
    assert extract_recursion(projected) == rec


def test_recursion_of_a_different_model_does_not_verify():
    torch.manual_seed(3)
    a = EquivariantICLTransformer(5, 3, 2, 2, init_scale=0.5)
    b = EquivariantICLTransformer(5, 3, 2, 2, init_scale=0.5)
    assert extract_recursion(a).verify(b, _episodes()) > 1e-3


def test_json_round_trip_and_file(tmp_path):
    torch.manual_seed(4)
    rec = extract_recursion(EquivariantICLTransformer(4, 2, 2, 1))
    path = tmp_path / "rec.json"
    rec.save(path)
    assert Recursion.load(path) == rec
    assert "layer 1 head 0" in rec.describe()


def test_bad_recursion_input():
    with pytest.raises(ValueError, match="not valid JSON"):
        Recursion.from_json("{")
    with pytest.raises(ValueError, match="missing or bad field"):
        Recursion.from_dict({"d": 3})
    with pytest.raises(ValueError, match=r"\[layer\]\[head\]\[6\]"):
        Recursion.from_dict(
            {"d": 3, "n_classes": 2, "attention": "softmax", "qk": [[[1.0]]], "ov": [[[1.0]]]}
        )
    rec = extract_recursion(EquivariantICLTransformer(4, 2, 1, 1))
    with pytest.raises(ValueError, match="does not match the model's d=4"):
        rec.run(torch.zeros(1, 3, 5), torch.zeros(1, 3, 2), torch.zeros(1, 5))
    with pytest.raises(ValueError, match="recursion is for d=4"):
        rec.verify(EquivariantICLTransformer(5, 2, 1, 1), _episodes(5, 2))
    with pytest.raises(TypeError):
        extract_recursion(torch.nn.Linear(2, 2))
