"""TODO: paper title.

TODO: one line
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("ou-ident")
except PackageNotFoundError:  # running from a source tree without installing
    __version__ = "0.0.0"
