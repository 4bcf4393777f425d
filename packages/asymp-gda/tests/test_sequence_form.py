"""Kuhn poker in sequence form: treeplex constraints, LP value, OpenSpiel agreement."""

import pytest
import torch

pyspiel = pytest.importorskip("pyspiel")

from asymp_gda.dilated_gda import asymp_dgda  # noqa: E402
from asymp_gda.sequence_form import SequenceFormGame  # noqa: E402
from open_spiel.python.algorithms import exploitability  # noqa: E402


@pytest.fixture(scope="module")
def kuhn():
    return SequenceFormGame.from_openspiel("kuhn_poker")


def test_kuhn_value_is_minus_one_eighteenth_for_player_0(kuhn):
    assert abs(kuhn.value - 1 / 18) < 1e-9  # x player's loss = -(-1/18)


def test_dgda_iterate_satisfies_sequence_form_constraints_and_matches_openspiel(kuhn):
    tr = asymp_dgda(kuhn, mu=0.02, eta=3.0, iterations=300, side="both")
    for tp, b in ((kuhn.tx, tr.x), (kuhn.ty, tr.y)):
        E, e = tp.constraints()
        x = tp.realization(b)[0]
        assert torch.allclose(E @ x, e, atol=1e-12)
        assert (x >= 0).all()
    ours = float(kuhn.nash_conv(tr.x, tr.y)[0])
    theirs = exploitability.nash_conv(kuhn.openspiel, kuhn.to_policy(tr.x, tr.y))
    assert abs(ours - theirs) < 1e-9
    assert ours < 1e-3
    assert ours < float(tr.curve("nash_conv")[0, 0]) / 100


def test_uniform_policy_nash_conv_matches_openspiel(kuhn):
    bx, by = kuhn.tx.uniform(), kuhn.ty.uniform()
    theirs = exploitability.nash_conv(kuhn.openspiel, kuhn.to_policy(bx, by))
    assert abs(float(kuhn.nash_conv(bx, by)[0]) - theirs) < 1e-9


def test_unknown_and_unsupported_games_rejected():
    with pytest.raises(ValueError, match="unknown OpenSpiel game"):
        SequenceFormGame.from_openspiel("no_such_game")
    with pytest.raises(ValueError, match="zero-sum"):
        SequenceFormGame.from_openspiel("kuhn_poker", players=3)
