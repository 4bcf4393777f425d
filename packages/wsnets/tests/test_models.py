"""Every architecture: exact equivariance / invariance, no over-symmetry, the NP exception."""

import pytest
import torch
from wsnets.architectures import EQUIVARIANT, MODELS, build_model
from wsnets.weight_space import WeightSpace

ARCH = (2, 5, 4, 3)
WIDTH = {
    "dws": 3,
    "hnp": 3,
    "nft": 4,
    "np": 3,
    "np_pe": 3,
    "gmn": 6,
    "mlp": 16,
    "mlp_aug": 16,
    "canon": 16,
}


def _net(name, head, out_dim=2):
    torch.manual_seed(0)
    return build_model(name, ARCH, WIDTH[name], 2, head, out_dim).eval()


def _v():
    torch.manual_seed(1)
    return WeightSpace.random(ARCH, batch=3)


def _swap_inputs(v):
    ws = list(v.weights)
    ws[0] = ws[0][:, :, [1, 0]]
    return WeightSpace(ws, v.biases)


def _swap_outputs(v):
    ws, bs = list(v.weights), list(v.biases)
    ws[-1], bs[-1] = ws[-1][:, [1, 2, 0]], bs[-1][:, [1, 2, 0]]
    return WeightSpace(ws, bs)


@pytest.mark.parametrize("name", [*EQUIVARIANT, "np", "canon"])
def test_invariant_heads_are_invariant(name):
    net, v = _net(name, "invariant"), _v()
    base = net(v)
    for seed in range(4):
        tau = v.batch_random_permutation(torch.Generator().manual_seed(seed))
        assert torch.allclose(net(v.permute(tau)), base, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("name", [*EQUIVARIANT, "np", "canon"])
def test_equivariant_heads_are_equivariant(name):
    net, v = _net(name, "equivariant", 3), _v()
    base = net(v)
    for seed in range(4):
        tau = v.batch_random_permutation(torch.Generator().manual_seed(seed))
        out = net(v.permute(tau))
        assert torch.allclose(out.flatten(), base.permute(tau).flatten(), atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("name", ["mlp", "mlp_aug"])
def test_flat_mlp_is_not_invariant(name):
    net, v = _net(name, "invariant"), _v()
    tau = v.batch_random_permutation(torch.Generator().manual_seed(0))
    assert not torch.allclose(net(v.permute(tau)), net(v), atol=1e-4)


@pytest.mark.parametrize("name", ["dws", "hnp", "np_pe", "nft", "gmn"])
def test_no_over_symmetry_input_and_output_neurons_matter(name):
    net, v = _net(name, "invariant"), _v()
    base = net(v)
    assert not torch.allclose(net(_swap_inputs(v)), base, atol=1e-4)
    assert not torch.allclose(net(_swap_outputs(v)), base, atol=1e-4)


def test_np_without_positional_encoding_is_over_symmetric():
    """The documented exception: NP-NFN cannot tell input or output neurons apart."""
    net, v = _net("np", "invariant"), _v()
    base = net(v)
    assert torch.allclose(net(_swap_inputs(v)), base, atol=1e-5)
    assert torch.allclose(net(_swap_outputs(v)), base, atol=1e-5)


def test_all_models_build_and_reject_bad_input():
    v = _v()
    for name in MODELS:
        assert _net(name, "invariant", 4)(v).shape == (3, 4)
        assert _net(name, "equivariant", 2)(v).channels == 2
    with pytest.raises(ValueError, match="differs from the configured"):
        _net("dws", "invariant")(WeightSpace.random([2, 5, 5, 3]))
    with pytest.raises(ValueError, match="unknown model"):
        build_model("transformer", ARCH, 4, 1, "invariant", 1)
    with pytest.raises(ValueError, match="unknown head"):
        build_model("dws", ARCH, 4, 1, "both", 1)


@pytest.mark.parametrize("name", MODELS)
def test_every_model_rejects_non_finite_weights(name):
    v = _v()
    v.biases[0][0, 0, 0] = float("inf")
    with pytest.raises(ValueError, match="non-finite"):
        _net(name, "invariant")(v)


def test_every_paper_family_is_registered_as_equivariant():
    assert set(EQUIVARIANT) == {"dws", "hnp", "np_pe", "nft", "gmn"}


def test_nft_attention_is_used_and_hnp_matches_dws_budget():
    """NFT is not just DWS (attention changes the output); HNP spans the DWS commutant."""
    from wsnets.dws import DWSNet
    from wsnets.nf_transformer import NFT

    torch.manual_seed(0)
    nft = NFT(ARCH, hidden=4, depth=2, head="invariant", out_dim=2)
    dws = DWSNet(ARCH, hidden=4, depth=2, head="invariant", out_dim=2)
    dws.load_state_dict({k: v for k, v in nft.state_dict().items() if not k.startswith("attn")})
    v = _v()
    assert not torch.allclose(nft(v), dws(v), atol=1e-4)
    assert _net("hnp", "equivariant", 3).n_params() == _net("dws", "equivariant", 3).n_params()


def test_nft_attention_is_equivariant_for_each_block_and_rejects_bad_heads():
    from wsnets.nf_transformer import WeightSpaceAttention

    torch.manual_seed(0)
    att = WeightSpaceAttention(3, dim=4, heads=2)
    v = WeightSpace.random(ARCH, batch=2, channels=4)
    for seed in range(3):
        tau = v.batch_random_permutation(torch.Generator().manual_seed(seed))
        out = att(v.permute(tau))
        ref = att(v).permute(tau)
        for a, b in zip(out.weights + out.biases, ref.weights + ref.biases, strict=True):
            assert torch.allclose(a, b, atol=1e-5)
    with pytest.raises(ValueError, match="divide"):
        WeightSpaceAttention(3, dim=5, heads=2)
