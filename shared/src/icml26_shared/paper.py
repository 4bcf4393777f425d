"""Paper metadata and the ``icml26.packages`` entry-point group.

Every paper package registers one :class:`Paper` object under the entry-point
group ``icml26.packages``; the umbrella command ``icml26`` discovers them with
:func:`discover_papers`. This module imports nothing heavy (no torch), so that
``icml26 list`` stays fast.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata

ENTRY_POINT_GROUP = "icml26.packages"


@dataclass(frozen=True)
class Paper:
    """Who a paper package is: its names, its paper and its reproduce experiment.

    Parameters
    ----------
    name:
        Distribution name on PyPI (``"watersic"``); also the ``icml26`` key.
    title:
        The paper's title.
    cli:
        Name of the package's console script.
    import_name:
        The package's import name (``"anytime_hoeffding"``).
    summary:
        One line saying what the package does.
    url:
        Link to the paper (or its official code).
    reproduce:
        ``"module:attribute"`` of the package's
        :class:`~icml26_shared.experiment.Experiment` (``"my_paper.reproduce:EXPERIMENT"``).
        Kept as a string so that reading the metadata imports nothing.

    Examples
    --------
    >>> p = Paper(name="toy", title="A toy paper", cli="toy", import_name="toy",
    ...           summary="does nothing", reproduce="toy.reproduce:reproduce")
    >>> p.name, p.reproduce_target
    ('toy', ('toy.reproduce', 'reproduce'))
    """

    name: str
    title: str
    cli: str
    import_name: str
    summary: str = ""
    url: str = ""
    reproduce: str = ""

    @property
    def reproduce_target(self) -> tuple[str, str]:
        """``(module, attribute)`` of the reproduce function."""
        module, sep, attr = self.reproduce.partition(":")
        if not sep or not module or not attr:
            raise ValueError(
                f"paper {self.name!r}: reproduce must be 'module:function', got {self.reproduce!r}"
            )
        return module, attr

    def load_reproduce(self) -> Callable:
        """Import and return the reproduce target (an ``Experiment``)."""
        module, attr = self.reproduce_target
        return getattr(importlib.import_module(module), attr)

    @property
    def version(self) -> str:
        """Installed version of the distribution, or ``"unknown"``."""
        try:
            return metadata.version(self.name)
        except metadata.PackageNotFoundError:
            return "unknown"


def discover_papers(broken: dict[str, str] | None = None) -> dict[str, Paper]:
    """Return every installed paper package, keyed by name and sorted by name.

    An entry point that does not load, or is not a :class:`Paper`, is left out;
    pass a dict as ``broken`` to receive ``{entry point name: reason}`` for those,
    otherwise ``RuntimeError`` is raised naming the first one.
    """
    found: dict[str, Paper] = {}
    problems: dict[str, str] = {}
    for ep in metadata.entry_points(group=ENTRY_POINT_GROUP):
        try:
            paper = ep.load()
        except Exception as exc:  # noqa: BLE001 - reported with the entry point's name
            problems[ep.name] = f"entry point {ep.value} failed to load: {exc}"
            continue
        if not isinstance(paper, Paper):
            problems[ep.name] = f"entry point {ep.value} is a {type(paper).__name__}, not a Paper"
            continue
        found[paper.name] = paper
    if broken is not None:
        broken.update(problems)
    elif problems:
        name, reason = next(iter(problems.items()))
        raise RuntimeError(f"package {name!r}: {reason}")
    return dict(sorted(found.items()))
