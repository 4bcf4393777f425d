"""Measuring code fairly: warm-up, repeats, medians, peak memory, ratios.

Benchmarks in this workspace compare an anchor and our method *in the same
run*: time both with :func:`time_it` and report :func:`ratio` of their medians
together with the spread, never a single wall-clock figure.
"""

from __future__ import annotations

import os
import statistics
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Timing:
    """Wall-clock samples of one callable, in seconds.

    ``median`` is the headline; ``spread`` is the interquartile range
    (``max - min`` with fewer than four samples).
    """

    samples: tuple[float, ...]
    result: Any = field(default=None, compare=False, repr=False)

    @property
    def median(self) -> float:
        return statistics.median(self.samples)

    @property
    def spread(self) -> float:
        if len(self.samples) < 4:
            return max(self.samples) - min(self.samples)
        q = statistics.quantiles(self.samples, n=4)
        return q[2] - q[0]

    @property
    def best(self) -> float:
        return min(self.samples)

    def throughput(self, n_items: float) -> float:
        """Items per second at the median time."""
        return n_items / self.median if self.median > 0 else float("inf")


def time_it(fn: Callable[[], Any], warmup: int = 1, repeats: int = 5) -> Timing:
    """Call ``fn`` ``warmup`` times untimed, then ``repeats`` times timed.

    The value returned by the last call is kept in ``Timing.result``. On a GPU,
    CUDA is synchronised around each call so that kernel time is counted.

    Examples
    --------
    >>> t = time_it(lambda: sum(range(1000)), warmup=1, repeats=3)
    >>> len(t.samples), t.result, t.median >= 0
    (3, 499500, True)
    """
    if repeats < 1:
        raise ValueError(f"repeats must be >= 1, got {repeats}")
    if warmup < 0:
        raise ValueError(f"warmup must be >= 0, got {warmup}")
    sync = _cuda_sync()
    result = None
    for _ in range(warmup):
        result = fn()
    samples = []
    for _ in range(repeats):
        sync()
        start = time.perf_counter()
        result = fn()
        sync()
        samples.append(time.perf_counter() - start)
    return Timing(tuple(samples), result)


def ratio(baseline: Timing | float, ours: Timing | float) -> float:
    """Speed-up of ``ours`` over ``baseline`` (``> 1`` means ours is faster).

    Examples
    --------
    >>> ratio(2.0, 0.5)
    4.0
    """
    b = baseline.median if isinstance(baseline, Timing) else float(baseline)
    o = ours.median if isinstance(ours, Timing) else float(ours)
    return b / o if o > 0 else float("inf")


def _cuda_sync() -> Callable[[], None]:
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available() and torch.cuda.is_initialized():
        return torch.cuda.synchronize
    return lambda: None


def current_rss_mb() -> float:
    """Resident set size of this process now, in MiB (Linux ``/proc``; else peak RSS)."""
    try:
        with open("/proc/self/statm") as fh:
            pages = int(fh.read().split()[1])
        return pages * os.sysconf("SC_PAGE_SIZE") / 2**20
    except (OSError, ValueError, IndexError):
        import resource

        peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return peak_kb / (2**20 if sys.platform == "darwin" else 2**10)


class peak_memory:  # noqa: N801 - used as a context manager, reads like a function
    """Context manager measuring peak memory of the enclosed block.

    CPU: the resident set size is sampled every ``interval`` seconds by a
    background thread; ``peak_mb`` is the maximum seen and ``delta_mb`` the
    increase over the value at entry. CUDA (when torch has initialised it):
    ``cuda_peak_mb`` is ``torch.cuda.max_memory_allocated`` over the block.

    Examples
    --------
    >>> with peak_memory() as mem:
    ...     block = bytearray(64 * 2**20)
    >>> mem.peak_mb >= mem.start_mb
    True
    """

    def __init__(self, interval: float = 0.002) -> None:
        self.interval = interval
        self.start_mb = 0.0
        self.peak_mb = 0.0
        self.cuda_peak_mb: float | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def delta_mb(self) -> float:
        return self.peak_mb - self.start_mb

    def _sample(self) -> None:
        while not self._stop.is_set():
            self.peak_mb = max(self.peak_mb, current_rss_mb())
            self._stop.wait(self.interval)

    def __enter__(self) -> peak_memory:
        self.start_mb = self.peak_mb = current_rss_mb()
        torch = sys.modules.get("torch")
        if torch is not None and torch.cuda.is_available() and torch.cuda.is_initialized():
            torch.cuda.reset_peak_memory_stats()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self.peak_mb = max(self.peak_mb, current_rss_mb())
        torch = sys.modules.get("torch")
        if torch is not None and torch.cuda.is_available() and torch.cuda.is_initialized():
            self.cuda_peak_mb = torch.cuda.max_memory_allocated() / 2**20
