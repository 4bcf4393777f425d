"""The quiet Lightning Trainer used by experiments and package commands, and the user-facing
silencing of Lightning's promotional and deprecation chatter.

A ``reproduce`` section or a package command that trains through a package's own
LightningModule calls :func:`quiet_trainer` instead of typing out ``Trainer(logger=False,
enable_checkpointing=False, enable_progress_bar=False, ...)``: CPU unless told otherwise, no
logger, no checkpoint files, no model summary, a progress bar only when asked, and Lightning's
informational lines silenced while it runs (:func:`icml26_shared.progress.quiet_lightning`).

:func:`silence_lightning_chatter` drops Lightning's "Tip" advertisements and the known
deprecation warnings that a user cannot act on; :class:`~icml26_shared.cli.PaperCLI` calls it
before every Lightning command.
"""

from __future__ import annotations

import logging
import warnings
from typing import Any

# Warnings raised inside lightning/jsonargparse by their own calls, nothing a user can change.
_KNOWN_WARNINGS = (
    r".*isinstance\(treespec, LeafSpec\).*",  # lightning's _pytree on torch >= 2.9
    r".*does not have many workers.*",  # Lightning#19223, also on 2-core machines
    r".*JsonargparseDeprecationWarning.*",
    r"LightningCLI's args parameter is intended.*",
)


#: Lightning's accelerator lines when there is no such accelerator (a found GPU is still shown).
_ABSENT_ACCELERATORS = ("GPU available: False", "TPU available: False", "HPU available: False")


class _DropTips(logging.Filter):
    """Drops Lightning's advertisements, its "Seed set to N" line (the seed is in the config) and
    its "GPU/TPU/HPU available: False" lines (so a CPU run's error stays one line)."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = str(record.getMessage())
        return (
            "Tip:" not in message[:12]
            and not message.startswith("Seed set to")
            and not message.startswith(_ABSENT_ACCELERATORS)
        )


def silence_lightning_chatter() -> None:
    """Drop Lightning's "Tip", "Seed set to" and absent-accelerator lines and known third-party
    deprecation warnings (idempotent), so that a command's output is its result and an error is
    one line."""
    loggers = (
        "lightning.pytorch.utilities.rank_zero",
        "lightning.fabric.utilities.rank_zero",
        "lightning.fabric.utilities.seed",
    )
    for name in loggers:
        logger = logging.getLogger(name)
        if not any(isinstance(f, _DropTips) for f in logger.filters):
            logger.addFilter(_DropTips())
    for pattern in _KNOWN_WARNINGS:
        warnings.filterwarnings("ignore", message=pattern)


def quiet_trainer(max_epochs: int | None = None, **kwargs: Any):
    """A ``lightning.pytorch.Trainer`` for work whose own output is the result.

    Defaults (each can be overridden by a keyword): ``accelerator="cpu"``, ``devices=1``,
    ``logger=False``, ``enable_checkpointing=False``, ``enable_progress_bar=False``,
    ``enable_model_summary=False``. Use it inside
    :func:`icml26_shared.progress.quiet_lightning` (the experiment runner does) to silence
    Lightning's informational lines too.

    Parameters
    ----------
    max_epochs:
        Passed to the Trainer.
    **kwargs:
        Any other ``Trainer`` argument.

    Examples
    --------
    >>> trainer = quiet_trainer(max_epochs=1)
    >>> trainer.logger is None, trainer.max_epochs
    (True, 1)
    """
    import lightning.pytorch as pl

    silence_lightning_chatter()
    options: dict[str, Any] = {
        "accelerator": "cpu",
        "devices": 1,
        "logger": False,
        "enable_checkpointing": False,
        "enable_progress_bar": False,
        "enable_model_summary": False,
    }
    options.update(kwargs)
    if max_epochs is not None:
        options["max_epochs"] = max_epochs
    return pl.Trainer(**options)
