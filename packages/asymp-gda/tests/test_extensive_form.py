"""The extensive-form suite: dilated entropy prox, DOGDA/DOMWU/DMWU, OpenSpiel CFR anchors."""

import pytest
import torch

pyspiel = pytest.importorskip("pyspiel")

from asymp_gda.cfr_anchors import cfr_anchor  # noqa: E402
from asymp_gda.dilated_baselines import DILATED_METHODS, dilated_mirror_descent  # noqa: E402
from asymp_gda.sequence_form import SequenceFormGame, Treeplex  # noqa: E402
from open_spiel.python.algorithms import exploitability  # noqa: E402

GOOFSPIEL3 = (
    "turn_based_simultaneous_game(game=goofspiel(num_cards=3,imp_info=True,"
    "points_order=descending))"
)


@pytest.fixture(scope="module")
def kuhn():
    return SequenceFormGame.from_openspiel("kuhn_poker")


def _dilated_entropy(t: Treeplex, b: torch.Tensor) -> torch.Tensor:
    x = t.realization(b)
    total = torch.zeros(b.shape[0], dtype=torch.float64)
    for lv in t.levels:
        bb = torch.where(lv.mask, b[:, lv.seqs.clamp_max(t.n_seq - 1)], 1.0)
        total += (x[:, lv.parent] * (torch.where(lv.mask, bb * bb.log(), 0.0)).sum(-1)).sum(-1)
    return total


def test_entropy_gradient_matches_autograd_and_prox_is_optimal():
    t = Treeplex.from_infosets(9, [(0, [1, 2]), (1, [3, 4]), (1, [5, 6]), (2, [7, 8])])
    gen = torch.Generator().manual_seed(0)
    b = t.entropy_prox(torch.randn(1, 9, generator=gen, dtype=torch.float64))
    # gradient of psi(x) = sum_s x_s log(x_s / x_parent) w.r.t. the realisation plan x
    x = t.realization(b).clone().requires_grad_(True)
    parent = torch.tensor([0, 0, 0, 1, 1, 1, 1, 2, 2])
    psi = (x[0, 1:] * torch.log(x[0, 1:] / x[0, parent[1:]])).sum()
    psi.backward()
    assert torch.allclose(t.entropy_gradient(b)[0, 1:], x.grad[0, 1:], atol=1e-10)
    # prox: no random behavioural strategy does better on <c, x> + psi(x)
    c = torch.randn(1, 9, generator=gen, dtype=torch.float64)
    best = t.entropy_prox(c)

    def objective(bb):
        return (c * t.realization(bb)).sum(-1) + _dilated_entropy(t, bb)

    trials = t.entropy_prox(torch.randn(200, 9, generator=gen, dtype=torch.float64) * 3)
    assert bool((objective(trials) >= objective(best) - 1e-12).all())


@pytest.mark.parametrize("method", DILATED_METHODS)
def test_dilated_methods_stay_on_the_treeplex_and_agree_with_openspiel(kuhn, method):
    tr = dilated_mirror_descent(kuhn, method, eta=1.0, iterations=150)
    for tp, b in ((kuhn.tx, tr.x), (kuhn.ty, tr.y)):
        E, e = tp.constraints()
        assert torch.allclose(E @ tp.realization(b)[0], e, atol=1e-12)
    ours = float(tr.final()[0])
    theirs = exploitability.nash_conv(kuhn.openspiel, kuhn.to_policy(tr.x, tr.y))
    assert abs(ours - theirs) < 1e-9


def test_dogda_last_iterate_converges_on_kuhn(kuhn):
    tr = dilated_mirror_descent(kuhn, "DOGDA", eta=1.0, iterations=600)
    assert float(tr.final()[0]) < 1e-6


@pytest.mark.parametrize("variant", ["CFR+", "DCFR", "LCFR"])
def test_cfr_anchors_average_policy_improves(kuhn, variant):
    tr = cfr_anchor(kuhn, variant, iterations=60)
    nc = tr.curve("nash_conv")[:, 0]
    assert float(nc[-1]) < 0.02 < float(nc[0])


def test_parameterised_openspiel_strings_load():
    g = SequenceFormGame.from_openspiel(GOOFSPIEL3)
    assert abs(g.value) < 1e-9  # symmetric game
    ld = SequenceFormGame.from_openspiel("liars_dice(dice_sides=2)")
    assert ld.A.shape[0] == ld.tx.n_seq


def test_dilated_value_and_perturbed_gap_closed_forms(kuhn):
    """psi on a hand-computed treeplex; the perturbed gap is >= 0, and 0 at the perturbed
    saddle point (reached by fixed-mu AsymP-DGDA), for both perturbed sides."""
    from asymp_gda.dilated_gda import asymp_dgda_step, dilated_perturbed_gap

    t = Treeplex.from_infosets(5, [(0, [1, 2]), (1, [3, 4])])
    b = torch.tensor([[1.0, 0.25, 0.75, 1.0, 0.0]], dtype=torch.float64)
    # psi = 1 * (0.25^2 + 0.75^2) / 2 + x_1 * (1^2 + 0^2) / 2 = 0.3125 + 0.125
    assert abs(float(t.dilated_value(b)[0]) - 0.4375) < 1e-15
    gen = torch.Generator().manual_seed(1)
    for p in ("x", "y"):
        bx = kuhn.tx.dilated_prox(torch.randn(4, kuhn.tx.n_seq, generator=gen, dtype=torch.float64))
        by = kuhn.ty.dilated_prox(torch.randn(4, kuhn.ty.n_seq, generator=gen, dtype=torch.float64))
        assert bool((dilated_perturbed_gap(kuhn, bx, by, 0.1, p) > 0).all())
        bx, by = kuhn.tx.uniform(), kuhn.ty.uniform()
        for _ in range(800):
            bx, by = asymp_dgda_step(kuhn, bx, by, 0.2, 1.5, perturb=p)
        assert abs(float(dilated_perturbed_gap(kuhn, bx, by, 0.2, p)[0])) < 1e-10


def test_parameter_free_dgda_certifies_without_an_lp(kuhn, monkeypatch):
    """Alg. 1 in sequence form: the reported NashConv is the pair's exact NashConv (ours and
    OpenSpiel's), converged == (NashConv <= eps), and no LP is solved."""
    import scipy.optimize
    from asymp_gda.dilated_gda import parameter_free_dgda

    game = SequenceFormGame.from_openspiel("kuhn_poker")

    def no_lp(*a, **k):
        raise AssertionError("parameter_free_dgda called an LP")

    monkeypatch.setattr(scipy.optimize, "linprog", no_lp)
    tr = parameter_free_dgda(game, eps=1e-5, iterations=3000)
    monkeypatch.undo()
    nc = float(tr.final("nash_conv")[0])
    assert tr.info["converged"] and nc <= 1e-5
    assert abs(float(game.nash_conv(tr.x, tr.y)[0]) - nc) < 1e-12
    os_nc = exploitability.nash_conv(game.openspiel, game.to_policy(tr.x, tr.y))
    assert abs(os_nc - nc) < 1e-9
    assert tr.info["mu_x"] < 0.05  # it had to halve: mu_init is above Kuhn's threshold
    # the certified curve never increases (best pair so far)
    curve = tr.curve("nash_conv")[:, 0]
    assert bool((curve[1:] <= curve[:-1] + 1e-15).all())
    short = parameter_free_dgda(game, eps=1e-12, iterations=40)
    assert not short.info["converged"] and float(short.final("nash_conv")[0]) > 1e-12
