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


def test_shrinkage_table_starts_at_no_change_and_uses_training_data_only():
    from ou_ident.baselines import no_change
    from ou_ident.prediction import gaussian_w2
    from ou_ident.sachs import FRACTIONS, loeo_fraction, sachs_shrinkage_table

    table = sachs_shrinkage_table(["degradation"])
    rows = {r["held out"]: r for r in table.rows}
    data, _ = sachs_environments("degradation")
    held = data[4]  # U0126
    train = [d for i, d in enumerate(data) if i != 4]
    m, S = no_change(train)
    row = rows[held.name]
    assert row["no change W2"] == pytest.approx(gaussian_w2(m, S, held.mean, held.cov))
    # the CV fraction is a function of the training environments alone
    frac, curve = loeo_fraction(train, "degradation")
    assert row["CV fraction"] == frac and frac in FRACTIONS
    # fraction 0 is "no change" exactly; the oracle can only be at least as good
    assert row["oracle: W2 at best fraction"] <= row["no change W2"] + 1e-12
    assert row["CV-shrunk W2"] >= row["oracle: W2 at best fraction"] - 1e-12
    assert 0.0 < row["mean's share of no change W2^2"] <= 1.0
