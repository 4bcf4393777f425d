"""``videokr reproduce``: the paper's headline comparison at CPU scale."""

from __future__ import annotations

from pathlib import Path

from icml26_shared.results import Report


def reproduce(out: Path, quick: bool = False, seed: int = 0) -> Report:
    """Run the headline comparison (anchors in the same run) and return its report."""
    raise NotImplementedError("videokr reproduce is not written yet")
