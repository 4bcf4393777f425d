"""Progress bars for long work: shown on a terminal, silent in logs and CI.

tqdm's carriage returns fill non-interactive logs, so bars are drawn only when
standard error is a TTY (and ``ICML26_PROGRESS`` is not ``0``).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Iterator
from typing import TypeVar

from tqdm.auto import tqdm

T = TypeVar("T")


def progress_enabled() -> bool:
    """Whether progress bars should be drawn in this process."""
    if os.environ.get("ICML26_PROGRESS", "") == "0":
        return False
    return sys.stderr.isatty()


def progress(iterable: Iterable[T], desc: str = "", total: int | None = None) -> Iterator[T]:
    """Wrap ``iterable`` in a progress bar when :func:`progress_enabled`.

    Examples
    --------
    >>> sum(progress(range(4), desc="adding"))
    6
    """
    return iter(tqdm(iterable, desc=desc, total=total, disable=not progress_enabled(), leave=False))
