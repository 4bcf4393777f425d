"""Metadata of the asymp-gda package for the ``icml26`` umbrella command (imports nothing heavy)."""

from icml26_shared.paper import Paper

PAPER = Paper(
    name="asymp-gda",
    title="Asymmetric Perturbation in Solving Bilinear Saddle-Point Optimization",
    cli="asymp-gda",
    import_name="asymp_gda",
    summary="AsymP-GDA: perturb one player only; linear last-iterate convergence to an exact equilibrium",
    url="https://arxiv.org/abs/2506.05747",
    reproduce="asymp_gda.reproduce:EXPERIMENT",
)
