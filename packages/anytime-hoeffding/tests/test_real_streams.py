"""Real-data streams on the download path: conversion and the offline error (no download)."""

import urllib.error

import numpy as np
import pytest
from anytime_hoeffding import streams
from anytime_hoeffding.anchors import moa_available

needs_moa = pytest.mark.skipif(not moa_available(), reason="capymoa or Java not available")

ARFF = """@relation flights
@attribute Airline {AA,UA,DL}
@attribute Time numeric
@attribute Delay {0,1}
@data
UA,10,1
AA,5.5,0
DL,7,1
AA,8,0
"""


@needs_moa
def test_capymoa_stream_becomes_codes_and_labels(tmp_path):
    from capymoa.stream import ARFFStream

    path = tmp_path / "flights.arff"
    path.write_text(ARFF)
    s = streams.from_capymoa(ARFFStream(str(path)), 3, "flights")
    np.testing.assert_array_equal(s.X, [[1.0, 10.0], [0.0, 5.5], [2.0, 7.0]])
    np.testing.assert_array_equal(s.y, [1, 0, 1])
    assert s.n_classes == 2 and s.X.dtype == np.float64 and s.y.dtype == np.int64
    assert len(streams.from_capymoa(ARFFStream(str(path)), 100, "flights")) == 4


@needs_moa
def test_airlines_offline_is_a_clear_error(monkeypatch, tmp_path):
    import capymoa.datasets

    def offline(directory):
        raise urllib.error.URLError("Name or service not known")

    monkeypatch.setattr(capymoa.datasets, "Airlines", offline)
    with pytest.raises(OSError, match="Airlines is not cached.*needs internet"):
        streams.airlines(10, directory=str(tmp_path))
