"""``reproduce --quick`` end to end (slow: about a minute) and its settings."""

import json

import pytest
from asymp_gda.cli import main
from asymp_gda.reproduce import SETTINGS


def test_quick_is_smaller_than_full():
    q, f = SETTINGS["quick"], SETTINGS["full"]
    assert q.iterations < f.iterations and max(q.sizes) < max(f.sizes)


@pytest.mark.slow
def test_reproduce_quick_writes_report(tmp_path, capsys):
    assert main(["reproduce", "--quick", "--out", str(tmp_path)]) == 0
    data = json.loads((tmp_path / "results.json").read_text())
    assert len(data["tables"]) == 4 and len(data["figures"]) == 3
    rows = data["tables"][0]["rows"]
    asymp = [r for r in rows if r["method"].startswith("AsymP")]
    symp = [r for r in rows if r["method"] == "SymP-GDA, mu=1"]
    assert all(r["NashConv @ T"] < 1e-10 for r in asymp)
    assert all(r["NashConv @ T"] > 0.05 for r in symp)
