"""Metadata of the revit-equivariant package for the ``icml26`` umbrella command (imports nothing heavy)."""

from icml26_shared.paper import Paper

PAPER = Paper(
    name="revit-equivariant",
    title="ReViT: Rotational-equivariant Vision Transformers for Neural PDE Solvers",
    cli="revit",
    import_name="revit_equivariant",
    summary="ReViT: a C4/O-equivariant Swin-style vision transformer for neural PDE solvers",
    url="https://icml.cc/virtual/2026",
    reproduce="revit_equivariant.reproduce:EXPERIMENT",
)
