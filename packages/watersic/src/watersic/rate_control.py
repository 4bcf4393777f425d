"""Rate control: secant search of one layer's step to a target entropy, and the global budget.

Paper: Lifar et al., "WaterSIC", ICML 2026 (arXiv:2603.04956).

* ``secant_search`` -- find the nominal rate x with f(x) = entropy(x) - target ~ 0. As in the
  authors' code it starts at x = target, takes one slope-1 Newton step (entropy rises by about
  one bit per nominal bit), then secant steps, here safeguarded by bisection once the root is
  bracketed (the entropy of a finite matrix is a step function of the step size).
* ``RateController`` -- global rate control across layers: budget = target x total
  parameters; each layer gets remaining_bits / remaining_params, clamped to [0.05, 16], with
  optional per-weight-type multipliers (e.g. ``{"k_proj": 1.5}``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass
class SearchResult:
    """Outcome of :func:`secant_search`: best ``x``, its ``value`` f(x)+target, evaluations."""

    x: float
    value: float
    evaluations: int
    converged: bool


def secant_search(
    f: Callable[[float], float],
    target: float,
    x0: float | None = None,
    tol: float = 0.005,
    max_iter: int = 30,
    bounds: tuple[float, float] = (-10.0, 26.0),
) -> SearchResult:
    """Solve ``f(x) = target`` for a non-decreasing ``f`` by safeguarded secant steps.

    Examples
    --------
    >>> r = secant_search(lambda x: 2 * x + 1, target=5.0)
    >>> round(r.x, 6), r.converged
    (2.0, True)
    """
    lo_b, hi_b = bounds
    x = min(max(target if x0 is None else x0, lo_b), hi_b)
    evals: dict[float, float] = {}

    def g(v: float) -> float:
        if v not in evals:
            evals[v] = f(v) - target
        return evals[v]

    best = (x, g(x))
    lo: tuple[float, float] | None = None  # g < 0
    hi: tuple[float, float] | None = None  # g > 0

    def record(v: float, gv: float) -> None:
        nonlocal best, lo, hi
        if abs(gv) < abs(best[1]):
            best = (v, gv)
        if gv < 0 and (lo is None or v > lo[0]):
            lo = (v, gv)
        if gv > 0 and (hi is None or v < hi[0]):
            hi = (v, gv)

    record(x, best[1])
    prev = None
    cur = (x, best[1])
    for _ in range(max_iter):
        if abs(best[1]) < tol:
            return SearchResult(best[0], best[1] + target, len(evals), True)
        if prev is None or cur[1] == prev[1]:
            nxt = cur[0] - cur[1]  # slope-1 Newton step
        else:
            slope = (cur[1] - prev[1]) / (cur[0] - prev[0])
            nxt = cur[0] - cur[1] / slope if slope > 0 else cur[0] - cur[1]
        if lo is not None and hi is not None and not (lo[0] < nxt < hi[0]):
            nxt = 0.5 * (lo[0] + hi[0])
        nxt = min(max(nxt, lo_b), hi_b)
        if lo is not None and hi is not None and hi[0] - lo[0] < 1e-12:
            break
        if nxt in evals:
            if lo is not None and hi is not None:
                nxt = 0.5 * (lo[0] + hi[0])
            else:
                nxt = nxt + (1.0 if cur[1] < 0 else -1.0)
            if nxt in evals:
                break
        gv = g(nxt)
        record(nxt, gv)
        prev, cur = cur, (nxt, gv)
    return SearchResult(best[0], best[1] + target, len(evals), abs(best[1]) < tol)


@dataclass
class RateController:
    """Global rate control across the layers of a model.

    Parameters
    ----------
    target:
        Average bits per weight over all quantized parameters.
    total_params:
        Number of weights that will be quantized.
    multipliers:
        Per-weight-type factors applied to the fair share (matched as substrings of names).
    min_rate, max_rate:
        Clamp of each layer's rate (0.05 and 16 in the authors' code).

    Examples
    --------
    >>> rc = RateController(target=2.0, total_params=300)
    >>> rc.next_rate("a", 100)
    2.0
    >>> rc.spend(100, 1.5)  # the first layer came in under budget
    >>> rc.next_rate("b", 100)
    2.25
    """

    target: float
    total_params: int
    multipliers: dict[str, float] = field(default_factory=dict)
    min_rate: float = 0.05
    max_rate: float = 16.0
    spent_bits: float = 0.0
    spent_params: int = 0

    def next_rate(self, name: str, params: int) -> float:
        """Rate for the next layer (``params`` weights) given what was spent so far."""
        remaining_params = self.total_params - self.spent_params
        if remaining_params <= 0:
            raise ValueError("RateController: all parameters have already been spent")
        remaining_bits = self.target * self.total_params - self.spent_bits
        rate = remaining_bits / remaining_params
        for key, mult in self.multipliers.items():
            if key in name:
                rate *= mult
        if not math.isfinite(rate):
            rate = self.target
        return float(min(max(rate, self.min_rate), self.max_rate))

    def spend(self, params: int, rate: float) -> None:
        """Record that a layer of ``params`` weights used ``rate`` bits per weight."""
        self.spent_params += params
        self.spent_bits += params * rate

    @property
    def achieved(self) -> float:
        """Average bits per weight spent so far."""
        return self.spent_bits / max(self.spent_params, 1)
