"""The reproduce command: presets, overrides, sections, one-line errors, and the runner."""

import json

import pytest
from icml26_shared import reproduce as rep
from icml26_shared.cli import PaperCLI
from icml26_shared.experiment import Experiment, Section, SectionResult
from icml26_shared.paper import Paper
from icml26_shared.results import Report, Table


def draw(setting, seed):
    import numpy as np

    t = Table("Draws", ["seed", "draw", "n"])
    t.add_row(seed=seed, draw=float(np.random.rand()), n=setting["n"])  # seeded by the runner
    return t


def plot(setting, seed):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    ax.plot([0, 1], [0, setting["n"]])
    t = Table("Line", ["slope"])
    t.add_row(slope=setting["n"])
    return SectionResult(tables=[t], figures={"line.png": fig}, notes=["a straight line"])


@pytest.fixture
def toy(tmp_path, monkeypatch):
    presets = tmp_path / "presets"
    presets.mkdir()
    (presets / "quick.yaml").write_text("n: 1\nsections:\n  plot: {n: 2}\n")
    (presets / "full.yaml").write_text("n: 10\n")
    (presets / "paper.yaml").write_text("n: 1000\n")
    experiment = Experiment(
        "toy",
        [Section("draw", draw, claim="draws are seeded"), Section("plot", plot)],
        config_dir=presets,
    )
    paper = Paper(name="toy", title="Toy", cli="toy", import_name="toy", reproduce="toy:E")
    monkeypatch.setattr(Paper, "load_reproduce", lambda self: experiment)
    return paper, experiment


def test_run_reproduce_writes_sections_and_metadata(toy, tmp_path):
    paper, _ = toy
    a = rep.run_reproduce(paper, tmp_path / "a", preset="quick", seed=7, log=False)
    b = rep.run_reproduce(paper, tmp_path / "b", preset="quick", seed=7, log=False)
    assert a.sections["draw"].tables[0].rows == b.sections["draw"].tables[0].rows
    assert a.sections["draw"].tables[0].rows[0]["n"] == 1  # global key
    assert a.sections["plot"].tables[0].rows[0]["slope"] == 2  # section key wins
    assert a.metadata["seed"] == 7 and a.metadata["preset"] == "quick"
    assert "torch" in a.metadata["versions"] and a.metadata["package"] == "toy"
    assert set(a.sections["draw"].timing) == {"wall_s", "cpu_s"}
    md = (tmp_path / "a" / "results.md").read_text()
    assert "## draw" in md and "Claim: draws are seeded" in md and "![line](line.png)" in md
    data = json.loads((tmp_path / "a" / "results.json").read_text())
    assert [s["name"] for s in data["sections"]] == ["draw", "plot"]
    assert (tmp_path / "a" / "line.png").stat().st_mode & 0o044  # readable by others


def test_override_file_and_section_subset_merge(toy, tmp_path):
    paper, _ = toy
    out = tmp_path / "out"
    rep.run_reproduce(paper, out, preset="quick", log=False)
    override = tmp_path / "o.yaml"
    override.write_text("n: 5\n")
    report = rep.run_reproduce(paper, out, "quick", [override], sections=["draw"], log=False)
    assert report.sections["draw"].tables[0].rows[0]["n"] == 5
    assert report.sections["plot"].tables[0].rows[0]["slope"] == 2  # kept from the first run
    assert list(Report.read(out).sections) == ["draw", "plot"]


def test_cli_reproduce_options_and_errors(toy, tmp_path, capsys):
    paper, _ = toy
    cli = PaperCLI(paper)
    out = tmp_path / "r"
    assert cli.main(["reproduce", "--preset", "full", "--out", str(out), "--sections", "draw"]) == 0
    assert Report.read(out).sections["draw"].tables[0].rows[0]["n"] == 10
    assert cli.main(["reproduce", "--list"]) == 0
    assert "draw: draws are seeded" in capsys.readouterr().out
    bad = tmp_path / "bad.yaml"
    bad.write_text("n: [1,\n")
    blocker = tmp_path / "file"
    blocker.write_text("x")
    cases = [
        (["--sections", "nope"], "unknown section 'nope'"),
        (["--preset", "huge"], "invalid choice"),
        (["--config", str(tmp_path / "missing.yaml")], "does not exist"),
        (["--config", str(bad)], "not valid YAML"),
        (["--out", str(blocker / "sub")], "not writable"),
        (["--quick", "--preset", "full"], "contradicts"),
        (["--frobnicate"], "unrecognized arguments"),
    ]
    fresh = tmp_path / "fresh"
    for args, msg in cases:
        assert cli.main(["reproduce", *args, "--out", str(fresh)] if "--out" not in args
                        else ["reproduce", *args]) == 2, args  # fmt: skip
        err = capsys.readouterr().err.strip()
        assert msg in err and len(err.splitlines()) == 1 and "Traceback" not in err, err


def test_cli_reproduce_keeps_existing_results_without_force(toy, tmp_path, capsys):
    paper, _ = toy
    cli = PaperCLI(paper)
    out = tmp_path / "r"
    assert cli.main(["reproduce", "--out", str(out)]) == 0
    before = (out / "results.json").read_bytes()
    capsys.readouterr()
    for extra in ([], ["--sections", "draw"]):
        assert cli.main(["reproduce", "--out", str(out), "--seed", "7", *extra]) == 2
        err = capsys.readouterr().err.strip()
        assert "already holds results" in err and "--force" in err and len(err.splitlines()) == 1
        assert (out / "results.json").read_bytes() == before
    assert cli.main(["reproduce", "--out", str(out), "--seed", "7", "--force"]) == 0
    assert Report.read(out).sections["draw"].tables[0].rows[0]["seed"] == 7


def test_unknown_section_in_preset_fails_before_work(toy, tmp_path):
    paper, experiment = toy
    (experiment.config_dir / "quick.yaml").write_text("sections:\n  nope: {n: 1}\n")
    with pytest.raises(ValueError, match="unknown section 'nope'"):
        rep.run_reproduce(paper, tmp_path / "x", log=False)
    assert not (tmp_path / "x").exists()


def test_reproduce_target_must_be_an_experiment(monkeypatch, tmp_path):
    paper = Paper(name="old", title="Old", cli="old", import_name="old", reproduce="old:f")
    monkeypatch.setattr(Paper, "load_reproduce", lambda self: lambda out, quick=False: None)
    with pytest.raises(TypeError, match="not an icml26_shared Experiment"):
        rep.run_reproduce(paper, tmp_path)
