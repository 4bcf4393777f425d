"""EquivariantICLTransformer: equivariance, order invariance, prototype, shapes, bad input."""

import pytest
import torch
from symicl.baselines import prototype_scores
from symicl.episodes import LinearTaskSampler, one_hot_labels
from symicl.transformer import EquivariantICLTransformer, prototype_model


def _batch(d=5, c=3, n=12, b=8, seed=0, unlabeled=0.0):
    ep = LinearTaskSampler(d, c, n, unlabeled=unlabeled, seed=seed).sample(b)
    return ep["x"].double(), one_hot_labels(ep["y"], c).double(), ep["xq"].double()


def _model(symmetry="tied", d=5, c=3, layers=3, heads=2, attention="softmax", seed=0):
    torch.manual_seed(seed)
    return EquivariantICLTransformer(
        d, c, layers, heads, symmetry, attention, init_scale=0.4
    ).double()


@pytest.mark.parametrize("attention", ["softmax", "linear"])
@pytest.mark.parametrize("unlabeled", [0.0, 0.5])
def test_tied_model_is_feature_and_label_permutation_equivariant(attention, unlabeled):
    model = _model(attention=attention)
    x, y, xq = _batch(unlabeled=unlabeled)
    out = model(x, y, xq)  # (B, C)
    gen = torch.Generator().manual_seed(1)
    for _ in range(3):
        pf, pc = torch.randperm(5, generator=gen), torch.randperm(3, generator=gen)
        out_perm = model(x[..., pf], y[..., pc], xq[..., pf])
        assert torch.allclose(out_perm, out[..., pc], atol=1e-5)
    assert out.shape == (8, 3)


def test_tied_model_is_invariant_to_context_order():
    model = _model()
    x, y, xq = _batch()
    perm = torch.randperm(12, generator=torch.Generator().manual_seed(2))
    assert torch.allclose(model(x[:, perm], y[:, perm], xq), model(x, y, xq), atol=1e-10)


@pytest.mark.parametrize("symmetry", ["none", "augment"])
def test_unconstrained_models_are_not_equivariant_until_projected(symmetry):
    model = _model(symmetry).eval()
    x, y, xq = _batch()
    pf, pc = torch.tensor([1, 0, 2, 3, 4]), torch.tensor([2, 0, 1])
    before = (model(x[..., pf], y[..., pc], xq[..., pf]) - model(x, y, xq)[..., pc]).abs().max()
    assert before > 1e-3
    model.project_()
    after = (model(x[..., pf], y[..., pc], xq[..., pf]) - model(x, y, xq)[..., pc]).abs().max()
    assert after < 1e-10
    assert model.symmetry_defects().max() < 1e-12


def test_all_modes_are_invariant_to_context_order():
    for symmetry in ("none", "augment"):
        model = _model(symmetry).eval()
        x, y, xq = _batch()
        perm = torch.arange(11, -1, -1)
        assert torch.allclose(model(x[:, perm], y[:, perm], xq), model(x, y, xq), atol=1e-10)


def test_hand_set_one_layer_model_equals_the_prototype_classifier():
    x, y, xq = _batch(d=6, c=4, n=20, b=64, unlabeled=0.25)
    model = prototype_model(6, 4).double()
    got = model(x, y, xq)
    want = prototype_scores(x, y, xq)
    assert torch.allclose(got, want, atol=1e-12, rtol=0)
    assert torch.equal(got.argmax(-1), want.argmax(-1))


def test_trajectory_shapes():
    model = _model(layers=4)
    x, y, xq = _batch()
    logits, states = model(x, y, xq, return_trajectory=True)
    assert states.shape == (5, 8, 13, 8)  # (L+1, B, N+1, d+C)
    assert torch.equal(states[-1][:, -1, 5:], logits)
    assert torch.equal(states[0][:, :12, 5:], y)  # input label rows


def test_augment_training_forward_conjugates_each_episode():
    model = _model("augment").train()
    x, y, xq = _batch()
    torch.manual_seed(0)
    a = model(x, y, xq)
    torch.manual_seed(1)
    b = model(x, y, xq)
    assert not torch.allclose(a, b)  # a fresh random g per call
    model.eval()
    assert torch.equal(model(x, y, xq), model(x, y, xq))


def test_parameter_counts():
    tied = EquivariantICLTransformer(5, 3, 3, 2, "tied")
    full = EquivariantICLTransformer(5, 3, 3, 2, "none")
    assert sum(p.numel() for p in tied.parameters()) == 3 * 2 * 12
    assert sum(p.numel() for p in full.parameters()) == 3 * 2 * 2 * 64


def test_d_equal_one_keeps_b_coordinate_at_zero():
    model = EquivariantICLTransformer(1, 2, 2, 1, "tied")
    x, y, xq = _batch(d=1, c=2)
    model.double()(x, y, xq).sum().backward()
    assert model.qk_coef.grad[..., 1].abs().max() == 0


@pytest.mark.parametrize(
    ("mutate", "match"),
    [
        (lambda x, y, xq: (x[..., :4], y, xq[..., :4]), "does not match the model's d=5"),
        (lambda x, y, xq: (torch.where(x > 1.5, float("nan"), x), y, xq), "NaN"),
        (lambda x, y, xq: (x, y, xq + float("inf")), "NaN or inf"),
        (lambda x, y, xq: (x, y * 2, xq), "one-hot"),
        (lambda x, y, xq: (x, y + y.roll(1, -1), xq), "one-hot"),
        (lambda x, y, xq: (x, y[..., :2], xq), "one-hot with C=3"),
        (lambda x, y, xq: (x[:, :0], y[:, :0], xq), "at least one point"),
    ],
)
def test_bad_inputs_raise_clear_errors(mutate, match):
    model = _model()
    with pytest.raises(ValueError, match=match):
        model(*mutate(*_batch()))


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"symmetry": "full"}, "unknown symmetry mode"),
        ({"attention": "relu"}, "unknown attention"),
        ({"n_classes": 1}, "C must be"),
        ({"d": 0}, "d must be"),
        ({"n_layers": 0}, "n_layers"),
    ],
)
def test_bad_constructor_arguments(kwargs, match):
    args = {"d": 3, "n_classes": 2, **kwargs}
    with pytest.raises(ValueError, match=match):
        EquivariantICLTransformer(**args)
