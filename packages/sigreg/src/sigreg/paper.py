"""Metadata of the sigreg package for the ``icml26`` umbrella command (imports nothing heavy)."""

from icml26_shared.paper import Paper

PAPER = Paper(
    name="sigreg",
    title="Stable Deep Reinforcement Learning via Isotropic Gaussian Representations",
    cli="sigreg",
    import_name="sigreg",
    summary="Sketched Isotropic Gaussian Regularization (SIGReg) for deep RL under non-stationarity",
    url="https://arxiv.org/abs/2602.19373",
    reproduce="sigreg.reproduce:EXPERIMENT",
)
