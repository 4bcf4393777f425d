"""The decoder: shapes, causal masking, RoPE's relative-position property, the fused path,
a hand-built two-layer induction circuit, and head knockout."""

import pytest
import torch
from mmicl.evaluation import knockout_table, split_accuracies
from mmicl.gmm_data import BurstySampler, GMMBank, eval_splits
from mmicl.positions import alibi_bias, apply_rope, rope_angles
from mmicl.transformer import CausalSelfAttention, ICLDecoder, knockout


@pytest.mark.parametrize("pos", ["ape", "rope", "alibi", "hybrid", "none"])
def test_shapes(pos):
    torch.manual_seed(0)
    m = ICLDecoder(8, 5, d_model=16, n_layers=3, n_heads=2, pos=pos).eval()
    logits, attns = m(torch.randn(4, 11, 8), return_attention=True)
    assert logits.shape == (4, 5)
    assert len(attns) == 3 and all(a.shape == (4, 2, 11, 11) for a in attns)
    assert all(torch.allclose(a.sum(-1), torch.ones(4, 2, 11)) for a in attns)


@pytest.mark.parametrize("pos", ["ape", "rope", "alibi"])
def test_causal_masking(pos):
    torch.manual_seed(0)
    m = ICLDecoder(8, 5, d_model=16, n_heads=2, pos=pos).eval()
    x = torch.randn(2, 9, 8)
    h, attns = m.hidden_states(x)
    assert all(bool((a.triu(1) == 0).all()) for a in attns)
    y = x.clone()
    y[:, 6:] = torch.randn(2, 3, 8)  # change the future of position 5
    h2, _ = m.hidden_states(y)
    assert torch.allclose(h[:, :6], h2[:, :6], atol=1e-6)
    assert not torch.allclose(h[:, 6:], h2[:, 6:], atol=1e-3)
    # a prefix run gives the same states as the full run
    h3, _ = m.hidden_states(x[:, :6])
    assert torch.allclose(h3, h[:, :6], atol=1e-5)


def test_rope_scores_depend_only_on_relative_position():
    torch.manual_seed(0)
    att = CausalSelfAttention(16, 2, pos="rope")
    x = torch.randn(3, 7, 16)
    base = att.scores(x, torch.arange(7))
    for shift in (1, 5, 40):
        assert torch.allclose(att.scores(x, torch.arange(7) + shift), base, atol=1e-4)
    # rotations preserve norms and <R_m q, R_n k> depends on m - n only
    q, k = torch.randn(8), torch.randn(8)

    def dot(m, n):
        a_m, a_n = rope_angles(torch.tensor([m]), 8), rope_angles(torch.tensor([n]), 8)
        return float((apply_rope(q[None], a_m) * apply_rope(k[None], a_n)).sum())

    assert dot(3, 1) == pytest.approx(dot(10, 8), abs=1e-5)
    assert dot(3, 1) != pytest.approx(dot(3, 2), abs=1e-3)
    # absolute positions are not shift-invariant
    ape = ICLDecoder(4, 2, d_model=8, pos="ape")
    assert ape.abs_pos is not None


def test_alibi_bias_is_linear_in_distance():
    b = alibi_bias(2, 5)
    assert b.shape == (2, 5, 5)
    assert torch.allclose(b[0, 4, 2] * 2, b[0, 4, 0])
    assert float(b[1, 3, 3]) == 0.0


@pytest.mark.parametrize("pos", ["ape", "rope", "alibi", "hybrid"])
def test_fused_and_explicit_attention_agree(pos):
    torch.manual_seed(1)
    m = ICLDecoder(8, 5, d_model=16, n_heads=2, pos=pos).eval()
    x = torch.randn(3, 9, 8)
    assert torch.allclose(m(x), m(x, return_attention=True)[0], atol=1e-5)


def test_position_capacity_is_enforced():
    m = ICLDecoder(4, 2, d_model=8, pos="ape", max_positions=9)
    with pytest.raises(ValueError, match="position capacity"):
        m(torch.randn(1, 10, 4))
    with pytest.raises(ValueError, match="shape"):
        m(torch.randn(1, 5, 3))


def _hand_built_induction_decoder(bank: GMMBank, N: int, beta: float = 60.0) -> ICLDecoder:
    """Layer 0: every token copies its predecessor's content (a previous-token head).
    Layer 1: the query matches its content against the copied predecessors and copies the
    matching label token's content; the readout scores labels against the copied content."""
    D, T = bank.D, 2 * N + 1
    A, Bs, C, P = 0, D, 2 * D, 3 * D  # residual subspaces: content, prev content, copy, position
    d = 3 * D + T
    m = ICLDecoder(D, bank.L, d_model=d, n_layers=2, n_heads=1, pos="ape", max_positions=T)
    m.eval()
    with torch.no_grad():
        for p in m.parameters():
            p.zero_()
        for norm in [m.norm] + [n for b in m.blocks for n in (b.norm1, b.norm2)]:
            norm.weight.fill_(1.0)
        m.embed.weight[A : A + D] = torch.eye(D)
        m.abs_pos.embed.weight[:, P : P + T] = torch.eye(T)
        # layer 0: q(t) = position t-1, k(s) = position s, v = content -> prev subspace
        w = m.blocks[0].attn.qkv.weight  # rows: q (d), k (d), v (d)
        for t in range(1, T):
            w[P + t - 1, P + t] = beta
        w[d : 2 * d][P : P + T, P : P + T] = torch.eye(T)
        w[2 * d : 3 * d][Bs : Bs + D, A : A + D] = torch.eye(D)
        # layer 1: q = content, k = prev content, v = content -> copy subspace
        w = m.blocks[1].attn.qkv.weight
        w[0:d][A : A + D, A : A + D] = beta * torch.eye(D)
        w[d : 2 * d][A : A + D, Bs : Bs + D] = torch.eye(D)
        w[2 * d : 3 * d][C : C + D, A : A + D] = torch.eye(D)
        m.readout.weight[:, C : C + D] = bank.label_emb
    return m


