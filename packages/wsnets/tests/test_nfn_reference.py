"""Side by side with the nfn package (Zhou et al.): layer spans and the nfn meta-networks."""

import pytest
import torch

pytest.importorskip("nfn")

from wsnets.nfn_reference import (  # noqa: E402
    NFNNet,
    hnp_missing_term,
    nfn_span,
    ours_span,
    span_residual,
    span_table,
)
from wsnets.weight_space import WeightSpace  # noqa: E402


@pytest.mark.parametrize("arch", [[2, 3, 4, 2], [2, 3, 2], [3, 2, 4, 3, 2]])
def test_np_spans_coincide_both_directions(arch):
    ours, theirs = ours_span(arch, ()), nfn_span(arch, "np")
    assert span_residual(ours, theirs) < 1e-8 and span_residual(theirs, ours) < 1e-8


@pytest.mark.parametrize("arch", [[2, 3, 4, 2], [2, 3, 2], [3, 2, 4, 3, 2]])
def test_hnp_span_is_ours_minus_one_term(arch):
    ours, hnp = ours_span(arch, None), nfn_span(arch, "hnp")
    assert span_residual(ours, hnp) < 1e-8  # every HNPLinear map is one of ours
    assert span_residual(hnp, ours) > 1e-3  # ... but not conversely
    full = torch.cat([hnp, hnp_missing_term(arch)], dim=1)
    assert span_residual(ours, full) < 1e-8 and span_residual(full, ours) < 1e-8
    rank = torch.linalg.matrix_rank
    assert int(rank(ours)) - int(rank(hnp)) == arch[-1]  # exactly d_L dimensions missing


def test_span_check_detects_a_removed_term():
    """The check can fail: drop our NP layer's columns of one parameter block."""
    arch = [2, 3, 4, 2]
    ours, theirs = ours_span(arch, ()), nfn_span(arch, "np")
    assert span_residual(ours[:, 4:], theirs) > 1e-3


def test_span_table_rows():
    rows = span_table([[2, 3, 2]]).rows
    assert len(rows) == 3
    np_row, hnp_row, fixed_row = rows
    assert np_row["residual ours in nfn"] < 1e-8 and np_row["residual nfn in ours"] < 1e-8
    assert hnp_row["rank ours"] == hnp_row["rank nfn"] + 2
    assert fixed_row["residual ours in nfn"] < 1e-8


@pytest.mark.parametrize("kind", ["hnp", "np_pe", "nft"])
@pytest.mark.parametrize("head", ["invariant", "equivariant"])
def test_nfn_nets_are_g_a_symmetric(kind, head):
    torch.manual_seed(0)
    net = NFNNet([2, 4, 4, 1], kind, hidden=4, depth=2, head=head, out_dim=3).eval()
    v = WeightSpace.random([2, 4, 4, 1], batch=3)
    tau = v.random_permutation(torch.Generator().manual_seed(1))
    with torch.no_grad():
        a, b = net(v.permute(tau)), net(v)
    if head == "equivariant":
        a, b = a.flatten(), b.permute(tau).flatten()
    assert torch.allclose(a, b, atol=1e-5)
