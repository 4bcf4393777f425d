"""Metadata of the ou-ident package for the ``icml26`` umbrella command (imports nothing heavy)."""

from icml26_shared.paper import Paper

PAPER = Paper(
    name="ou-ident",
    title="One Intervention per Component is Enough: Towards Identifiability in Linear Stochastic Dynamics from Steady State",
    cli="ou-ident",
    import_name="ou_ident",
    summary="Ornstein-Uhlenbeck drift and diffusion from steady-state observational and interventional snapshots: recursive and joint moment estimators, identifiability checks, prediction of unseen interventions.",
    url="https://icml.cc/virtual/2026/poster/62505",
    reproduce="ou_ident.reproduce:EXPERIMENT",
)