def test_hand_built_induction_circuit_solves_ic():
    bank = GMMBank(512, 16, 32, seed=0)
    s = BurstySampler(bank, N=8, B=2, eps=0.1)
    sets = eval_splits(s, n=200)
    m = _hand_built_induction_decoder(bank, 8)
    acc = split_accuracies(m, sets)
    assert acc["IC"] > 0.95 and acc["IC2"] > 0.95  # pure in-context learning
    assert acc["IW"] < 0.3  # no memory: non-bursty sequences rarely contain the answer
    # query-free contexts: copying can only give a wrong label, so a pure circuit scores ~0
    assert acc["IW0"] < 0.05
    # heads ranked on other sequences than those scored
    rank = eval_splits(s, n=200, seed=999)["IC"]
    rows = knockout_table(m, sets, seed=0, rank_batch=rank, ks=(1, 2))  # k=2: all, skipped
    by = {(r["knockout"], r["k"]): r for r in rows}
    assert by[("top induction heads", 1)]["heads"] == "L1H0"
    assert by[("top previous-token heads", 1)]["heads"] == "L0H0"
    assert by[("top induction heads", 1)]["IC acc"] < 0.3
    assert by[("top previous-token heads", 1)]["IC acc"] < 0.5
    # one head per layer: the only head that is not the top induction head is L0H0
    assert by[("random heads (across layers)", 1)]["heads"] == "1 draws"
    assert ("top induction heads", 2) not in by
    assert by[("none", 0)]["IC acc"] > 0.95 and by[("all heads", 2)]["IC acc"] < 0.3


def test_knocking_out_every_head_removes_context_dependence():
    torch.manual_seed(0)
    m = ICLDecoder(8, 5, d_model=16, n_layers=2, n_heads=2, pos="rope").eval()
    x = torch.randn(4, 9, 8)
    y = x.clone()
    y[:, :8] = torch.randn(4, 8, 8)  # new context, same query
    assert not torch.allclose(m(x), m(y), atol=1e-4)
    with knockout(m, m.heads()):
        assert torch.allclose(m(x), m(y), atol=1e-6)
        assert torch.allclose(m(x, return_attention=True)[0], m(y), atol=1e-6)
    assert not torch.allclose(m(x), m(y), atol=1e-4)  # restored
    with pytest.raises(ValueError, match="no head"), knockout(m, [(5, 0)]):
        pass


def test_concat_layout_is_the_authors_input():
    """embedding='concat': no learned input map; the residual stream starts as
    [one-hot position (randomly offset in training), token] for ape and the raw token for
    rope; the one-hot channels are fixed, never parameters."""
    torch.manual_seed(0)
    S, T, D, slots = 5, 7, 8, 13
    x = torch.randn(S, T, D)
    ape = ICLDecoder(D, 4, pos="ape", embedding="concat", max_positions=slots)
    assert ape.d_model == D + slots
    ape.eval()
    start = ape.embed(x) + ape.abs_pos(S, T)  # (S, T, slots + D)
    onehot = torch.nn.functional.one_hot(torch.arange(T), slots).float().expand(S, T, slots)
    assert torch.equal(start, torch.cat([onehot, x], -1))
    ape.train()
    shifted = (ape.embed(x) + ape.abs_pos(S, T, torch.Generator().manual_seed(1)))[..., :slots]
    offsets = shifted.argmax(-1) - torch.arange(T)  # (S, T): one offset per sequence
    assert bool((offsets == offsets[:, :1]).all()) and int(offsets.min()) >= 0
    assert int(offsets.max()) <= slots - T and bool((shifted.sum(-1) == 1).all())
    ape.requires_grad_(True)  # unfreezing (stage 3) cannot make the layout learnable
    names = [n for n, _ in ape.named_parameters()]
    assert not any(n.startswith(("embed", "abs_pos")) for n in names)
    assert not any(k.startswith(("embed", "abs_pos")) for k in ape.state_dict())
    rope = ICLDecoder(D, 4, pos="rope", embedding="concat").eval()
    assert rope.d_model == D and torch.equal(rope.embed(x), x) and rope.abs_pos is None
    wide = ICLDecoder(D, 4, d_model=D + 4, pos="rope", embedding="concat")
    assert torch.equal(wide.embed(x)[..., :4], torch.zeros(S, T, 4))  # extra channels: zero
    assert ICLDecoder(D, 4, pos="hybrid", embedding="concat", max_positions=slots).d_model == 22
    assert wide(x).shape == ape(x).shape == (S, 4)
    with pytest.raises(ValueError, match="at least 21"):
        ICLDecoder(D, 4, d_model=16, pos="ape", embedding="concat", max_positions=slots)
    with pytest.raises(ValueError, match="unknown embedding"):
        ICLDecoder(D, 4, embedding="learned")
