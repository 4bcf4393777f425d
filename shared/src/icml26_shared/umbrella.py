"""The umbrella command ``icml26``: list and reproduce every installed paper package.

``icml26 list`` shows the packages found through the ``icml26.packages``
entry-point group. ``icml26 reproduce NAME ... | --all [--preset P] [--out DIR]``
runs each package's reproduce in its own Python process (so no global torch
state leaks between papers), continues past a package that fails, and writes
one combined ``REPORT.md`` with every table and figure plus a summary of wall
time per package. ``icml26 readme --check | --write [README ...]`` keeps README
result tables equal to the committed ``results.md`` they name
(:mod:`icml26_shared.readme`).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

from .experiment import PRESETS
from .paper import Paper, discover_papers
from .results import Report, Table, atomic_write_text, ensure_writable_dir

EXIT_USAGE = 2


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="icml26", description="The icml26 paper packages: list them, reproduce their results."
    )
    sub = parser.add_subparsers(dest="command", metavar="<command>")
    sub.add_parser("list", help="List the installed paper packages.")
    rep = sub.add_parser("reproduce", help="Run packages' reproduce and write one REPORT.md.")
    rep.add_argument("names", nargs="*", metavar="NAME", help="packages to run (see 'icml26 list')")
    rep.add_argument("--all", action="store_true", help="run every installed package")
    rep.add_argument("--preset", choices=PRESETS, default=None, help="settings preset")
    rep.add_argument("--quick", action="store_true", help="alias of --preset quick")
    rep.add_argument("--out", type=Path, default=Path("reproduce-out"), help="output folder")
    rep.add_argument("--seed", type=int, default=0)
    readme = sub.add_parser(
        "readme", help="Check (or write) README result tables against committed results.md."
    )
    mode = readme.add_mutually_exclusive_group(required=True)
    mode.add_argument("--check", action="store_true", help="fail when a README block differs")
    mode.add_argument("--write", action="store_true", help="rewrite README blocks from results")
    readme.add_argument(
        "readmes",
        nargs="*",
        type=Path,
        metavar="README",
        help="README files (default: packages/*/README.md under the current folder)",
    )
    return parser


def list_table(papers: dict[str, Paper]) -> Table:
    table = Table("Installed icml26 packages", ["package", "version", "cli", "paper"])
    for paper in papers.values():
        table.add_row(package=paper.name, version=paper.version, cli=paper.cli, paper=paper.title)
    return table


def _run_one(paper: Paper, out: Path, preset: str, seed: int) -> tuple[str, float, Report | None]:
    cmd = [
        sys.executable,
        "-m",
        "icml26_shared.reproduce",
        paper.name,
        "--out",
        str(out),
        "--seed",
        str(seed),
        "--preset",
        preset,
    ]
    print(f"== {paper.name} {paper.version}: reproduce --preset {preset}", flush=True)
    start = time.perf_counter()
    proc = subprocess.run(cmd, check=False)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        return f"failed (exit {proc.returncode})", wall, None
    try:
        return "ok", wall, Report.read(out)
    except (OSError, ValueError, KeyError) as exc:
        return f"failed (unreadable results: {exc})", wall, None


def _shift_headings(markdown: str) -> str:
    """Demote every Markdown heading by one level (a package report inside REPORT.md)."""
    return "\n".join("#" + ln if ln.startswith("#") else ln for ln in markdown.splitlines())


def reproduce(papers: dict[str, Paper], names: list[str], out: Path, preset: str, seed: int) -> int:
    out = ensure_writable_dir(out)
    summary = Table(
        "Summary", ["package", "version", "status", "wall time"], units={"wall time": "s"}
    )
    sections = []
    failed = 0
    for name in names:
        paper = papers[name]
        status, wall, report = _run_one(paper, out / name, preset, seed)
        failed += status != "ok"
        summary.add_row(
            package=name, version=paper.version, status=status, **{"wall time": round(wall, 1)}
        )
        if report is not None:
            sections.append(_shift_headings(report.to_markdown(figure_prefix=f"{name}/")) + "\n")
        else:
            sections.append(f"## {name}\n\nreproduce {status}; see the output above.\n")
    header = [
        "# icml26 reproduce report",
        "",
        f"Produced by `icml26 reproduce {' '.join(names) if names else '--all'}"
        f" --preset {preset} --seed {seed}`.",
        "",
    ]
    if not names:
        header += ["No icml26 paper packages are installed.", ""]
    text = "\n".join(header) + summary.to_markdown() + "\n\n" + "\n".join(sections)
    report_path = atomic_write_text(out / "REPORT.md", text)
    print(summary.to_markdown())
    print(f"\nwrote {report_path}")
    return 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    ns = parser.parse_args(argv)
    if ns.command is None:
        parser.print_help()
        return EXIT_USAGE
    broken: dict[str, str] = {}
    papers = discover_papers(broken)
    for name, reason in broken.items():
        print(f"icml26: warning: skipping package {name!r}: {reason}", file=sys.stderr)
    if ns.command == "readme":
        from .readme import main as readme_main

        return readme_main(ns.readmes, rewrite=ns.write)
    if ns.command == "list":
        if not papers:
            print("No icml26 paper packages are installed.")
        else:
            print(list_table(papers).to_markdown())
        return 0
    if ns.all and ns.names:
        print("icml26: error: give package names or --all, not both", file=sys.stderr)
        return EXIT_USAGE
    if not ns.all and not ns.names:
        print("icml26: error: name at least one package, or pass --all", file=sys.stderr)
        return EXIT_USAGE
    unknown = [n for n in ns.names if n not in papers]
    if unknown:
        known = ", ".join(papers) or "none installed"
        print(
            f"icml26: error: unknown package(s) {', '.join(unknown)}; known: {known}",
            file=sys.stderr,
        )
        return EXIT_USAGE
    names = list(papers) if ns.all else list(dict.fromkeys(ns.names))
    if ns.quick and ns.preset not in (None, "quick"):
        print(f"icml26: error: --quick contradicts --preset {ns.preset}", file=sys.stderr)
        return EXIT_USAGE
    try:
        return reproduce(
            papers, names, ns.out, ns.preset or ("quick" if ns.quick else "full"), ns.seed
        )
    except OSError as exc:
        print(f"icml26: error: {exc}", file=sys.stderr)
        return EXIT_USAGE


if __name__ == "__main__":
    raise SystemExit(main())
