"""README result blocks are checked against, and written from, the committed results.md."""

import pytest
from icml26_shared import readme, umbrella
from icml26_shared.results import Report, Table


@pytest.fixture
def pkg(tmp_path):
    root = tmp_path / "packages" / "toy"
    report = Report("toy", root / "results" / "quick")
    a, b = Table("First", ["x"]), Table("Second", ["y"])
    a.add_row(x=0.125)
    b.add_row(y=2)
    section = report.add_section("main", claim="x is small", tables=[a, b], notes=["A note."])
    report.out_dir.mkdir(parents=True)
    (report.out_dir / "fig.png").write_bytes(b"png")
    section.figures.append("fig.png")
    report.write()
    text = "# toy\n\nIntro.\n\n<!-- results: quick/main -->\n<!-- /results -->\n\n"
    text += "Only the second table:\n\n<!-- results: quick/main#2 -->\n<!-- /results -->\n"
    (root / "README.md").write_text(text)
    return root


def test_write_then_check(pkg, capsys, monkeypatch):
    path = pkg / "README.md"
    assert readme.check(path)  # empty blocks differ
    assert readme.write(path) == 2
    text = path.read_text()
    assert "| 0.125 |" in text and "![fig](results/quick/fig.png)" in text
    assert "Claim: x is small" in text and text.count("### Second") == 2
    assert readme.check(path) == []
    assert readme.write(path) == 0  # idempotent
    monkeypatch.chdir(pkg.parent.parent)
    assert umbrella.main(["readme", "--check"]) == 0
    assert "2 block(s) in 1 README file(s) match" in capsys.readouterr().out


def test_check_fails_when_a_number_is_edited_by_hand(pkg, capsys):
    path = pkg / "README.md"
    readme.write(path)
    path.write_text(path.read_text().replace("| 0.125 |", "| 0.126 |"))
    problems = readme.check(path)
    assert len(problems) == 1 and "'| 0.126 |'" in problems[0] and "'| 0.125 |'" in problems[0]
    assert umbrella.main(["readme", "--check", str(path)]) == 1
    assert "differs from its results.md" in capsys.readouterr().err


@pytest.mark.parametrize(
    "marker,msg",
    [
        ("quick/nope", "has no section 'nope'"),
        ("full/main", "does not exist"),
        ("quick/main#3", "has 2 table(s)"),
        ("main", "must be 'RUN/SECTION"),
    ],
)
def test_bad_markers_are_named(pkg, marker, msg):
    path = pkg / "README.md"
    path.write_text(f"<!-- results: {marker} -->\n<!-- /results -->\n")
    problems = readme.check(path)
    assert len(problems) == 1 and msg in problems[0]


def test_unpaired_markers(pkg):
    path = pkg / "README.md"
    path.write_text("<!-- results: quick/main -->\ntext\n")
    assert "never closed" in readme.check(path)[0]
    path.write_text("<!-- /results -->\n")
    assert "without an opening" in readme.check(path)[0]
