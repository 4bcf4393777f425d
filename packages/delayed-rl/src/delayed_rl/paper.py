"""Metadata of the delayed-rl package for the ``icml26`` umbrella command (imports nothing heavy)."""

from icml26_shared.paper import Paper

PAPER = Paper(
    name="delayed-rl",
    title="Minimax Optimal Strategy for Delayed Observations in Online Reinforcement Learning",
    cli="delayed-rl",
    import_name="delayed_rl",
    summary="Minimax-optimal tabular RL with randomly delayed state observations: augmented states, exact beliefs, delay-aware optimistic planning (UCBVI).",
    url="https://arxiv.org/abs/2603.03480",
    reproduce="delayed_rl.reproduce:EXPERIMENT",
)
