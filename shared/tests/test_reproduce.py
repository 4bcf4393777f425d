import pytest
from icml26_shared import reproduce as rep
from icml26_shared.paper import Paper
from icml26_shared.results import Report, Table


def make_paper(monkeypatch, fn):
    paper = Paper(name="toy", title="Toy", cli="toy", import_name="toy", reproduce="toy:reproduce")
    monkeypatch.setattr(Paper, "load_reproduce", lambda self: fn)
    return paper


def test_run_reproduce_adds_metadata_and_writes(monkeypatch, tmp_path):
    import numpy as np

    def fn(out, quick=False, seed=0):
        report = Report("toy", out)
        t = Table("T", ["draw"])
        t.add_row(draw=float(np.random.rand()))  # seeded by the runner
        report.add_table(t)
        return report

    paper = make_paper(monkeypatch, fn)
    a = rep.run_reproduce(paper, tmp_path / "a", quick=True, seed=7)
    b = rep.run_reproduce(paper, tmp_path / "b", quick=True, seed=7)
    assert a.tables[0].rows == b.tables[0].rows
    assert a.metadata["seed"] == 7 and a.metadata["quick"] is True
    assert a.metadata["wall_time_s"] >= 0 and "torch" in a.metadata["versions"]
    assert (tmp_path / "a" / "results.json").exists() and (tmp_path / "a" / "results.md").exists()


def test_run_reproduce_rejects_wrong_returns(monkeypatch, tmp_path):
    paper = make_paper(monkeypatch, lambda out, quick=False, seed=0: {"not": "a report"})
    with pytest.raises(TypeError, match="must return"):
        rep.run_reproduce(paper, tmp_path)
    paper = make_paper(
        monkeypatch, lambda out, quick=False, seed=0: Report("toy", tmp_path / "elsewhere")
    )
    with pytest.raises(ValueError, match="not to --out"):
        rep.run_reproduce(paper, tmp_path / "here")
