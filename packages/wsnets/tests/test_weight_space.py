"""The weight space: layout checks, the permutation action, rendering, GP and canonicalisation."""

import pytest
import torch
from torch import nn
from wsnets.siren import Siren
from wsnets.weight_space import GeneralPositionWarning, WeightSpace

ARCH = [2, 5, 4, 3]


@pytest.mark.parametrize("activation", ["relu", "tanh", "sine"])
def test_permutation_preserves_the_function(activation):
    torch.manual_seed(0)
    v = WeightSpace.random(ARCH, batch=6, channels=2)
    x = torch.rand(11, 2) * 2 - 1
    for trial in range(5):
        tau = v.batch_random_permutation(torch.Generator().manual_seed(trial))
        assert any(not torch.equal(t[0], torch.arange(len(t[0]))) for t in tau)
        a, b = v.render(x, activation, w0=3.0), v.permute(tau).render(x, activation, w0=3.0)
        assert torch.allclose(a, b, atol=1e-6)
        # ... while the parameters themselves changed
        assert not torch.allclose(v.flatten(), v.permute(tau).flatten())


def test_permuting_input_or_output_neurons_changes_the_function():
    torch.manual_seed(0)
    v = WeightSpace.random(ARCH, batch=2)
    x = torch.rand(7, 2)
    ws = list(v.weights)
    ws[0] = ws[0][:, :, [1, 0]]  # swap the two input neurons
    assert not torch.allclose(WeightSpace(ws, v.biases).render(x, "relu"), v.render(x, "relu"))
    ws, bs = list(v.weights), list(v.biases)
    ws[-1], bs[-1] = ws[-1][:, [2, 0, 1]], bs[-1][:, [2, 0, 1]]
    assert not torch.allclose(WeightSpace(ws, bs).render(x, "relu"), v.render(x, "relu"))


def test_permute_matches_explicit_permutation_matrices():
    torch.manual_seed(1)
    v = WeightSpace.random(ARCH, batch=1)
    tau = v.random_permutation(torch.Generator().manual_seed(3))
    P = [torch.eye(len(t))[t] for t in tau]  # (P x)_i = x_{tau(i)}
    u = v.permute(tau)
    W = [w[0, ..., 0] for w in v.weights]
    assert torch.allclose(u.weights[0][0, ..., 0], P[0] @ W[0])
    assert torch.allclose(u.weights[1][0, ..., 0], P[1] @ W[1] @ P[0].T)
    assert torch.allclose(u.weights[2][0, ..., 0], W[2] @ P[1].T)
    assert torch.allclose(u.biases[1][0, :, 0], P[1] @ v.biases[1][0, :, 0])


def test_render_equals_plain_sequential():
    torch.manual_seed(0)
    seq = nn.Sequential(nn.Linear(2, 5), nn.Tanh(), nn.Linear(5, 4), nn.Tanh(), nn.Linear(4, 3))
    x = torch.rand(9, 2)
    v = WeightSpace.from_modules([seq])
    assert torch.allclose(v.render(x, "tanh")[0, :, :, 0], seq(x), atol=1e-6)
    for variant, offset in (("sitzmann", 0.0), ("dwsnets", 0.5)):
        net = Siren([2, 6, 6, 1], variant=variant)
        u = WeightSpace.from_modules([net])
        assert torch.allclose(u.render(x, "sine", 30.0, offset)[0, :, :, 0], net(x), atol=1e-5)


def test_state_dict_round_trip():
    torch.manual_seed(0)
    v = WeightSpace.random(ARCH, batch=3)
    u = WeightSpace.from_state_dicts(v.to_state_dicts())
    assert torch.equal(u.flatten(), v.flatten())
    assert torch.equal(WeightSpace.unflatten(v.flatten(), ARCH).flatten(), v.flatten())


def test_canonicalisation_is_invariant_and_warns_on_ties():
    torch.manual_seed(0)
    v = WeightSpace.random(ARCH, batch=4)
    assert (v.gp_gap() > 0).all()
    tau = v.batch_random_permutation(torch.Generator().manual_seed(0))
    assert torch.equal(v.canonicalize().flatten(), v.permute(tau).canonicalize().flatten())
    bs = [b.clone() for b in v.biases]
    bs[0][:, 1] = bs[0][:, 0]
    tied = WeightSpace(v.weights, bs)
    assert (tied.gp_gap()[:, 0] == 0).all()
    with pytest.warns(GeneralPositionWarning, match="general position"):
        tied.canonicalize()


def test_bad_layouts_are_rejected():
    w = [torch.zeros(1, 4, 2, 1), torch.zeros(1, 1, 3, 1)]
    b = [torch.zeros(1, 4, 1), torch.zeros(1, 1, 1)]
    with pytest.raises(ValueError, match="do not chain"):
        WeightSpace(w, b)
    with pytest.raises(ValueError, match="bias length"):
        WeightSpace([torch.zeros(1, 4, 2, 1)], [torch.zeros(1, 3, 1)])
    v = WeightSpace.random(ARCH)
    v.weights[1][0, 0, 0, 0] = float("nan")
    with pytest.raises(ValueError, match="non-finite"):
        v.check_finite()
    with pytest.raises(ValueError, match="differs from the configured"):
        v.check_arch([2, 5, 5, 3])
    with pytest.raises(ValueError, match="unsupported activation"):
        WeightSpace.random(ARCH).render(torch.rand(3, 2), "gelu")
