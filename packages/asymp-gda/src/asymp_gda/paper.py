"""Metadata of the asymp-gda package for the ``icml26`` umbrella command (imports nothing heavy)."""

from icml26_shared.paper import Paper

PAPER = Paper(
    name="asymp-gda",
    title="TODO: paper title",
    cli="asymp-gda",
    import_name="asymp_gda",
    summary="TODO: one line",
    url="https://icml.cc/virtual/2026",
    reproduce="asymp_gda.reproduce:reproduce",
)
