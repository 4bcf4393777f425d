"""Observation-delay distributions q on {0, ..., D_max}.

Paper: Lee & Jamieson (ICML 2026, arXiv:2603.03480), Section 2: the state s_h of step h
is observed at the start of step h + d_h, with d_h i.i.d. ~ q, independent of the states,
and d_h <= D_max. Convention of this package: d_1 = 0 (the initial state is seen).

Map:

- :class:`DelayDistribution` -- the pmf q with constructors ``constant``, ``uniform``,
  ``geometric`` (truncated), ``from_samples`` (estimated from observed delays) and
  ``parse`` (``"uniform:3"`` on the command line).
- :meth:`DelayDistribution.hazard` -- lambda(m) = q(m + 1) / q(d > m), the chance that a
  state pending for m steps is revealed at the next step; this is the *known* part of the
  augmented dynamics (see :mod:`delayed_rl.augmented`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, eq=False)
class DelayDistribution:
    """A delay pmf q(d), d = 0..D.

    Parameters
    ----------
    pmf:
        Probabilities of delays 0, 1, ..., len(pmf) - 1; non-negative, summing to 1.
    d_max:
        Declared maximum delay D_max. Mass beyond it is an error; default: the last
        index with positive mass.

    Examples
    --------
    >>> q = DelayDistribution.uniform(2)
    >>> q.D, [round(float(x), 3) for x in q.pmf]
    (2, [0.333, 0.333, 0.333])
    >>> [round(float(x), 3) for x in q.hazard()]  # reveal chance after 0 and 1 pending steps
    [0.5, 1.0]
    """

    pmf: np.ndarray
    d_max: int | None = None

    def __post_init__(self) -> None:
        pmf = np.atleast_1d(np.asarray(self.pmf, dtype=np.float64))
        if pmf.ndim != 1 or pmf.size == 0:
            raise ValueError("delay pmf must be a non-empty 1-D array of probabilities")
        if not np.all(np.isfinite(pmf)) or (pmf < -1e-12).any():
            raise ValueError(f"delay pmf has negative or non-finite entries: {pmf.tolist()}")
        if abs(pmf.sum() - 1.0) > 1e-6:
            raise ValueError(f"delay pmf must sum to 1, sums to {pmf.sum():.6g}")
        pmf = np.clip(pmf, 0.0, None)
        support = np.flatnonzero(pmf > 0)
        top = int(support.max())
        if self.d_max is not None:
            if isinstance(self.d_max, bool) or int(self.d_max) != self.d_max or self.d_max < 0:
                raise ValueError(f"d_max must be an integer >= 0, got {self.d_max!r}")
            if top > self.d_max:
                raise ValueError(
                    f"delay pmf puts mass {pmf[self.d_max + 1 :].sum():.3g} on delays beyond "
                    f"D_max={self.d_max} (support reaches {top})"
                )
        pmf = pmf[: top + 1] / pmf[: top + 1].sum()
        pmf.setflags(write=False)
        object.__setattr__(self, "pmf", pmf)
        object.__setattr__(self, "d_max", top if self.d_max is None else int(self.d_max))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, DelayDistribution):
            return NotImplemented
        return self.d_max == other.d_max and np.array_equal(self.pmf, other.pmf)

    def __hash__(self) -> int:
        return hash((self.d_max, self.pmf.tobytes()))

    # ------------------------------------------------------------ constructors

    @classmethod
    def constant(cls, d: int) -> DelayDistribution:
        """Every observation arrives exactly ``d`` steps late."""
        if int(d) != d or d < 0:
            raise ValueError(f"constant delay must be an integer >= 0, got {d!r}")
        pmf = np.zeros(int(d) + 1)
        pmf[-1] = 1.0
        return cls(pmf)

    @classmethod
    def uniform(cls, D: int) -> DelayDistribution:  # noqa: N803
        """Uniform on {0, ..., D}."""
        if int(D) != D or D < 0:
            raise ValueError(f"maximum delay must be an integer >= 0, got {D!r}")
        return cls(np.full(int(D) + 1, 1.0 / (int(D) + 1)))

    @classmethod
    def geometric(cls, p: float, D: int) -> DelayDistribution:  # noqa: N803
        """Geometric q(d) proportional to p (1 - p)^d, truncated to {0, ..., D}."""
        if not 0.0 < p <= 1.0:
            raise ValueError(f"geometric parameter p must be in (0, 1], got {p}")
        if int(D) != D or D < 0:
            raise ValueError(f"maximum delay must be an integer >= 0, got {D!r}")
        w = p * (1.0 - p) ** np.arange(int(D) + 1)
        return cls(w / w.sum(), d_max=int(D))

    @classmethod
    def from_samples(cls, delays: np.ndarray, d_max: int) -> DelayDistribution:
        """Empirical pmf of observed delays (the 'estimated delay' option).

        Examples
        --------
        >>> DelayDistribution.from_samples(np.array([0, 1, 1, 3]), d_max=3).pmf.tolist()
        [0.25, 0.5, 0.0, 0.25]
        """
        delays = np.asarray(delays)
        if delays.size == 0:
            raise ValueError("cannot estimate a delay distribution from no samples")
        if (delays < 0).any() or (delays != np.round(delays)).any():
            raise ValueError("observed delays must be non-negative integers")
        if delays.max() > d_max:
            raise ValueError(f"observed delay {int(delays.max())} exceeds D_max={d_max}")
        counts = np.bincount(delays.astype(np.int64), minlength=d_max + 1).astype(np.float64)
        return cls(counts / counts.sum(), d_max=d_max)

    @classmethod
    def parse(cls, spec: str, d_max: int | None = None) -> DelayDistribution:
        """Parse ``none``, ``constant:d``, ``uniform:D``, ``geometric:p:D`` or ``pmf:q0,q1,...``.

        ``d_max`` declares the maximum delay: a pmf with mass beyond it is refused, and a
        larger ``d_max`` than the support is kept (learners then plan up to it).

        Examples
        --------
        >>> DelayDistribution.parse("geometric:0.5:2").D
        2
        >>> DelayDistribution.parse("uniform:1", d_max=3).d_max
        3
        >>> DelayDistribution.parse("pmf:0.5,0.25,0.25", d_max=1)
        Traceback (most recent call last):
        ValueError: delay pmf puts mass 0.25 on delays beyond D_max=1 (support reaches 2)
        """
        if d_max is not None:
            return cls(cls.parse(spec).pmf, d_max=d_max)
        kind, _, rest = spec.strip().partition(":")
        kind = kind.lower()
        try:
            if kind in {"none", "0"}:
                return cls.constant(0)
            if kind == "constant":
                return cls.constant(int(rest))
            if kind == "uniform":
                return cls.uniform(int(rest))
            if kind == "geometric":
                p, _, D = rest.partition(":")
                return cls.geometric(float(p), int(D))
            if kind == "pmf":
                return cls(np.array([float(x) for x in rest.split(",")]))
        except ValueError as exc:
            raise ValueError(f"bad delay {spec!r}: {exc}") from None
        raise ValueError(
            f"bad delay {spec!r}; use none, constant:d, uniform:D, geometric:p:D or pmf:q0,q1,..."
        )

    # ------------------------------------------------------------ quantities

    @property
    def D(self) -> int:  # noqa: N802 - the paper's D_max
        """Largest delay with positive probability (the effective D_max)."""
        return len(self.pmf) - 1

    @property
    def label(self) -> str:
        """Short name for tables."""
        if self.D == 0:
            return "none"
        if np.isclose(self.pmf[-1], 1.0):
            return f"constant:{self.D}"
        if np.allclose(self.pmf, self.pmf[0]):
            return f"uniform:{self.D}"
        return "pmf:" + ",".join(f"{x:.3g}" for x in self.pmf)

    def survival(self) -> np.ndarray:
        """q(d > m) for m = 0..D, shape (D + 1,)."""
        return np.concatenate([1.0 - np.cumsum(self.pmf)[:-1], [0.0]]).clip(0.0, 1.0)

    def hazard(self) -> np.ndarray:
        """lambda(m) = q(d = m + 1 | d > m) for m = 0..D - 1, shape (D,).

        A pending state of age m (not seen for m steps after it happened) is revealed at
        the next step with this probability; lambda(D - 1) = 1. Ages with q(d > m) = 0
        cannot be pending; their hazard is set to 1.
        """
        surv = self.survival()
        out = np.ones(self.D)
        for m in range(self.D):
            if surv[m] > 1e-15:
                out[m] = min(1.0, self.pmf[m + 1] / surv[m])
        out[out > 1.0 - 1e-12] = 1.0  # the last age (and round-off near it) reveals surely
        if self.D > 0:
            out[-1] = 1.0
        return out

    def sample(self, rng: np.random.Generator, size: int) -> np.ndarray:
        """Draw ``size`` i.i.d. delays, shape (size,)."""
        return rng.choice(self.D + 1, size=size, p=self.pmf)
