"""Metadata of the anytime-hoeffding package for the ``icml26`` umbrella (imports nothing heavy)."""

from icml26_shared.paper import Paper

PAPER = Paper(
    name="anytime-hoeffding",
    title="Correcting Split Selection in Online Decision Trees via Anytime-Valid Inference",
    cli="anytime-hoeffding",
    import_name="anytime_hoeffding",
    summary=(
        "Hoeffding trees whose splits are decided by betting e-processes: "
        "P(any false split ever) <= alpha on arbitrary streams."
    ),
    url="https://arxiv.org/abs/2605.31239",
    reproduce="anytime_hoeffding.reproduce:EXPERIMENT",
)
