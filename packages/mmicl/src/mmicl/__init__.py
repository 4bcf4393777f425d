"""Dissecting Multimodal In-Context Learning: Modality Asymmetries and Circuit Dynamics in Modern Transformers.

A controlled testbed for unimodal and multimodal in-context learning in small modern transformers
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("mmicl")
except PackageNotFoundError:  # running from a source tree without installing
    __version__ = "0.0.0"
