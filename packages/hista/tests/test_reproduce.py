"""The reproduce run (slow: about half a minute quick, a few minutes full)."""

import pytest
from hista.reproduce import reproduce


@pytest.mark.slow
def test_quick_reproduce_writes_tables_and_orders_estimators(tmp_path):
    report = reproduce(tmp_path, quick=True)
    paths = report.write()
    assert {p.name for p in paths} >= {"results.json", "results.md"}
    assert (tmp_path / "sveb_mae.png").is_file()
    teacher = {r["estimator"]: r for r in report.tables[1].rows}
    assert teacher["oracle (exact value)"]["MAE vs exact"] == 0.0
    assert teacher["Numca"]["MAE vs exact"] < teacher["group mean (GRPO)"]["MAE vs exact"]
    assert teacher["group mean (GRPO)"]["within-problem std"] == 0.0
