"""Progress bars for long work: shown on a terminal, silent in logs and CI.

tqdm's carriage returns fill non-interactive logs, so bars are drawn only when
standard error is a TTY (and ``ICML26_PROGRESS`` is not ``0``). Work that prints its
own results (reproduce runs, package commands) can silence Lightning's informational
lines with :func:`quiet_lightning`.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import warnings
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


@contextlib.contextmanager
def quiet_lightning() -> Iterator[None]:
    """Silence Lightning's informational log lines and warnings inside the block.

    For work whose own output is the result (tables, one progress line per stage): the
    Trainer's accelerator, model-summary and "few workers" lines would bury it. The
    loggers' levels and the warning filters are restored on exit; errors still show.

    Examples
    --------
    >>> import logging
    >>> with quiet_lightning():
    ...     logging.getLogger("lightning.pytorch").getEffectiveLevel() == logging.ERROR
    True
    """
    # Lightning's import sets these loggers' levels, so import it first when it is installed
    with contextlib.suppress(ImportError):
        import lightning.pytorch  # noqa: F401

    loggers = [logging.getLogger(name) for name in ("lightning.pytorch", "lightning.fabric")]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        for logger, level in zip(loggers, levels, strict=True):
            logger.setLevel(level)
