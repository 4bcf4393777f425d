"""The reproduce command: ``<pkg> reproduce [--preset quick|full|paper] [--config FILE]...
[--sections a,b] [--out DIR] [--seed N] [--force]`` (``--quick`` is ``--preset quick``).

An ``--out`` folder that already holds results (committed ones, say) is left alone unless
``--force`` is given.

A paper package declares its headline comparison as an
:class:`~icml26_shared.experiment.Experiment` (named by :attr:`Paper.reproduce`,
``"pkg.reproduce:EXPERIMENT"``) with presets in ``configs/reproduce/``. :func:`run_reproduce`
checks the output folder before any work, runs the experiment (seeding, timing and writing
atomically after each section), and records the environment with the results.

``python -m icml26_shared.reproduce NAME --out DIR [--preset P]`` runs one installed package
in a fresh process; the umbrella command ``icml26 reproduce`` uses it.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from .experiment import PRESETS, Experiment, SettingError
from .paper import Paper, discover_papers
from .results import Report, ensure_writable_dir, environment_metadata

EXIT_USAGE = 2


def load_experiment(paper: Paper) -> Experiment:
    """Import the package's :class:`Experiment` (``Paper.reproduce``)."""
    target = paper.load_reproduce()
    if not isinstance(target, Experiment):
        raise TypeError(
            f"{paper.reproduce} is a {type(target).__name__}, not an icml26_shared Experiment"
        )
    return target


def run_reproduce(
    paper: Paper,
    out: str | Path,
    preset: str = "quick",
    overrides: Sequence[str | Path] = (),
    sections: Sequence[str] | None = None,
    seed: int = 0,
    log: bool = True,
) -> Report:
    """Run ``paper``'s experiment with ``preset`` (plus override files) into ``out``."""
    experiment = load_experiment(paper)
    experiment.load_setting(preset, overrides)  # a bad preset or override fails before any work
    out = ensure_writable_dir(out)
    from .progress import quiet_lightning

    with quiet_lightning():
        report = experiment.run(out, preset, overrides, sections, seed=seed, log=log)
    report.metadata.update(environment_metadata([paper.name]))
    report.metadata.update(package=paper.name, version=paper.version)
    report.write(order=[s.name for s in experiment.sections])
    return report


class _Parser(argparse.ArgumentParser):
    """argparse that raises instead of printing usage and exiting (for one-line errors)."""

    def error(self, message: str):  # type: ignore[override]
        raise argparse.ArgumentError(None, message)


def _parser(prog: str) -> argparse.ArgumentParser:
    parser = _Parser(
        prog=prog,
        description="Regenerate the paper's headline comparison offline and write results.json, "
        "results.md and PNG figures. Presets live in the package's configs/reproduce/: quick "
        "(about a minute on 2 CPU cores), full (at most about 20 minutes), paper (the paper's "
        "own scale, for a GPU).",
        exit_on_error=False,
    )
    parser.add_argument("--preset", choices=PRESETS, default=None, help="settings preset")
    parser.add_argument("--quick", action="store_true", help="alias of --preset quick")
    parser.add_argument(
        "--config",
        action="append",
        default=[],
        metavar="FILE",
        help="YAML file deep-merged over the preset (repeatable)",
    )
    parser.add_argument(
        "--sections", default=None, help="comma-separated section names (default: all)"
    )
    parser.add_argument(
        "--out", type=Path, default=None, help="output folder (default: results/<pkg>/<preset>)"
    )
    parser.add_argument("--seed", type=int, default=0, help="base seed")
    parser.add_argument(
        "--force",
        action="store_true",
        help="write into an --out folder that already holds results (a section subset is "
        "merged into them, a full run replaces them)",
    )
    parser.add_argument(
        "--list", action="store_true", help="list the sections and their claims, run nothing"
    )
    return parser


def reproduce_command(paper: Paper, argv: Sequence[str]) -> int:
    """``<pkg> reproduce ...``: parse ``argv``, run, print the report. Errors raise."""
    from .cli import UsageError

    parser = _parser(f"{paper.cli} reproduce")
    try:
        ns = parser.parse_args(list(argv))
    except argparse.ArgumentError as exc:
        raise UsageError(f"reproduce: {exc} (see: {paper.cli} reproduce --help)") from None
    if ns.quick and ns.preset not in (None, "quick"):
        raise UsageError(f"reproduce: --quick contradicts --preset {ns.preset}")
    preset = ns.preset or "quick"
    try:
        experiment = load_experiment(paper)
        if ns.list:
            for s in experiment.sections:
                print(f"{s.name}: {s.claim}")
            return 0
        sections = [s.strip() for s in ns.sections.split(",") if s.strip()] if ns.sections else None
        for name in sections or []:
            experiment.section(name)
        out = ns.out if ns.out is not None else Path("results") / paper.name / preset
        if (out / "results.json").exists() and not ns.force:
            raise UsageError(
                f"reproduce: {out} already holds results (results.json); pass --force to "
                "overwrite them, or choose another --out"
            )
        report = run_reproduce(paper, out, preset, ns.config, sections, seed=ns.seed)
    except SettingError as exc:
        raise UsageError(str(exc)) from None
    print(report.to_markdown())
    figures = len(report.figures) + sum(len(s.figures) for s in report.sections.values())
    print(f"wrote {out / 'results.json'}, {out / 'results.md'} and {figures} figure(s)")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m icml26_shared.reproduce", description="Run one paper package's reproduce."
    )
    parser.add_argument("name")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--preset", choices=PRESETS, default="quick")
    parser.add_argument("--seed", type=int, default=0)
    ns = parser.parse_args(argv)
    papers = discover_papers(broken={})
    if ns.name not in papers:
        parser.error(f"unknown package {ns.name!r}; installed: {', '.join(papers) or 'none'}")
    try:
        report = run_reproduce(papers[ns.name], ns.out, preset=ns.preset, seed=ns.seed)
    except (OSError, ValueError, TypeError) as exc:
        print(f"{ns.name} reproduce: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    print(report.to_markdown())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
