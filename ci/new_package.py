#!/usr/bin/env python3
"""Create the skeleton of a new paper package: ``python ci/new_package.py NAME``.

Writes ``packages/NAME/`` with the workspace conventions (see the README's
"Adding a package"). Only files that do not exist yet are written, so running
it again, or after work has started, never overwrites anything.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

PYPROJECT = """\
[project]
name = "{name}"
version = "0.1.0"
description = "{summary}"
readme = "README.md"
requires-python = ">=3.11"
license = "MIT"
dependencies = [
    "icml26-shared>=0.2,<0.3",
    "torch>=2.4,<3",
    "lightning>=2.4,<3",
    "torchmetrics>=1.4,<2",
    "numpy>=1.26",
]

[project.optional-dependencies]
# Heavy external anchors for `{name} reproduce`; tests skip them when absent.
bench = []

[project.scripts]
{name} = "{module}.cli:main"

[project.entry-points."icml26.packages"]
{name} = "{module}.paper:PAPER"

[project.urls]
Paper = "{url}"

[tool.uv.sources]
icml26-shared = {{ workspace = true }}

[build-system]
requires = ["hatchling>=1.26,<2"]
build-backend = "hatchling.build"

[tool.hatch.build.targets.wheel]
packages = ["src/{module}"]

# configs/ ships inside the wheel as package data: `--config <package>:<file>.yaml` finds it from any folder
[tool.hatch.build.targets.wheel.force-include]
"configs" = "{module}/configs"
"""

INIT = '''\
"""{title}.

{summary}
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("{name}")
except PackageNotFoundError:  # running from a source tree without installing
    __version__ = "0.0.0"
'''

PAPER = '''\
"""Metadata of the {name} package for the ``icml26`` umbrella command (imports nothing heavy)."""

from icml26_shared.paper import Paper

PAPER = Paper(
    name="{name}",
    title="{title}",
    cli="{name}",
    import_name="{module}",
    summary="{summary}",
    url="{url}",
    reproduce="{module}.reproduce:EXPERIMENT",
)
'''

CLI = '''\
"""Command line of {name}: ``{name} --help``."""

from __future__ import annotations

from collections.abc import Sequence

from icml26_shared.cli import PaperCLI

from .paper import PAPER


def build_cli() -> PaperCLI:
    """The package's CLI; add ``model_class="{module}.lightning:Module"``,
    ``datamodule_class`` and ``commands={{"name": "{module}.module:function"}}`` as strings, so
    that ``{name} --help`` imports nothing heavy."""
    return PaperCLI(PAPER)


def main(args: Sequence[str] | None = None) -> int:
    """Entry point of the ``{name}`` console script."""
    return build_cli().main(args)
'''

REPRODUCE = '''\
"""``{name} reproduce``: the paper's headline comparison at CPU scale, one section per claim.

Sizes live in ``configs/reproduce/{{quick,full,paper}}.yaml``; each section calls the
package's public API.
"""

from __future__ import annotations

from icml26_shared.experiment import Experiment, Section
from icml26_shared.results import Table


def main_section(setting: dict, seed: int) -> Table:
    """The headline comparison (anchors in the same run)."""
    raise NotImplementedError("{name} reproduce is not written yet")


EXPERIMENT = Experiment("{name}", [Section("main", main_section, claim="the paper's headline")])
'''

PRESET = """\
# {name} reproduce --preset {preset}: {what}
sections:
  main: {{}}
"""

PRESETS = {
    "quick": "about a minute on 2 CPU cores",
    "full": "at most about 20 minutes on 2 CPU cores",
    "paper": "the paper's own scale and hyperparameters, for a GPU",
}

TEST_CLI = '''\
"""The {name} command line: package-specific bad input gives one clear line.

The generic checks (help, unknown command, bad configs, start-up time) are the package
contract, run for every package by ci/test_registry.py.
"""

from {module}.cli import main


def test_version(capsys):
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.startswith("{name} ")
'''
README = """\
# {name}

{summary}

Implementation of **{title}** (ICML 2026), {url}.
Part of the [icml26](../../README.md) workspace.

## Install

```bash
pip install {name}
```

torch comes from PyPI (a CUDA build on Linux). For a CPU-only machine, install
the CPU build of torch first (`pip install torch --index-url https://download.pytorch.org/whl/cpu`,
or `uv pip install torch --torch-backend=cpu`), then `pip install {name}`.

## Quickstart

```bash
{name} --help
{name} configs                        # the shipped configs; use one as {name}:<file>
{name} reproduce --preset quick --out {name}-quick
```

## On your own data

## Results

Tables are copied from `results/quick/results.md` by `icml26 readme --write`
(blocks `<!-- results: quick/main -->` ... `<!-- /results -->`); not run yet.

## Differences from the paper

## Citation

See `CITATION.cff`.
"""

CHANGELOG = """\
# Changelog

All notable changes to `{name}` are documented here. The format follows
[Keep a Changelog](https://keepachangelog.com/en/1.1.0/) and the package uses
[Semantic Versioning](https://semver.org/).

## [Unreleased]

## [0.1.0]

### Added

- First release.
"""

CITATION = """\
cff-version: 1.2.0
message: "If you use this package, please cite the paper below."
title: "{name}: {title}"
type: software
authors:
  - name: "icml26 contributors"
version: 0.1.0
preferred-citation:
  type: conference-paper
  title: "{title}"
  authors:
    - name: "The paper's authors"
  conference:
    name: "International Conference on Machine Learning (ICML)"
  year: 2026
  url: "{url}"
"""


def files_for(name: str, title: str, summary: str, url: str) -> dict[str, str]:
    module = name.replace("-", "_")
    fmt = {"name": name, "module": module, "title": title, "summary": summary, "url": url}
    return {
        "pyproject.toml": PYPROJECT.format(**fmt),
        f"src/{module}/__init__.py": INIT.format(**fmt),
        f"src/{module}/paper.py": PAPER.format(**fmt),
        f"src/{module}/cli.py": CLI.format(**fmt),
        f"src/{module}/reproduce.py": REPRODUCE.format(**fmt),
        "tests/test_cli.py": TEST_CLI.format(**fmt),
        **{
            f"configs/reproduce/{preset}.yaml": PRESET.format(preset=preset, what=what, **fmt)
            for preset, what in PRESETS.items()
        },
        "README.md": README.format(**fmt),
        "CHANGELOG.md": CHANGELOG.format(**fmt),
        "CITATION.cff": CITATION.format(**fmt),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("name", help="distribution name, lower case with dashes (e.g. watersic)")
    parser.add_argument("--title", default="TODO: paper title")
    parser.add_argument("--summary", default="TODO: one line")
    parser.add_argument("--url", default="https://icml.cc/virtual/2026")
    ns = parser.parse_args(argv)
    if not re.fullmatch(r"[a-z][a-z0-9]*(-[a-z0-9]+)*", ns.name):
        parser.error(f"{ns.name!r} is not a lower-case dashed distribution name")
    for value in (ns.title, ns.summary, ns.url):
        if '"' in value or "\\" in value:
            parser.error("title, summary and url may not contain double quotes or backslashes")
    base = ROOT / "packages" / ns.name
    written = []
    for rel, text in files_for(ns.name, ns.title, ns.summary, ns.url).items():
        path = base / rel
        if path.exists():
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        written.append(rel)
    for rel in written:
        print(f"created packages/{ns.name}/{rel}")
    if not written:
        print(f"packages/{ns.name}: every file exists already; nothing written")
    print("next: uv lock && uv sync --all-packages, then fill in the paper's modules")
    return 0


if __name__ == "__main__":
    sys.exit(main())
