"""The package contract, generated over every installed paper package.

``ci/test.sh`` runs this file once, in an environment with every workspace member
installed: pytest parametrizes over ``discover_papers()`` x ``package_checks(paper)``
(river's ``check_estimator`` is the model), plus the start-up budget of each command line.
"""

from __future__ import annotations

import pytest
from icml26_shared.contract import package_checks, startup_check
from icml26_shared.paper import discover_papers

PAPERS = discover_papers()
CASES = [
    pytest.param(paper, check, id=f"{name}::{check_name}")
    for name, paper in PAPERS.items()
    for check_name, check in package_checks(paper)
]


def test_registry_is_not_empty():
    assert len(PAPERS) >= 1, "no icml26 paper package is installed"


@pytest.mark.parametrize("paper,check", CASES)
def test_package_contract(paper, check, tmp_path):
    check(tmp_path)


@pytest.mark.parametrize("paper", list(PAPERS.values()), ids=list(PAPERS))
def test_startup_budget(paper):
    startup_check(paper)
