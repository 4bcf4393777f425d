"""Optimism bonuses beta_t(s, a) charged on one-step transitions of P.

Paper: Lee & Jamieson (ICML 2026, arXiv:2603.03480) combine state augmentation with
upper-confidence-bound optimism. The exact bonus of their Algorithm 1 was not available to
us (no full text, no code); the bonuses here are the two classical UCBVI bonuses of
Azar, Osband & Munos (2017), kept pluggable: any callable with the signature of
:class:`Bonus` can be passed to the agents.

Map:

- :class:`HoeffdingBonus` -- beta = min(H, c * H * sqrt(L / max(1, n))), L = log(S A H k / delta)
  (UCBVI-CH, Azar et al. 2017, Alg. 3 with the constant c exposed).
- :class:`BernsteinBonus` -- beta_t = min(H, c * (sqrt(2 L Var_{P_hat(s,a)}(W_{t+1}) / n)
  + 7 H L / (3 n))) with W the optimistic *undelayed* value of the same counts (UCBVI-BF
  without its correction term, Azar et al. 2017, Alg. 4). With delays the continuation
  of a revealed transition is not W; using W's variance is our approximation.

Both return an array of shape (H, S, A); index t is the original step of the transition
(the bonus at t = H - 1 is unused: there is no transition after the last step).

Theory values of the constant c (:data:`THEORY_SCALE`, :func:`resolve_scale`), ours since the
paper's own constant could not be read:

- Hoeffding: optimism needs P_hat(s, a) . V >= P(s, a) . V - beta for a *fixed* function V with
  values in [0, H * span] (the V* argument of UCBVI-CH). One-sided Hoeffding gives
  P(P . V - P_hat . V > eps) <= exp(-2 n eps^2 / (H span)^2); a union bound over the
  S A H k (state, action, step, episode) tuples with total failure delta gives
  eps = H span sqrt(L / (2 n)) with L = log(S A H k / delta), i.e. **c = 1 / sqrt(2)**.
  Azar et al.'s proof constant (7 H L / sqrt(n)) is looser still.
- Bernstein: the empirical-Bernstein form below already carries its constants (2 and 7/3,
  Maurer & Pontil 2009), so its theory value is **c = 1**.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np

#: Theory value of c per bonus family (see the module docstring for the derivation).
THEORY_SCALE = {"hoeffding": 1.0 / np.sqrt(2.0), "bernstein": 1.0}


def resolve_scale(scale: float | str, bonus: str = "hoeffding") -> float:
    """The constant c as a number: ``"theory"`` becomes :data:`THEORY_SCALE` of ``bonus``.

    >>> round(resolve_scale("theory"), 4), resolve_scale("theory", "bernstein"), resolve_scale(0.1)
    (0.7071, 1.0, 0.1)
    """
    if isinstance(scale, str):
        if scale != "theory":
            raise ValueError(f"bonus scale must be a number >= 0 or 'theory', got {scale!r}")
        if bonus not in THEORY_SCALE:
            raise ValueError(f"no theory value for bonus {bonus!r}")
        return float(THEORY_SCALE[bonus])
    if isinstance(scale, bool) or not np.isfinite(scale) or scale < 0:
        raise ValueError(f"bonus scale must be a number >= 0 or 'theory', got {scale!r}")
    return float(scale)


class Bonus(Protocol):
    """A bonus rule: ``bonus(counts, R, H, k) -> beta`` of shape (H, S, A)."""

    def __call__(self, counts: np.ndarray, R: np.ndarray, H: int, k: int) -> np.ndarray:  # noqa: N803
        """``counts`` (S, A, S) of revealed transitions, ``R`` (S, A), horizon, episode index."""
        ...


def empirical_kernel(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """P_hat from transition counts (uniform where unvisited) and n(s, a) = max(1, visits).

    Returns ``P_hat`` of shape (S, A, S) and ``n`` of shape (S, A).

    Examples
    --------
    >>> c = np.zeros((2, 1, 2)); c[0, 0, 1] = 3
    >>> P, n = empirical_kernel(c)
    >>> P[0, 0].tolist(), P[1, 0].tolist(), n.ravel().tolist()
    ([0.0, 1.0], [0.5, 0.5], [3.0, 1.0])
    """
    S = counts.shape[0]
    visits = counts.sum(axis=2)
    P = np.where(visits[..., None] > 0, counts / np.maximum(visits, 1.0)[..., None], 1.0 / S)
    return P, np.maximum(visits, 1.0)


def log_term(S: int, A: int, H: int, k: int, delta: float) -> float:  # noqa: N803
    """L = log(S A H max(k, 1) / delta) (anytime: k is the current episode count)."""
    return float(np.log(S * A * H * max(k, 1) / delta))


class HoeffdingBonus:
    """Hoeffding (UCBVI-CH) bonus c * H * sqrt(L / n), stage independent.

    Parameters
    ----------
    scale:
        Multiplier c (Azar et al. use 7 in the proof; practical runs use c <= 1).
    delta:
        Confidence level delta in L = log(S A H k / delta).
    span:
        Reward span r_max - r_min (the value range is H * span).

    Examples
    --------
    >>> b = HoeffdingBonus(scale=1.0, delta=0.1)
    >>> c = np.ones((2, 2, 2)) * 50  # n(s, a) = 100
    >>> beta = b(c, np.zeros((2, 2)), H=4, k=10)
    >>> beta.shape, round(float(beta[0, 0, 0]), 4)
    ((4, 2, 2), 1.0865)
    """

    name = "hoeffding"

    def __init__(self, scale: float = 1.0, delta: float = 0.1, span: float = 1.0) -> None:
        if scale < 0 or not 0 < delta < 1 or span <= 0:
            raise ValueError("need scale >= 0, 0 < delta < 1 and span > 0")
        self.scale, self.delta, self.span = float(scale), float(delta), float(span)

    def __call__(self, counts: np.ndarray, R: np.ndarray, H: int, k: int) -> np.ndarray:  # noqa: N803
        S, A, _ = counts.shape
        _, n = empirical_kernel(counts)
        L = log_term(S, A, H, k, self.delta)
        vmax = H * self.span
        beta = np.minimum(vmax, self.scale * vmax * np.sqrt(L / n))  # (S, A)
        return np.broadcast_to(beta, (H, S, A)).copy()


class BernsteinBonus:
    """Empirical-Bernstein (UCBVI-BF style) bonus, stage dependent.

    Parameters
    ----------
    scale:
        Multiplier c of the whole bonus.
    delta:
        Confidence level delta.
    span:
        Reward span r_max - r_min.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> c = rng.integers(0, 30, size=(3, 2, 3)).astype(float)
    >>> R = rng.uniform(size=(3, 2))
    >>> beta = BernsteinBonus()(c, R, H=5, k=20)
    >>> beta.shape, bool((beta >= 0).all()), bool((beta <= 5).all())
    ((5, 3, 2), True, True)
    """

    name = "bernstein"

    def __init__(self, scale: float = 1.0, delta: float = 0.1, span: float = 1.0) -> None:
        if scale < 0 or not 0 < delta < 1 or span <= 0:
            raise ValueError("need scale >= 0, 0 < delta < 1 and span > 0")
        self.scale, self.delta, self.span = float(scale), float(delta), float(span)

    def __call__(self, counts: np.ndarray, R: np.ndarray, H: int, k: int) -> np.ndarray:  # noqa: N803
        S, A, _ = counts.shape
        P, n = empirical_kernel(counts)
        L = log_term(S, A, H, k, self.delta)
        vmax = H * self.span
        beta = np.zeros((H, S, A))
        W = np.zeros(S)  # optimistic undelayed value at step t + 1
        for t in range(H - 1, -1, -1):
            if t < H - 1:
                mean = P @ W  # (S, A)
                var = np.maximum(P @ (W**2) - mean**2, 0.0)
                b = self.scale * (np.sqrt(2.0 * L * var / n) + 7.0 * vmax * L / (3.0 * n))
                beta[t] = np.minimum(vmax, b)
                Q = R + mean + beta[t]
            else:
                Q = R.copy()
            W = np.minimum(Q.max(axis=1), (H - t) * self.span)
        return beta


def make_bonus(
    name: str, scale: float | str = "theory", delta: float = 0.1, span: float = 1.0
) -> Bonus:
    """Bonus by name: ``hoeffding`` or ``bernstein``; ``scale`` a number or ``"theory"``."""
    table = {"hoeffding": HoeffdingBonus, "bernstein": BernsteinBonus}
    if name not in table:
        raise ValueError(f"unknown bonus {name!r}; choose from {sorted(table)}")
    return table[name](scale=resolve_scale(scale, name), delta=delta, span=span)
