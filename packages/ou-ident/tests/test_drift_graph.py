"""Drift graph, SCCs, condensation and the single-root condition."""

import numpy as np
import pytest
from ou_ident.drift_graph import DriftGraph
from ou_ident.synthetic import random_scc_graph


def test_components_in_topological_order():
    mask = np.eye(5, dtype=bool)
    mask[1, 0] = mask[0, 1] = True  # SCC {0,1}
    mask[2, 1] = True  # {0,1} -> {2}
    mask[3, 2] = mask[4, 3] = mask[3, 4] = True  # {2} -> {3,4}
    g = DriftGraph(mask)
    assert g.components == [(0, 1), (2,), (3, 4)]
    assert g.roots == [(0, 1)]
    assert g.parents((3, 4)) == {2}
    g.check_single_root()


def test_several_roots_and_disconnected():
    two_roots = np.eye(3, dtype=bool)
    two_roots[2, 0] = two_roots[2, 1] = True
    with pytest.raises(ValueError, match="2 roots"):
        DriftGraph(two_roots).check_single_root()
    with pytest.raises(ValueError, match="disconnected"):
        DriftGraph(np.eye(3, dtype=bool)).check_single_root()


@pytest.mark.parametrize("seed", range(5))
def test_generator_single_root(seed):
    mask = random_scc_graph(20, seed=seed)
    g = DriftGraph(mask)
    assert g.is_connected() and len(g.roots) == 1
    assert all(2 <= len(c) <= 8 for c in g.components[:-1])
