"""End-to-end autoregressive image generation with a 1D semantic tokenizer (EOSTok).

EOSTok: a 1D TiTok-style tokenizer trained end to end with an autoregressive image generator
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("eostok")
except PackageNotFoundError:  # running from a source tree without installing
    __version__ = "0.0.0"
