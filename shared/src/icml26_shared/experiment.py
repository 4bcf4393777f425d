"""Experiments as data: a paper's ``reproduce`` is a list of sections and three YAML presets.

An :class:`Experiment` is a short declaration in a package's ``reproduce.py``::

    EXPERIMENT = Experiment(
        "my-paper",
        sections=[
            Section("main", main_table, claim="Ours beats the anchors at equal compute."),
            Section("speed", speed_table, claim="At most 2x the anchor's time."),
        ],
    )

Each section is one paper claim or table: a function ``(setting, seed) -> result`` that calls
the package's public API (the functions and LightningModules a user calls) and returns a
:class:`~icml26_shared.results.Table`, a list of tables, or a :class:`SectionResult` (tables,
figures, notes). Its sizes come from YAML, never from Python constants:

``configs/reproduce/quick.yaml`` (about a minute on 2 CPU cores), ``full.yaml`` (at most about
20 minutes) and ``paper.yaml`` (the paper's own scale, for a GPU), each of the form::

    seeds: 3            # global keys: every section sees them
    sections:
      main: {n: 2000}   # section keys: only ``main`` sees them (they win over global ones)
      speed: {repeats: 3}

A global ``threads: N`` key runs every section with ``torch.set_num_threads(N)`` (restored
afterwards). A section may declare ``params``, a dataclass: its YAML keys are then checked (an unknown or
missing key, a wrong type, is a :class:`~icml26_shared.cli.UsageError` before any work) and the
function receives an instance. Without ``params`` it receives a plain ``dict``.

:meth:`Experiment.run` is the shared runner. It seeds every generator per section, runs the
sections in order with a progress line each, times them (wall and CPU seconds), and writes
``results.json`` and ``results.md`` atomically after every section, so an interrupted run
leaves the finished sections readable. Running a subset (``sections=[...]``) into a folder
that already holds results of the same preset replaces only those sections.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import importlib.util
import sys
import time
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .results import Report, Table, ensure_writable_dir

PRESETS = ("quick", "full", "paper")
# YAML 1.1 reads these keys as null / booleans, so they cannot name a section.
YAML_WORDS = {"null", "true", "false", "yes", "no", "on", "off", "y", "n"}
SECTIONS_KEY = "sections"


class SettingError(ValueError):
    """A reproduce preset or override file is missing, malformed or does not fit the sections."""


@dataclass
class SectionResult:
    """What a section returns when a bare table is not enough.

    Parameters
    ----------
    tables:
        Result tables, in display order.
    figures:
        ``{file name: matplotlib figure}``; saved as PNG next to ``results.md``.
    notes:
        Paragraphs printed under the section's tables.
    """

    tables: list[Table] = field(default_factory=list)
    figures: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Section:
    """One paper claim or table of an experiment.

    Parameters
    ----------
    name:
        Short identifier (``"prequential"``): the key under ``sections:`` in the presets, the
        ``## name`` heading in ``results.md`` and the name README markers use
        (``<!-- results: quick/prequential -->``).
    run:
        ``run(setting, seed)`` returning a :class:`~icml26_shared.results.Table`, a list of
        tables or a :class:`SectionResult`.
    claim:
        One line: the paper's claim this section checks (printed under the heading).
    params:
        Optional dataclass describing the section's settings; the YAML is validated against it.

    Examples
    --------
    >>> from icml26_shared.results import Table
    >>> def squares(setting, seed):
    ...     t = Table("Squares", ["x", "x2"])
    ...     for x in range(setting["n"]):
    ...         t.add_row(x=x, x2=x * x)
    ...     return t
    >>> Section("squares", squares, claim="x^2 grows").name
    'squares'
    """

    name: str
    run: Callable[..., Any]
    claim: str = ""
    params: type | None = None

    def __post_init__(self) -> None:
        if not self.name or not self.name.replace("-", "_").isidentifier():
            raise ValueError(f"section name {self.name!r} must be a short identifier")
        if self.name.lower() in YAML_WORDS:
            raise ValueError(f"section name {self.name!r} reads as a YAML constant; choose another")
        if self.params is not None and not dataclasses.is_dataclass(self.params):
            raise TypeError(f"section {self.name!r}: params must be a dataclass")


# ---------------------------------------------------------------- settings


def read_yaml(path: str | Path) -> dict[str, Any]:
    """Read a YAML mapping; a missing, unreadable or malformed file raises :class:`SettingError`."""
    import yaml

    path = Path(path)
    if not path.is_file():
        raise SettingError(f"settings file {str(path)!r} does not exist")
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise SettingError(f"cannot read settings file {str(path)!r}: {exc}") from None
    except yaml.YAMLError as exc:
        where = getattr(exc, "problem_mark", None)
        at = f" (line {where.line + 1})" if where is not None else ""
        raise SettingError(f"settings file {str(path)!r} is not valid YAML{at}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise SettingError(
            f"settings file {str(path)!r} must hold a mapping, not a {type(data).__name__}"
        )
    return data


def deep_merge(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """Return ``base`` updated by ``override``, merging nested mappings key by key.

    A key written with a trailing ``!`` in ``override`` replaces the value whole instead.

    >>> deep_merge({"a": 1, "s": {"x": 1, "y": 2}}, {"s": {"y": 3}})
    {'a': 1, 's': {'x': 1, 'y': 3}}
    >>> deep_merge({"s": {"x": 1, "y": 2}}, {"s!": {"y": 3}})
    {'s': {'y': 3}}
    """
    out = copy.deepcopy(dict(base))
    for key, value in override.items():
        if isinstance(key, str) and key.endswith("!"):
            out[key[:-1]] = copy.deepcopy(value)
        elif isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def _type_ok(value: Any, annotation: Any) -> bool:
    """Loose runtime check of a YAML value against a dataclass field annotation."""
    if annotation is Any or annotation is object:
        return True
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        return any(_type_ok(value, a) for a in typing.get_args(annotation))
    if annotation is type(None):
        return value is None
    if origin in (list, tuple, Sequence):
        args = typing.get_args(annotation)
        if not isinstance(value, (list, tuple)):
            return False
        if origin is tuple and args and args[-1] is not Ellipsis:
            return len(args) == len(value) and all(
                _type_ok(v, a) for v, a in zip(value, args, strict=True)
            )
        return not args or all(_type_ok(v, args[0]) for v in value)
    if origin in (dict, Mapping):
        return isinstance(value, Mapping)
    if origin is typing.Literal:
        return value in typing.get_args(annotation)
    if annotation is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if annotation is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if isinstance(annotation, type):
        return isinstance(value, annotation)
    return True


def build_params(params: type, values: Mapping[str, Any], where: str) -> Any:
    """Instantiate the dataclass ``params`` from YAML ``values``, naming any problem."""
    hints = typing.get_type_hints(params)
    fields = {f.name: f for f in dataclasses.fields(params) if f.init}
    unknown = sorted(set(values) - set(fields))
    if unknown:
        raise SettingError(f"{where}: unknown setting(s) {unknown}; known: {sorted(fields)}")
    missing = [
        name
        for name, f in fields.items()
        if name not in values
        and f.default is dataclasses.MISSING
        and f.default_factory is dataclasses.MISSING
    ]
    if missing:
        raise SettingError(f"{where}: missing setting(s) {missing}")
    for name, value in values.items():
        if not _type_ok(value, hints.get(name, Any)):
            raise SettingError(
                f"{where}: setting {name!r} = {value!r} is not of type {hints.get(name)}"
            )
    try:
        return params(**values)
    except (TypeError, ValueError) as exc:
        raise SettingError(f"{where}: {exc}") from None


# ---------------------------------------------------------------- the experiment


def package_folder(import_name: str) -> Path | None:
    """The folder holding ``configs/`` of an installed or workspace package, if found.

    From a wheel this is the package itself (``configs/`` ships inside it as package data);
    from the workspace (an editable install) it is ``packages/<name>/``.
    """
    spec = importlib.util.find_spec(import_name)
    if spec is None or not spec.origin:
        return None
    here = Path(spec.origin).resolve().parent
    for folder in (here, *here.parents[:3]):
        if (folder / "configs" / "reproduce").is_dir():
            return folder
    return None


def seed_everything(seed: int) -> None:
    """Seed Python, NumPy and torch (CUDA included when present) with ``seed``."""
    import random

    import numpy as np

    random.seed(seed)
    np.random.seed(seed % 2**32)
    try:
        import torch
    except ImportError:  # an install without the `lightning` extra: nothing to seed
        return
    torch.manual_seed(seed)


class Experiment:
    """A paper's headline comparison, declared as sections plus YAML presets.

    Parameters
    ----------
    package:
        Distribution name (``"anytime-hoeffding"``).
    sections:
        The :class:`Section` list, in report order.
    import_name:
        Import name used to find ``configs/reproduce/`` (default: ``package`` with ``-`` as
        ``_``).
    config_dir:
        Explicit presets folder (tests; default: ``<package root>/configs/reproduce``).
    notes:
        Paragraphs added after all sections (setting summary, anchors' versions).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from icml26_shared.results import Table
    >>> def count(setting, seed):
    ...     t = Table("Count", ["n"]); t.add_row(n=setting["n"]); return t
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / "quick.yaml").write_text("sections:\\n  count: {n: 3}\\n")
    >>> exp = Experiment("toy", [Section("count", count)], config_dir=d)
    >>> report = exp.run(d / "out", preset="quick", log=False)
    >>> report.sections["count"].tables[0].rows
    [{'n': 3}]
    """

    def __init__(
        self,
        package: str,
        sections: Sequence[Section],
        import_name: str | None = None,
        config_dir: str | Path | None = None,
        notes: Sequence[str] = (),
    ) -> None:
        self.package = package
        self.sections = list(sections)
        names = [s.name for s in self.sections]
        if len(set(names)) != len(names):
            raise ValueError(f"experiment {package!r}: duplicate section names in {names}")
        self.import_name = import_name or package.replace("-", "_")
        self._config_dir = Path(config_dir) if config_dir is not None else None
        self.notes = list(notes)

    # ------------------------------------------------------------ settings

    @property
    def config_dir(self) -> Path:
        """Folder of the presets (``quick.yaml``, ``full.yaml``, ``paper.yaml``)."""
        if self._config_dir is not None:
            return self._config_dir
        root = package_folder(self.import_name)
        if root is None:
            raise SettingError(
                f"{self.package}: no configs/reproduce folder found next to {self.import_name}"
            )
        return root / "configs" / "reproduce"

    def section(self, name: str) -> Section:
        for s in self.sections:
            if s.name == name:
                return s
        raise SettingError(
            f"unknown section {name!r}; sections: {', '.join(s.name for s in self.sections)}"
        )

    def load_setting(
        self, preset: str = "quick", overrides: Sequence[str | Path] = ()
    ) -> dict[str, Any]:
        """The preset's YAML deep-merged with each override file, checked against the sections."""
        if preset not in PRESETS:
            raise SettingError(f"unknown preset {preset!r}; choose from {', '.join(PRESETS)}")
        setting = read_yaml(self.config_dir / f"{preset}.yaml")
        for path in overrides:
            setting = deep_merge(setting, read_yaml(path))
        per_section = setting.get(SECTIONS_KEY, {}) or {}
        if not isinstance(per_section, Mapping):
            raise SettingError(f"preset {preset!r}: '{SECTIONS_KEY}' must be a mapping")
        for name, values in per_section.items():
            self.section(name)  # unknown section names fail here
            if values is not None and not isinstance(values, Mapping):
                raise SettingError(f"preset {preset!r}: sections.{name} must be a mapping")
        return setting

    def section_setting(self, section: Section, setting: Mapping[str, Any], preset: str) -> Any:
        """What ``section.run`` receives: global keys updated by the section's own keys."""
        values = {k: v for k, v in setting.items() if k != SECTIONS_KEY}
        values.update((setting.get(SECTIONS_KEY) or {}).get(section.name) or {})
        if section.params is None:
            return values
        known = {f.name for f in dataclasses.fields(section.params)}
        own = (setting.get(SECTIONS_KEY) or {}).get(section.name) or {}
        values = {k: v for k, v in values.items() if k in known or k in own}
        return build_params(section.params, values, f"preset {preset!r}, section {section.name!r}")

    def validate(self, preset: str, overrides: Sequence[str | Path] = ()) -> dict[str, Any]:
        """Load the preset and build every section's setting (no work is run)."""
        setting = self.load_setting(preset, overrides)
        return {s.name: self.section_setting(s, setting, preset) for s in self.sections}

    # ------------------------------------------------------------ running

    def run(
        self,
        out: str | Path,
        preset: str = "quick",
        overrides: Sequence[str | Path] = (),
        sections: Sequence[str] | None = None,
        seed: int = 0,
        log: bool = True,
    ) -> Report:
        """Run the chosen sections (default: all) and write the report into ``out``."""
        setting = self.load_setting(preset, overrides)
        chosen = [self.section(n) for n in sections] if sections else list(self.sections)
        prepared = [(s, self.section_setting(s, setting, preset)) for s in chosen]
        out = ensure_writable_dir(out)
        report = self._previous_report(out, preset, keep=[s.name for s in chosen])
        report.metadata.update(preset=preset, seed=seed, setting=setting)
        start = time.perf_counter()
        for i, (section, values) in enumerate(prepared, start=1):
            tag = f"[{i}/{len(prepared)}] {self.package} {section.name}"
            if log:
                print(f"{tag}: running", file=sys.stderr, flush=True)
            seed_everything(seed)
            wall0, cpu0 = time.perf_counter(), time.process_time()
            with _threads(setting.get("threads")):
                result = _as_result(section.name, section.run(values, seed))
            wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
            report.add_section(
                section.name,
                claim=section.claim,
                tables=result.tables,
                notes=result.notes,
                timing={"wall_s": round(wall, 1), "cpu_s": round(cpu, 1)},
            )
            for name, fig in result.figures.items():
                report.save_figure(fig, name, section=section.name)
            report.metadata["wall_time_s"] = round(time.perf_counter() - start, 1)
            report.write(order=[s.name for s in self.sections])
            if log:
                print(f"{tag}: done in {wall:.1f} s (CPU {cpu:.1f} s)", file=sys.stderr, flush=True)
        report.notes = list(self.notes)
        report.write(order=[s.name for s in self.sections])
        return report

    def _previous_report(self, out: Path, preset: str, keep: list[str]) -> Report:
        """A fresh report, holding the sections of an earlier run of the same preset in ``out``."""
        report = Report(self.package, out)
        if not (out / "results.json").is_file():
            return report
        try:
            old = Report.read(out)
        except (OSError, ValueError, KeyError):
            return report
        if old.package != self.package or old.metadata.get("preset") != preset:
            return report
        known = {s.name for s in self.sections}
        for name, sec in old.sections.items():
            if name in known and name not in keep:
                report.sections[name] = sec
                report.figures += [f for f in old.figures if f.name in sec.figures]
        return report


