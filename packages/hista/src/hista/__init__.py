"""Hista and Numca: Estimate State Value Effectively for LLM Reinforcement Learning.

State-value estimation for LLM RL: the SVEB benchmark, Numca milestones and Hista hidden-state k-NN values
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("hista")
except PackageNotFoundError:  # running from a source tree without installing
    __version__ = "0.0.0"
