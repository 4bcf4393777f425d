"""Metadata of the watersic package for the ``icml26`` umbrella command (imports nothing heavy)."""

from icml26_shared.paper import Paper

PAPER = Paper(
    name="watersic",
    title="TODO: paper title",
    cli="watersic",
    import_name="watersic",
    summary="TODO: one line",
    url="https://icml.cc/virtual/2026",
    reproduce="watersic.reproduce:reproduce",
)
