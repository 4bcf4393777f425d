"""Metadata of the ou-ident package for the ``icml26`` umbrella command (imports nothing heavy)."""

from icml26_shared.paper import Paper

PAPER = Paper(
    name="ou-ident",
    title="TODO: paper title",
    cli="ou-ident",
    import_name="ou_ident",
    summary="TODO: one line",
    url="https://icml.cc/virtual/2026",
    reproduce="ou_ident.reproduce:reproduce",
)
