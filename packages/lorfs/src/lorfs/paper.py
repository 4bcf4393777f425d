"""Metadata of the lorfs package for the ``icml26`` umbrella command (imports nothing heavy)."""

from icml26_shared.paper import Paper

PAPER = Paper(
    name="lorfs",
    title="TODO: paper title",
    cli="lorfs",
    import_name="lorfs",
    summary="TODO: one line",
    url="https://icml.cc/virtual/2026",
    reproduce="lorfs.reproduce:reproduce",
)
