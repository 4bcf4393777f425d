"""Metadata of the weakprior package for the ``icml26`` umbrella command (imports nothing heavy)."""

from icml26_shared.paper import Paper

PAPER = Paper(
    name="weakprior",
    title="Weak diffusion priors for inverse problems",
    cli="weakprior",
    import_name="weakprior",
    summary="Inverse problems with weak or mismatched diffusion priors: DPS-style solvers and the when-does-it-work analysis",
    url="https://arxiv.org/abs/2601.22443",
    reproduce="weakprior.reproduce:EXPERIMENT",
)
