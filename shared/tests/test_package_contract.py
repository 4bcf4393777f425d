"""The package contract generated over installed packages, on a fake package in a source tree."""

from __future__ import annotations

import sys
import textwrap

import pytest
from icml26_shared.contract import (
    _import_graph,
    check_package,
    find_import_cycle,
    package_checks,
    startup_check,
)
from icml26_shared.paper import discover_papers

CLI = '''
from pathlib import Path

from icml26_shared.cli import PaperCLI, UsageError
from icml26_shared.paper import Paper

PAPER = Paper(name="{name}", title="Fake", cli="{name}", import_name="{mod}",
              reproduce="{mod}.reproduce:EXPERIMENT")


def scale(factor: float = 2.0, checkpoint: Path | None = None) -> None:
    """Scale a number."""
    if checkpoint is not None:
        {ckpt}
    print(factor * 2)


def build_cli():
    return PaperCLI(PAPER, commands={{"scale": "{mod}.cli:scale"}})


def main(args=None):
    return build_cli().main(args)
'''

REPRODUCE = """
from icml26_shared.experiment import Experiment, Section
from icml26_shared.results import Table


def one(setting, seed):
    t = Table("T", ["n"]); t.add_row(n=setting["n"]); return t


EXPERIMENT = Experiment("{name}", [Section("one", one)])
"""

GOOD_CKPT = 'raise UsageError(f"cannot read checkpoint {checkpoint}")'
BAD_CKPT = "import pickle; pickle.loads(checkpoint.read_bytes())"


def install(
    site,
    name: str,
    ckpt: str = GOOD_CKPT,
    extra: dict[str, str] | None = None,
    readme_bash: str = "echo made > made.txt && test -s made.txt",
):
    mod = name.replace("-", "_")
    root = site / name
    pkg = root / "src" / mod
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "cli.py").write_text(CLI.format(name=name, mod=mod, ckpt=ckpt))
    (pkg / "reproduce.py").write_text(REPRODUCE.format(name=name))
    for file, text in (extra or {}).items():
        (pkg / file).write_text(text)
    (root / "configs" / "reproduce").mkdir(parents=True)
    for preset in ("quick", "full", "paper"):
        (root / "configs" / "reproduce" / f"{preset}.yaml").write_text("n: 1\n")
    (root / "configs" / "scale-small.yaml").write_text("factor: 3.0\n")
    (root / "README.md").write_text(
        "# fake\n\n<!-- run -->\n```python\nprint(1 + 1)\n```\n\n```python\nraise SystemExit\n```\n"
        + f"\n<!-- run -->\n```bash\n{readme_bash}\n```\n"
    )
    info = site / f"{mod}-0.1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1.0\n")
    (info / "entry_points.txt").write_text(
        textwrap.dedent(f"""\
        [icml26.packages]
        {name} = {mod}.cli:PAPER

        [console_scripts]
        {name} = {mod}.cli:main
        """)
    )
    sys.path.insert(0, str(root / "src"))
    return root


@pytest.fixture
def site(tmp_path, monkeypatch):
    site = tmp_path / "site"
    site.mkdir()
    monkeypatch.syspath_prepend(str(site))
    saved = list(sys.path)
    yield site
    sys.path[:] = saved
    for mod in [m for m in sys.modules if m.startswith("fake_")]:
        del sys.modules[mod]


def test_good_package_passes_every_check(site, tmp_path):
    install(site, "fake-good")
    paper = discover_papers(broken={})["fake-good"]
    names = [name for name, _ in package_checks(paper)]
    assert "scale --config fake-good:scale-small.yaml --print_config" in names
    readme_checks = [n for n in names if n.startswith("README")]
    assert readme_checks == [
        "README python block at line 4 runs",
        "README bash block at line 13 runs",
    ]  # only the blocks marked <!-- run -->
    check_package(paper, tmp_path / "checks")
    startup_check(paper, budget_s=5.0)


def test_a_failing_readme_command_fails_the_contract(site, tmp_path):
    install(site, "fake-readme", readme_bash="echo made > made.txt\nfalse")
    paper = discover_papers(broken={})["fake-readme"]
    with pytest.raises(AssertionError, match="README bash block at line 13 runs: .*exit 1"):
        check_package(paper, tmp_path / "checks")


def test_traceback_on_a_corrupt_checkpoint_fails_the_contract(site, tmp_path):
    install(site, "fake-bad", ckpt=BAD_CKPT)
    paper = discover_papers(broken={})["fake-bad"]
    with pytest.raises(AssertionError, match="corrupt checkpoint"):
        check_package(paper, tmp_path / "checks")


def test_import_from_reproduce_and_cycles_fail(site, tmp_path):
    root = install(
        site,
        "fake-cycle",
        extra={"a.py": "from . import b\n", "b.py": "from .a import x\n",
               "c.py": "from .reproduce import one\n"},
    )  # fmt: skip
    graph = _import_graph(root, "fake_cycle")
    assert graph["fake_cycle.c"] == {"fake_cycle.reproduce"}
    assert find_import_cycle(graph) == ["fake_cycle.a", "fake_cycle.b", "fake_cycle.a"]
    paper = discover_papers(broken={})["fake-cycle"]
    with pytest.raises(AssertionError, match=r"fake_cycle.c import\(s\) from"):
        check_package(paper, tmp_path / "checks")
