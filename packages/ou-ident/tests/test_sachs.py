"""The Sachs flow-cytometry table from the cdt wheel: labels reconstructed and checked."""

from importlib.metadata import PackageNotFoundError, distribution

import numpy as np
import pytest
from ou_ident.sachs import CONDITIONS, block_boundaries, load_sachs, sachs_environments

try:
    distribution("cdt")
except PackageNotFoundError:
    pytest.skip("the Sachs table ships in the cdt wheel (extra bench)", allow_module_level=True)


def test_change_points_fall_on_the_published_condition_sizes():
    X, labels, names = load_sachs()
    bounds = np.cumsum([n for _, n, _ in CONDITIONS])[:-1]
    found = block_boundaries(X, len(bounds))
    # every published boundary is found within a few cells (the first, between two
    # stimulation-only conditions, is the weakest)
    assert np.max(np.abs(np.array(found) - bounds)) <= 8
    assert len(names) == 11 and labels[0] == "cd3cd28"


def test_environments_target_the_inhibited_proteins():
    data, names = sachs_environments("degradation")
    assert data[0].environment.is_observational
    assert np.allclose(data[0].mean, 0.0, atol=1e-12)  # standardised on the observational cells
    targets = {d.name: names[d.environment.targets[0]] for d in data[1:]}
    assert targets["cd3cd28+u0126"] == "pmek" and targets["cd3cd28+psitect"] == "PIP2"
