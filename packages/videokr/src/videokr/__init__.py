"""VideoKR: knowledge- and reasoning-intensive video understanding.

The VideoKR corpus pipeline, VideoKR-Eval harness and SFT-to-GRPO recipe for knowledge-intensive video reasoning
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("videokr")
except PackageNotFoundError:  # running from a source tree without installing
    __version__ = "0.0.0"
