import time

import pytest
from icml26_shared.bench import Timing, peak_memory, ratio, time_it


def test_time_it_counts_calls_and_takes_median():
    calls = []

    def fn():
        calls.append(1)
        return len(calls)

    t = time_it(fn, warmup=2, repeats=5)
    assert len(calls) == 7 and len(t.samples) == 5 and t.result == 7
    assert Timing((1.0, 2.0, 10.0)).median == 2.0
    assert Timing((1.0, 2.0, 10.0)).spread == 9.0
    assert Timing((1.0, 2.0, 3.0, 4.0, 100.0)).spread < 99  # IQR ignores the outlier


def test_time_it_measures_sleep():
    t = time_it(lambda: time.sleep(0.02), warmup=0, repeats=3)
    assert 0.015 < t.median < 0.5
    assert t.throughput(10) == pytest.approx(10 / t.median)


def test_ratio():
    assert ratio(Timing((4.0,)), Timing((1.0,))) == 4.0
    assert ratio(1.0, 0.0) == float("inf")


def test_bad_arguments():
    with pytest.raises(ValueError, match="repeats"):
        time_it(lambda: None, repeats=0)
    with pytest.raises(ValueError, match="warmup"):
        time_it(lambda: None, warmup=-1)


def test_peak_memory_sees_a_large_allocation():
    with peak_memory() as mem:
        block = bytearray(200 * 2**20)
        block[::4096] = b"x" * len(block[::4096])  # touch the pages
        time.sleep(0.05)
    del block
    assert mem.delta_mb > 150
