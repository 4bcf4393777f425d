"""The reproduce contract: ``<pkg> reproduce [--quick] [--out DIR] [--seed N]``.

A paper package provides ``reproduce(out: Path, quick: bool = False, seed: int = 0) -> Report``
(named by :attr:`Paper.reproduce`). It runs the paper's headline comparison,
anchors included, on data it generates or ships, with no network; ``quick``
takes about a minute on a 2-core CPU, the full run at most about 20 minutes.
:func:`run_reproduce` wraps it: it checks the output folder before any work,
seeds every generator, times the run, records the environment, and writes
``results.json`` / ``results.md`` atomically.

``python -m icml26_shared.reproduce NAME --out DIR [--quick]`` runs one
installed package in a fresh process; the umbrella command uses it.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from .paper import Paper, discover_papers
from .results import Report, ensure_writable_dir, environment_metadata


def seed_everything(seed: int) -> None:
    """Seed Python, NumPy and torch (and CUDA when present) with ``seed``."""
    import random

    import numpy as np

    random.seed(seed)
    np.random.seed(seed % 2**32)
    try:
        import torch
    except ImportError:  # pragma: no cover - torch is a dependency of the workspace
        return
    torch.manual_seed(seed)


def run_reproduce(paper: Paper, out: str | Path, quick: bool = False, seed: int = 0) -> Report:
    """Run ``paper``'s reproduce function and write its report into ``out``."""
    out = ensure_writable_dir(out)
    fn = paper.load_reproduce()
    seed_everything(seed)
    start = time.perf_counter()
    report = fn(out=out, quick=quick, seed=seed)
    wall = time.perf_counter() - start
    if not isinstance(report, Report):
        raise TypeError(
            f"{paper.reproduce} returned {type(report).__name__}; it must return an icml26_shared Report"
        )
    if report.out_dir.resolve() != out.resolve():
        raise ValueError(
            f"{paper.reproduce} wrote its report to {report.out_dir}, not to --out {out}"
        )
    report.metadata.update(environment_metadata([paper.name]))
    report.metadata.update(
        package=paper.name,
        version=paper.version,
        seed=seed,
        quick=quick,
        wall_time_s=round(wall, 2),
    )
    report.write()
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m icml26_shared.reproduce", description="Run one paper package's reproduce."
    )
    parser.add_argument("name")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--seed", type=int, default=0)
    ns = parser.parse_args(argv)
    papers = discover_papers(broken={})
    if ns.name not in papers:
        parser.error(f"unknown package {ns.name!r}; installed: {', '.join(papers) or 'none'}")
    try:
        report = run_reproduce(papers[ns.name], ns.out, quick=ns.quick, seed=ns.seed)
    except (OSError, ValueError) as exc:
        print(f"{ns.name} reproduce: error: {exc}", file=sys.stderr)
        return 2
    print(report.to_markdown())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
