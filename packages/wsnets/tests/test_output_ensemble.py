"""The output-ensemble modification: F = 1 is the plain editor, budgets are matched."""

import pytest
import torch
from wsnets.architectures import matched_hidden, n_params
from wsnets.lightning import INREditor
from wsnets.output_ensemble import OutputEnsemble
from wsnets.weight_space import WeightSpace, image_coords

ARCH = [2, 6, 6, 1]


@pytest.mark.parametrize("name", ["dws", "hnp", "np_pe", "nft", "gmn", "mlp"])
def test_f1_is_bit_identical_to_the_plain_residual_editor(name):
    torch.manual_seed(0)
    editor = INREditor(ARCH, name, hidden=4, depth=2, F=1, image_size=5)
    v = WeightSpace.random(ARCH, batch=3, scale=0.1)
    with torch.no_grad():
        delta = editor.net(editor.normalise(v))  # the base model's single edit
        s = editor.ensemble.scales
        plain = WeightSpace(
            [
                w + s[2 * i] * d
                for i, (w, d) in enumerate(zip(v.weights, delta.weights, strict=True))
            ],
            [
                b + s[2 * i + 1] * d
                for i, (b, d) in enumerate(zip(v.biases, delta.biases, strict=True))
            ],
        )
        expected = plain.render(image_coords(5), "sine", 30.0, 0.5)[:, :, 0, 0]
        got = editor(v.weights, v.biases)
    assert torch.equal(got, expected)


def test_identical_members_render_like_one_network():
    torch.manual_seed(0)
    v = WeightSpace.random(ARCH, batch=2)
    ens = OutputEnsemble(3, F=4)
    d1 = WeightSpace.random(ARCH, batch=2)
    d4 = d1.map(lambda t: t.expand(*t.shape[:-1], 4))
    x = torch.rand(10, 2)
    one = OutputEnsemble(3, F=1).edit(v, d1).render(x, "sine")[..., 0]
    assert torch.allclose(ens.render(ens.edit(v, d4), x), one, atol=1e-6)


def test_ensemble_is_the_mean_of_its_members():
    torch.manual_seed(0)
    v = WeightSpace.random(ARCH, batch=2)
    ens = OutputEnsemble(3, F=3, init_scale=0.5)
    edited = ens.edit(v, WeightSpace.random(ARCH, batch=2, channels=3))
    x = torch.rand(8, 2)
    members = [
        WeightSpace(
            [w[..., f : f + 1] for w in edited.weights], [b[..., f : f + 1] for b in edited.biases]
        ).render(x, "relu")[..., 0]
        for f in range(3)
    ]
    assert torch.allclose(ens.render(edited, x, "relu"), sum(members) / 3, atol=1e-6)


@pytest.mark.parametrize("name", ["dws", "hnp", "np_pe", "nft", "gmn", "mlp"])
@pytest.mark.parametrize("F", [2, 4, 8])
def test_budget_is_matched(name, F):
    width = {"dws": 6, "hnp": 6, "np_pe": 6, "nft": 6, "gmn": 12, "mlp": 32}[name]
    base = n_params(name, ARCH, width, 2, "equivariant", 1)
    h = matched_hidden(name, ARCH, width, 2, F)
    assert n_params(name, ARCH, h, 2, "equivariant", F) <= base
    assert n_params(name, ARCH, h + 1, 2, "equivariant", F) > base or h == width


def test_f_below_one_is_rejected():
    with pytest.raises(ValueError, match="F must be >= 1"):
        OutputEnsemble(3, F=0)
    with pytest.raises(ValueError, match="F must be >= 1"):
        INREditor(ARCH, "dws", 4, 1, F=0)
