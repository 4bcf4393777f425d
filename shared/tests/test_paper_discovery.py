"""Entry-point discovery and the umbrella command, on fake installed packages."""

from __future__ import annotations

import sys
import textwrap

import pytest
from icml26_shared import umbrella
from icml26_shared.paper import Paper, discover_papers

TOY = """
from pathlib import Path

from icml26_shared.experiment import Experiment, Section, SectionResult
from icml26_shared.paper import Paper
from icml26_shared.results import Table

PAPER = Paper(name="{name}", title="Toy paper {name}", cli="{name}", import_name="{mod}",
              summary="toy", reproduce="{mod}:EXPERIMENT")
NOT_A_PAPER = 42


def toy_section(setting, seed):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if "{name}" == "toy-broken":
        raise RuntimeError("this toy package always fails")
    t = Table("Toy table", ["scale", "seed", "value"])
    t.add_row(scale=setting["scale"], seed=seed, value=1.5)
    fig, ax = plt.subplots()
    ax.plot([0, 1])
    return SectionResult(tables=[t], figures={{"toy-plot.png": fig}})


EXPERIMENT = Experiment("{name}", [Section("toy", toy_section)],
                        config_dir=Path(__file__).parent / "{mod}_presets")
"""


def install_fake(tmp_path, name: str, value: str | None = None) -> None:
    """Write a module and a ``.dist-info`` with an ``icml26.packages`` entry point."""
    mod = name.replace("-", "_")
    (tmp_path / f"{mod}.py").write_text(TOY.format(name=name, mod=mod))
    presets = tmp_path / f"{mod}_presets"
    presets.mkdir()
    for preset in ("quick", "full", "paper"):
        (presets / f"{preset}.yaml").write_text(f"scale: {preset}\n")
    info = tmp_path / f"{mod}-0.3.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.3.1\n")
    (info / "entry_points.txt").write_text(
        textwrap.dedent(f"""\
        [icml26.packages]
        {name} = {value or mod + ":PAPER"}
        """)
    )


@pytest.fixture
def fake_site(tmp_path, monkeypatch):
    site = tmp_path / "site"
    site.mkdir()
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setenv("PYTHONPATH", str(site) + ":" + ":".join(sys.path))
    return site


def test_discovery_finds_fake_package(fake_site):
    install_fake(fake_site, "toy-a")
    papers = discover_papers(broken={})  # other packages of the workspace may be half-installed
    assert "toy-a" in papers
    paper = papers["toy-a"]
    assert isinstance(paper, Paper)
    assert paper.version == "0.3.1"
    assert paper.reproduce_target == ("toy_a", "EXPERIMENT")


def test_broken_entry_points_are_reported(fake_site):
    install_fake(fake_site, "toy-b", value="toy_b:NOT_A_PAPER")
    install_fake(fake_site, "toy-c", value="no_such_module:PAPER")
    broken: dict[str, str] = {}
    papers = discover_papers(broken)
    assert "toy-b" not in papers and "toy-c" not in papers
    assert "not a Paper" in broken["toy-b"] and "failed to load" in broken["toy-c"]
    with pytest.raises(RuntimeError, match="toy-"):
        discover_papers()


def test_bad_reproduce_target():
    with pytest.raises(ValueError, match="module:function"):
        _ = Paper(
            name="x", title="x", cli="x", import_name="x", reproduce="nocolon"
        ).reproduce_target


def test_umbrella_list(fake_site, capsys):
    install_fake(fake_site, "toy-a")
    assert umbrella.main(["list"]) == 0
    out = capsys.readouterr().out
    assert "| toy-a | 0.3.1 | toy-a | Toy paper toy-a |" in out


def test_umbrella_unknown_name_exits_2(fake_site, capsys):
    install_fake(fake_site, "toy-a")
    assert umbrella.main(["reproduce", "nope", "--out", str(fake_site / "o")]) == 2
    err = capsys.readouterr().err
    assert "unknown package(s) nope" in err and "toy-a" in err
    assert umbrella.main(["reproduce"]) == 2
    assert umbrella.main(["reproduce", "toy-a", "--all"]) == 2


def test_umbrella_reproduce_writes_report(fake_site, tmp_path, capsys):
    install_fake(fake_site, "toy-a")
    install_fake(fake_site, "toy-broken")
    out = tmp_path / "out"
    code = umbrella.main(["reproduce", "toy-a", "toy-broken", "--quick", "--out", str(out)])
    assert code == 1  # one package failed, the other still ran
    report = (out / "REPORT.md").read_text()
    assert "| toy-a | 0.3.1 | ok |" in report
    assert "| toy-broken | 0.3.1 | failed (exit 1) |" in report
    assert "#### Toy table" in report and "| quick | 0 | 1.5 |" in report
    assert "## toy-a" in report and "### toy" in report  # package, section, table levels
    assert "![toy-plot](toy-a/toy-plot.png)" in report
    assert (out / "toy-a" / "toy-plot.png").exists()
    assert (out / "toy-a" / "results.json").exists()


def test_umbrella_with_no_packages(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(umbrella, "discover_papers", lambda broken=None: {})
    assert umbrella.main(["list"]) == 0
    assert "No icml26 paper packages" in capsys.readouterr().out
    assert umbrella.main(["reproduce", "--all", "--out", str(tmp_path / "o")]) == 0
    assert "No icml26 paper packages" in (tmp_path / "o" / "REPORT.md").read_text()


def test_umbrella_unwritable_out(fake_site, tmp_path, capsys):
    install_fake(fake_site, "toy-a")
    blocker = tmp_path / "file"
    blocker.write_text("x")
    assert umbrella.main(["reproduce", "toy-a", "--out", str(blocker / "sub")]) == 2
    assert "not writable" in capsys.readouterr().err
