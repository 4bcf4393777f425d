"""Minimax Optimal Strategy for Delayed Observations in Online Reinforcement Learning.

Minimax-optimal tabular RL with randomly delayed state observations: augmented states, exact beliefs, delay-aware optimistic planning (UCBVI).
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("delayed-rl")
except PackageNotFoundError:  # running from a source tree without installing
    __version__ = "0.0.0"
