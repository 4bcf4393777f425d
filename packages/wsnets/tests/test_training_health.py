"""Regression tests for the two training failures of 0.1.x (DWS editors at F=2/4, invariant
heads stuck at the class prior) and for the StatNN anchor / shared-init zoos behind the fix."""

import pytest
import torch
from wsnets.architectures import build_model
from wsnets.baselines import StatNN, block_statistics
from wsnets.inr_zoo import fit_inrs
from wsnets.lightning import INREditor
from wsnets.siren import siren_init
from wsnets.weight_space import WeightSpace, image_coords

ARCH = [2, 8, 8, 1]


def _tiny_edit_problem(n=24, size=6):
    """SIRENs fitted to random blobs; the target is the brightened image (a learnable edit)."""
    g = torch.Generator().manual_seed(0)
    images = torch.rand(n, size * size, generator=g) * 0.5
    params, _ = fit_inrs(image_coords(size), images, ARCH, "dwsnets", steps=40, lr=3e-3)
    return params, (images + 0.3).clamp(0, 1)


def test_dws_editor_with_F2_starts_at_the_input_and_reduces_training_loss():
    torch.manual_seed(0)
    v, target = _tiny_edit_problem()
    m = INREditor(ARCH, "dws", hidden=4, depth=2, F=2, image_size=6, offset=0.5)
    m.block_scale.copy_(
        torch.tensor(
            [
                float(t.std().clamp_min(1e-6))
                for p in zip(v.weights, v.biases, strict=True)
                for t in p
            ]
        )
    )
    no_edit = float(
        ((m.ensemble.render(v, m.coords, "sine", 30.0, 0.5)[..., 0] - target) ** 2).mean()
    )
    opt = torch.optim.AdamW(m.parameters(), lr=1e-3, weight_decay=1e-3)
    losses = []
    for _ in range(40):
        loss = ((m.render(m.edit(v)) - target) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss.detach()))
    assert losses[0] < 1.2 * no_edit  # the first edit does not destroy the function
    assert losses[-1] < 0.5 * losses[0]  # and training makes progress


def test_statnn_is_invariant_to_any_entry_permutation_and_has_no_equivariant_head():
    torch.manual_seed(0)
    v = WeightSpace.random(ARCH, batch=3)
    feats = block_statistics(v)
    assert feats.shape == (3, 7 * 6)
    shuffled = WeightSpace(
        [
            w.flatten(1, 2)[:, torch.randperm(w.shape[1] * w.shape[2])].reshape(w.shape)
            for w in v.weights
        ],
        v.biases,
    )
    assert torch.allclose(block_statistics(shuffled), feats)
    assert build_model("statnn", ARCH, 8, 2, "invariant", 4).eval()(v).shape == (3, 4)
    with pytest.raises(ValueError, match="only an invariant head"):
        StatNN(ARCH, head="equivariant", out_dim=2)


def test_shared_init_zoo_members_are_permutations_of_one_initialisation():
    coords, targets = image_coords(4), torch.rand(5, 16)
    start = siren_init(ARCH, 1, "sitzmann", 30.0, torch.Generator().manual_seed(0))
    v, _ = fit_inrs(coords, targets, ARCH, "sitzmann", steps=0, init="shared")
    canon = v.canonicalize(warn=False)
    ref = start.canonicalize(warn=False)
    for a, b in zip(canon.weights + canon.biases, ref.weights + ref.biases, strict=True):
        assert torch.allclose(a, b.expand_as(a))
    assert not torch.equal(v.weights[1][0], v.weights[1][1])  # but they are permuted
    with pytest.raises(ValueError, match="unknown INR initialisation"):
        fit_inrs(coords, targets, ARCH, init="meta-learned")
