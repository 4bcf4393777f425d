"""Command line of videokr: ``videokr --help``."""

from __future__ import annotations

from collections.abc import Sequence

from icml26_shared.cli import PaperCLI

from .paper import PAPER


def build_cli() -> PaperCLI:
    """The package's CLI; add ``model_class``, ``datamodule_class`` and extra ``commands``."""
    return PaperCLI(PAPER)


def main(args: Sequence[str] | None = None) -> int:
    """Entry point of the ``videokr`` console script."""
    return build_cli().main(args)