@contextlib.contextmanager
def _threads(n: Any):
    """Run with ``torch.set_num_threads(n)`` when a preset sets a global ``threads`` key."""
    if n is None:
        yield
        return
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise SettingError(f"threads must be a positive integer, got {n!r}")
    try:
        import torch
    except ImportError:  # an install without the `lightning` extra: no torch threads to set
        yield
        return
    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _as_result(name: str, value: Any) -> SectionResult:
    if isinstance(value, SectionResult):
        return value
    if isinstance(value, Table):
        return SectionResult(tables=[value])
    if isinstance(value, (list, tuple)) and all(isinstance(t, Table) for t in value):
        return SectionResult(tables=list(value))
    raise TypeError(
        f"section {name!r} returned {type(value).__name__}; return a Table, a list of "
        "tables or a SectionResult"
    )


def seeds(setting: Mapping[str, Any] | Any, seed: int = 0) -> list[int]:
    """The seeds a section runs: ``seed, seed + 1, ...`` (``setting['seeds']`` of them, 3 if unset).

    >>> seeds({"seeds": 3}, 10)
    [10, 11, 12]
    """
    n = setting.get("seeds", 3) if isinstance(setting, Mapping) else getattr(setting, "seeds", 3)
    if not isinstance(n, int) or n < 1:
        raise SettingError(f"seeds must be a positive integer, got {n!r}")
    return [seed + i for i in range(n)]
