"""Scaling Law for Quantization-Aware Training.

A unified scaling law for W4A4 quantization-aware training: fit, decompose and probe QAT error
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("qat-scaling")
except PackageNotFoundError:  # running from a source tree without installing
    __version__ = "0.0.0"
