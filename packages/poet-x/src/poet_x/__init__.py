"""POET-X: Memory-efficient LLM Training by Scaling Orthogonal Transformation.

POET-X: memory-efficient orthogonal equivalence training (block Cayley rotations) for LLMs
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("poet-x")
except PackageNotFoundError:  # running from a source tree without installing
    __version__ = "0.0.0"
