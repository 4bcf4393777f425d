"""Results tables and reports, written atomically.

A paper package's ``reproduce`` builds a :class:`Report` holding one or more
:class:`Table` objects and PNG figures; :meth:`Report.write` renders it to
``results.json`` and ``results.md`` next to the figures. Every file is written
through :func:`atomic_write_bytes` (temporary file in the same folder, fsync,
``os.replace``), so an interrupted run leaves either the old file or the new
one, never half of one.
"""

from __future__ import annotations

import json
import math
import os
import platform
import sys
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

# ---------------------------------------------------------------- atomic files


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> Path:
    """Write ``data`` to ``path`` so that readers see the old or the new file, never a mix."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; give the usual 0644
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def atomic_write_figure(path: str | os.PathLike, fig: Any, dpi: int = 120) -> Path:
    """Save a matplotlib figure as a PNG with :func:`atomic_write_bytes`, then close it."""
    import io

    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight")
    plt.close(fig)
    return atomic_write_bytes(path, buf.getvalue())


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def atomic_write_text(path: str | os.PathLike, text: str) -> Path:
    """Text version of :func:`atomic_write_bytes` (UTF-8)."""
    return atomic_write_bytes(path, text.encode("utf-8"))


def ensure_writable_dir(path: str | os.PathLike) -> Path:
    """Create ``path`` if needed and check that files can be written there.

    Raises ``PermissionError``/``NotADirectoryError`` with a message naming the
    folder, before any long computation starts.
    """
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise NotADirectoryError(f"output path {str(path)!r} exists and is not a folder")
    try:
        path.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(dir=path, prefix=".write-probe-")
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise PermissionError(
            f"output folder {str(path)!r} is not writable: {exc.strerror}"
        ) from exc
    return path


# ---------------------------------------------------------------- formatting


def format_value(value: Any) -> str:
    """Render one table cell: floats with 4 significant digits, the rest as ``str``.

    Examples
    --------
    >>> [format_value(v) for v in (0.000123456, 12345.678, 3, None, float("nan"), "x")]
    ['0.0001235', '1.235e+04', '3', '', 'nan', 'x']
    """
    if value is None:
        return ""
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            return str(value)
        return f"{value:.4g}"
    return str(value)


def _jsonable(value: Any) -> Any:
    """Turn numpy / torch scalars and paths into plain JSON values."""
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, float) and (math.isnan(value) or math.isinf(value)):
        return str(value)  # JSON has no NaN/inf
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if isinstance(value, Path):
        return str(value)
    item = getattr(value, "item", None)  # numpy / torch scalars
    if callable(item):
        try:
            return _jsonable(item())
        except (TypeError, ValueError):
            pass
    return str(value)


# ---------------------------------------------------------------- tables


@dataclass
class Table:
    """One results table: named columns, optional units, rows of values.

    Parameters
    ----------
    title:
        Heading of the table.
    columns:
        Column names, in display order.
    units:
        Optional ``{column: unit}`` shown in the header (``"s"``, ``"MB"``, ...).
    notes:
        Free text printed under the table (setting, what the columns mean).

    Examples
    --------
    >>> t = Table("Speed", ["method", "time"], units={"time": "s"})
    >>> t.add_row(method="ours", time=0.5)
    >>> print(t.to_markdown())
    ### Speed
    <BLANKLINE>
    | method | time (s) |
    |---|---|
    | ours | 0.5 |
    """

    title: str
    columns: Sequence[str]
    units: Mapping[str, str] | None = None
    notes: str = ""
    rows: list[dict[str, Any]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.columns = list(self.columns)
        if len(set(self.columns)) != len(self.columns):
            raise ValueError(f"table {self.title!r}: duplicate column names in {self.columns}")
        self.units = dict(self.units or {})
        unknown = set(self.units) - set(self.columns)
        if unknown:
            raise ValueError(
                f"table {self.title!r}: units given for unknown columns {sorted(unknown)}"
            )

    def add_row(self, **values: Any) -> None:
        """Append a row; every key must be a column (missing columns stay empty)."""
        unknown = set(values) - set(self.columns)
        if unknown:
            raise ValueError(
                f"table {self.title!r}: unknown columns {sorted(unknown)}; columns are {self.columns}"
            )
        self.rows.append(dict(values))

    def extend(self, rows: Iterable[Mapping[str, Any]]) -> None:
        """Append several rows."""
        for row in rows:
            self.add_row(**row)

    def column(self, name: str) -> list[Any]:
        """Values of one column, in row order."""
        if name not in self.columns:
            raise KeyError(name)
        return [row.get(name) for row in self.rows]

    def header(self, name: str) -> str:
        unit = self.units.get(name) if self.units else None
        return f"{name} ({unit})" if unit else name

    def to_markdown(self, level: int = 3) -> str:
        """Render as a GitHub-flavoured Markdown table under a heading of ``level`` (``###``)."""
        lines = [f"{'#' * level} {self.title}", ""]
        heads = [self.header(c).replace("|", "\\|") for c in self.columns]
        lines.append("| " + " | ".join(heads) + " |")
        lines.append("|" + "---|" * len(self.columns))
        for row in self.rows:
            cells = [format_value(row.get(c)).replace("|", "\\|") for c in self.columns]
            lines.append("| " + " | ".join(cells) + " |")
        if self.notes:
            lines += ["", self.notes]
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return {
            "title": self.title,
            "columns": list(self.columns),
            "units": dict(self.units or {}),
            "notes": self.notes,
            "rows": _jsonable(self.rows),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Table:
        table = cls(data["title"], data["columns"], data.get("units"), data.get("notes", ""))
        table.extend(data.get("rows", []))
        return table


# ---------------------------------------------------------------- metadata


def environment_metadata(packages: Iterable[str] = ()) -> dict[str, Any]:
    """Versions and machine facts recorded with every report.

    Imports torch only if it is already imported (so reading metadata stays cheap).
    """
    versions: dict[str, str] = {}
    for name in ["icml26-shared", *packages, "torch", "lightning", "numpy"]:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    device = "cpu"
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available():
        device = f"cuda ({torch.cuda.get_device_name(0)})"
    return {
        "python": platform.python_version(),
        "platform": platform.platform(terse=True),
        "machine": platform.machine(),
        "cpu_count": os.cpu_count(),
        "device": device,
        "versions": versions,
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
    }


# ---------------------------------------------------------------- reports


@dataclass
class ReportSection:
    """One section of a report: a paper claim, its tables, figures, notes and timing."""

    name: str
    claim: str = ""
    tables: list[Table] = field(default_factory=list)
    figures: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    timing: dict[str, float] = field(default_factory=dict)

    def to_markdown(self, heading_level: int = 2, figure_prefix: str = "") -> str:
        """The section as Markdown: heading, claim, tables, figures, notes, timing."""
        lines = [f"{'#' * heading_level} {self.name}", ""]
        lines += self.body_lines(heading_level + 1, figure_prefix)
        return "\n".join(lines).rstrip() + "\n"

    def body_lines(self, table_level: int = 3, figure_prefix: str = "") -> list[str]:
        lines: list[str] = []
        if self.claim:
            lines += [f"Claim: {self.claim}", ""]
        for table in self.tables:
            lines += [table.to_markdown(level=table_level), ""]
        for name in self.figures:
            lines += [f"![{Path(name).stem}]({figure_prefix}{name})", ""]
        for note in self.notes:
            lines += [note, ""]
        if self.timing:
            lines += [
                f"_wall {self.timing.get('wall_s', 0):.1f} s, CPU {self.timing.get('cpu_s', 0):.1f} s_",
                "",
            ]
        return lines

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "claim": self.claim,
            "tables": [t.to_dict() for t in self.tables],
            "figures": list(self.figures),
            "notes": list(self.notes),
            "timing": _jsonable(self.timing),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ReportSection:
        return cls(
            name=data["name"],
            claim=data.get("claim", ""),
            tables=[Table.from_dict(t) for t in data.get("tables", [])],
            figures=list(data.get("figures", [])),
            notes=list(data.get("notes", [])),
            timing=dict(data.get("timing", {})),
        )


@dataclass
class Report:
    """Everything one ``reproduce`` run produced: sections of tables, figures, notes, metadata.

    Tables live in named sections (:meth:`add_section`, one per paper claim, as the
    :mod:`icml26_shared.experiment` runner writes them); :meth:`add_table` keeps a table
    outside any section.

    Parameters
    ----------
    package:
        Distribution name of the package that produced the report.
    out_dir:
        Folder the figures and results files go to (created if needed).

    Examples
    --------
    >>> import tempfile
    >>> out = tempfile.mkdtemp()
    >>> r = Report("toy", out)
    >>> t = Table("T", ["a"]); t.add_row(a=1)
    >>> _ = r.add_section("main", claim="a is one", tables=[t])
    >>> sorted(p.name for p in r.write())
    ['results.json', 'results.md']
    >>> Report.read(out).sections["main"].tables[0].rows
    [{'a': 1}]
    """

    package: str
    out_dir: Path
    tables: list[Table] = field(default_factory=list)
    figures: list[Path] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)
    sections: dict[str, ReportSection] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.out_dir = Path(self.out_dir)

    def add_table(self, table: Table) -> Table:
        """Add a table outside any section."""
        self.tables.append(table)
        return table

    def add_section(
        self,
        name: str,
        claim: str = "",
        tables: Sequence[Table] = (),
        notes: Sequence[str] = (),
        timing: Mapping[str, float] | None = None,
    ) -> ReportSection:
        """Add (or replace) the section ``name``."""
        section = ReportSection(name, claim, list(tables), [], list(notes), dict(timing or {}))
        self.sections[name] = section
        return section

    def note(self, text: str) -> None:
        """Add a paragraph printed after the tables (setting, caveats)."""
        self.notes.append(text)

    def save_figure(self, fig: Any, name: str, dpi: int = 120, section: str | None = None) -> Path:
        """Save a matplotlib figure atomically as ``out_dir/name`` (PNG) and close it."""
        if not name.endswith(".png"):
            name = f"{name}.png"
        path = atomic_write_figure(self.out_dir / name, fig, dpi=dpi)
        if section is not None:
            if name not in self.sections[section].figures:
                self.sections[section].figures.append(name)
        elif path not in self.figures:
            self.figures.append(path)
        return path

    def to_markdown(self, heading_level: int = 1, figure_prefix: str = "") -> str:
        """Render tables, sections, figures (as relative image links), notes and metadata."""
        lines = [f"{'#' * heading_level} {self.package}", ""]
        for table in self.tables:
            lines += [table.to_markdown(level=heading_level + 1), ""]
        for fig in self.figures:
            lines += [f"![{fig.stem}]({figure_prefix}{fig.name})", ""]
        # with sections, the report's own notes (the setting) come first, outside any section
        notes = [[note, ""] for note in self.notes]
        if self.sections:
            lines[2:2] = [ln for pair in notes for ln in pair]
        for section in self.sections.values():
            lines += [section.to_markdown(heading_level + 1, figure_prefix), ""]
        if not self.sections:
            lines += [ln for pair in notes for ln in pair]
        meta = self.metadata
        if meta:
            bits = [f"seed {meta['seed']}" if "seed" in meta else None]
            if "preset" in meta:
                bits.append(f"preset {meta['preset']}")
            elif "quick" in meta:
                bits.append("quick run" if meta["quick"] else "full run")
            if "wall_time_s" in meta:
                bits.append(f"wall time {meta['wall_time_s']:.1f} s")
            if "device" in meta:
                bits.append(f"device {meta['device']}")
            if "cpu_count" in meta:
                bits.append(f"{meta['cpu_count']} CPUs")
            lines += ["_" + ", ".join(b for b in bits if b) + "_", ""]
        return "\n".join(lines).rstrip() + "\n"

    def to_dict(self) -> dict[str, Any]:
        return {
            "package": self.package,
            "tables": [t.to_dict() for t in self.tables],
            "sections": [s.to_dict() for s in self.sections.values()],
            "figures": [f.name for f in self.figures],
            "notes": list(self.notes),
            "metadata": _jsonable(self.metadata),
        }

    def write(self, order: Sequence[str] | None = None) -> list[Path]:
        """Write ``results.json`` and ``results.md`` into ``out_dir``; return their paths.

        ``order``: section names in report order (sections not named keep theirs, after).
        """
        if order is not None:
            rank = {name: i for i, name in enumerate(order)}
            self.sections = dict(
                sorted(self.sections.items(), key=lambda kv: rank.get(kv[0], len(rank)))
            )
        json_path = atomic_write_text(
            self.out_dir / "results.json", json.dumps(self.to_dict(), indent=2) + "\n"
        )
        md_path = atomic_write_text(self.out_dir / "results.md", self.to_markdown())
        return [json_path, md_path]

    @classmethod
    def read(cls, out_dir: str | os.PathLike) -> Report:
        """Load a report previously written by :meth:`write`."""
        out_dir = Path(out_dir)
        data = json.loads((out_dir / "results.json").read_text(encoding="utf-8"))
        report = cls(data["package"], out_dir)
        report.tables = [Table.from_dict(t) for t in data.get("tables", [])]
        report.sections = {s["name"]: ReportSection.from_dict(s) for s in data.get("sections", [])}
        report.figures = [out_dir / name for name in data.get("figures", [])]
        report.notes = list(data.get("notes", []))
        report.metadata = dict(data.get("metadata", {}))
        return report
