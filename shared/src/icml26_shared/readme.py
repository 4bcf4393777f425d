"""README result blocks that cannot drift from the committed results.

A package README copies a section of a committed ``results.md`` between a marker pair::

    <!-- results: quick/prequential -->
    ...the section's tables, copied by ``icml26 readme --write``...
    <!-- /results -->

``quick/prequential`` names ``results/quick/results.md`` next to the README and its
``## prequential`` section (``quick/prequential#2``: only that section's second table).
Figure links are rewritten relative to the README. ``icml26 readme --check`` fails, naming
the README, the line and the first differing line, when a block differs from what the
results say; ``icml26 readme --write`` rewrites the blocks.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from .results import atomic_write_text

OPEN = re.compile(r"^<!--\s*results:\s*(?P<ref>[^\s]+)\s*-->\s*$")
CLOSE = re.compile(r"^<!--\s*/results\s*-->\s*$")
IMAGE = re.compile(r"!\[(?P<alt>[^\]]*)\]\((?P<src>[^)\s]+)\)")


class ReadmeError(ValueError):
    """A marker names results that do not exist, or markers do not pair up."""


@dataclass(frozen=True)
class Block:
    """One marked block of a README: its reference and its line span (0-based, exclusive)."""

    ref: str
    start: int  # line index of the opening marker
    end: int  # line index of the closing marker


def find_blocks(lines: Sequence[str], where: str = "README") -> list[Block]:
    """The marked blocks of ``lines``; unpaired or nested markers raise :class:`ReadmeError`."""
    blocks: list[Block] = []
    open_at: tuple[int, str] | None = None
    for i, line in enumerate(lines):
        m = OPEN.match(line.strip())
        if m:
            if open_at is not None:
                raise ReadmeError(f"{where}:{i + 1}: results marker opened inside another block")
            open_at = (i, m["ref"])
        elif CLOSE.match(line.strip()):
            if open_at is None:
                raise ReadmeError(f"{where}:{i + 1}: closing results marker without an opening")
            blocks.append(Block(open_at[1], open_at[0], i))
            open_at = None
    if open_at is not None:
        raise ReadmeError(f"{where}:{open_at[0] + 1}: results marker is never closed")
    return blocks


def split_sections(markdown: str) -> dict[str, list[str]]:
    """``{section name: body lines}`` of a ``results.md`` (its ``## `` headings)."""
    sections: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in markdown.splitlines():
        if line.startswith("## "):
            current = sections.setdefault(line[3:].strip(), [])
        elif line.startswith("# ") or (current is not None and line.startswith("_seed ")):
            current = None  # the report heading / the run's metadata line close a section
        elif current is not None:
            current.append(line)
    return sections


def _tables(body: list[str]) -> list[list[str]]:
    """The ``### `` table blocks of a section body (heading, table, notes up to the next)."""
    tables: list[list[str]] = []
    for line in body:
        if line.startswith("### "):
            tables.append([line])
        elif tables and not line.startswith("!["):
            tables[-1].append(line)
    return tables


def _trim(lines: list[str]) -> list[str]:
    lines = [ln.rstrip() for ln in lines]
    while lines and not lines[0]:
        lines.pop(0)
    while lines and not lines[-1]:
        lines.pop()
    return lines


def render(ref: str, readme: Path) -> list[str]:
    """The lines a block ``ref`` must hold for the README at ``readme``."""
    run, sep, rest = ref.partition("/")
    if not sep or not rest:
        raise ReadmeError(f"{readme}: results marker {ref!r} must be 'RUN/SECTION[#TABLE]'")
    name, _, table = rest.partition("#")
    results_dir = readme.parent / "results" / run
    path = results_dir / "results.md"
    if not path.is_file():
        raise ReadmeError(f"{readme}: marker {ref!r} names {path}, which does not exist")
    sections = split_sections(path.read_text(encoding="utf-8"))
    if name not in sections:
        raise ReadmeError(
            f"{readme}: marker {ref!r}: {path} has no section {name!r} (has: {', '.join(sections)})"
        )
    body = sections[name]
    if table:
        tables = _tables(body)
        if not table.isdigit() or not 1 <= int(table) <= len(tables):
            raise ReadmeError(
                f"{readme}: marker {ref!r}: section {name!r} has {len(tables)} table(s)"
            )
        body = tables[int(table) - 1]
    prefix = results_dir.relative_to(readme.parent).as_posix() + "/"

    def relink(m: re.Match) -> str:
        src = m["src"]
        if "://" in src or src.startswith("/"):
            return m[0]
        return f"![{m['alt']}]({prefix}{src})"

    return _trim([IMAGE.sub(relink, line) for line in body])


def check(readme: Path) -> list[str]:
    """Problems of one README (empty when every block matches its results)."""
    lines = readme.read_text(encoding="utf-8").splitlines()
    problems = []
    try:
        blocks = find_blocks(lines, str(readme))
    except ReadmeError as exc:
        return [str(exc)]
    for block in blocks:
        try:
            want = render(block.ref, readme)
        except ReadmeError as exc:
            problems.append(str(exc))
            continue
        have = _trim(lines[block.start + 1 : block.end])
        if have != want:
            width = max(len(have), len(want))
            padded = zip(
                have + [""] * (width - len(have)), want + [""] * (width - len(want)), strict=True
            )
            for k, (a, b) in enumerate(padded):
                if a != b:
                    line = block.start + 2 + k
                    problems.append(
                        f"{readme}:{line}: block {block.ref!r} differs from its results.md: "
                        f"README has {a!r}, results have {b!r}"
                    )
                    break
    return problems


def write(readme: Path) -> int:
    """Rewrite every block of ``readme`` from its results; return how many changed."""
    lines = readme.read_text(encoding="utf-8").splitlines()
    changed = 0
    for block in reversed(find_blocks(lines, str(readme))):
        want = render(block.ref, readme)
        if _trim(lines[block.start + 1 : block.end]) != want:
            lines[block.start + 1 : block.end] = ["", *want, ""]
            changed += 1
    if changed:
        atomic_write_text(readme, "\n".join(lines) + "\n")
    return changed


def default_readmes(root: Path = Path(".")) -> list[Path]:
    """Every ``packages/*/README.md`` under ``root``."""
    return sorted(root.glob("packages/*/README.md"))


def _count_blocks(path: Path) -> int:
    try:
        return len(find_blocks(path.read_text(encoding="utf-8").splitlines()))
    except ReadmeError:
        return 0


def main(readmes: Sequence[Path], rewrite: bool = False) -> int:
    """``icml26 readme --check|--write``: exit 0 when all blocks match (or were written)."""
    paths = list(readmes) or default_readmes()
    if not paths:
        print(
            "icml26 readme: error: no README given and no packages/*/README.md here",
            file=sys.stderr,
        )
        return 2
    missing = [p for p in paths if not p.is_file()]
    if missing:
        print(f"icml26 readme: error: {missing[0]} does not exist", file=sys.stderr)
        return 2
    if rewrite:
        try:
            total = sum(write(p) for p in paths)
        except ReadmeError as exc:
            print(f"icml26 readme: error: {exc}", file=sys.stderr)
            return 1
        print(f"icml26 readme: rewrote {total} block(s) in {len(paths)} README file(s)")
        return 0
    problems = [msg for p in paths for msg in check(p)]
    for msg in problems:
        print(f"icml26 readme: {msg}", file=sys.stderr)
    if problems:
        return 1
    blocks = sum(_count_blocks(p) for p in paths)
    print(f"icml26 readme: {blocks} block(s) in {len(paths)} README file(s) match their results")
    return 0
