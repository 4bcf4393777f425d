"""Betting e-processes: the anytime-valid evidence behind every split decision.

Paper: S. I. Amoukou, S. Mishra, M. Veloso, "Correcting Split Selection in Online Decision
Trees via Anytime-Valid Inference", ICML 2026 (arXiv:2605.31239). The paper's full text and
code were not reachable when this package was written; the construction below follows the
standard testing-by-betting framework the paper builds on (Waudby-Smith & Ramdas 2024,
"Estimating means of bounded random variables by betting", JRSS-B; Choe & Ramdas 2023,
"Comparing sequential forecasters", Oper. Res.). See the package README for what is
reconstructed.

Map from the framework to this module:

1. Wealth process ``K_t = prod_{i<=t} (1 + lambda_i g_i)`` with ``g_i in [-1, 1]`` and a
   *predictable* bet ``lambda_i in [0, c]`` (chosen before ``g_i`` is seen), ``c < 1``
   -> :func:`eprocess_step` (compiled, used inside the tree kernel) and
   :class:`BettingEProcess` / :class:`EProcessBank` (Python front ends).
2. Under ``H0: E[g_t | F_{t-1}] <= 0`` the wealth is a nonnegative supermartingale with
   ``K_0 = 1``; Ville's inequality ``P(exists t: K_t >= 1/a) <= a`` -> :func:`ville_threshold`.
3. Bets: aGRAPA ``lambda_t = clip(sum g / (1 + sum g^2), 0, c)`` (the plug-in for the
   growth-rate-optimal bet ``mu / (sigma^2 + mu^2)``), online Newton step (ONS), and a
   uniform mixture over a fixed grid of constant bets (:class:`MixtureEProcess`), which is
   an e-process because an average of test supermartingales is one.
4. Sample weights ``w_t`` (online bagging) enter as ``min(lambda_t w_t, c)``: ``w_t`` is
   drawn independently of ``y_t``, so the effective bet stays predictable. Raising the
   factor to the power ``w_t`` would *not* be valid and is never done.

State layout (one row per e-process, ``float64``): ``state[0]`` is ``log K_t``; for aGRAPA
``state[1:3] = (sum g, sum g^2)``; for ONS ``state[1:3] = (lambda_t, 1 + sum z^2)``; for the
mixture ``state[1:1+M]`` are the log-wealths of the ``M`` constant bets.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

__all__ = [
    "AGRAPA",
    "BETTINGS",
    "MIXTURE",
    "N_MIXTURE",
    "ONS",
    "BettingEProcess",
    "EProcessBank",
    "MixtureEProcess",
    "betting_code",
    "eprocess_step",
    "n_state",
    "ville_threshold",
]

AGRAPA, ONS, MIXTURE = 0, 1, 2
BETTINGS = {"agrapa": AGRAPA, "ons": ONS, "mixture": MIXTURE}
N_MIXTURE = 8  # size of the constant-bet grid of the mixture e-process
_ONS_STEP = 2.0 / (2.0 - math.log(3.0))  # ONS step size (Cutkosky & Orabona 2018)


def betting_code(betting: str) -> int:
    """Integer code of a betting strategy name; raises ``ValueError`` for unknown names."""
    try:
        return BETTINGS[betting]
    except (KeyError, TypeError):
        raise ValueError(
            f"unknown betting strategy {betting!r}; choose one of {sorted(BETTINGS)}"
        ) from None


def n_state(betting: int) -> int:
    """Number of floats of state per e-process for a betting code."""
    return 1 + N_MIXTURE if betting == MIXTURE else 3


def check_cap(cap: float) -> float:
    """Validate the bet cap ``c``: it must lie in the open interval (0, 1)."""
    cap = float(cap)
    if not (0.0 < cap < 1.0) or math.isnan(cap):
        raise ValueError(f"bet cap must lie in (0, 1), got {cap}")
    return cap


def ville_threshold(alpha: float, n: int = 1) -> float:
    """E-value threshold ``n / alpha`` (Ville's inequality with a Bonferroni union over ``n``).

    For a nonnegative supermartingale with ``K_0 = 1``, ``P(sup_t K_t >= 1/a) <= a``; testing
    ``n`` e-processes each at level ``alpha / n`` bounds the probability that *any* null one
    ever crosses by ``alpha``.

    >>> ville_threshold(0.05)
    20.0
    >>> ville_threshold(0.05, n=150)
    3000.0
    """
    alpha = float(alpha)
    if not (0.0 < alpha < 1.0):
        raise ValueError(f"alpha must lie in (0, 1), got {alpha}")
    if int(n) < 1:
        raise ValueError(f"n must be a positive integer, got {n}")
    return int(n) / alpha


@njit(cache=True, inline="always")
def bet_of(st, betting, cap):
    """Predictable bet lambda_t in [0, cap] from the state *before* the next increment."""
    if betting == AGRAPA:
        lam = st[1] / (1.0 + st[2])
    elif betting == ONS:
        lam = st[1]
    else:
        lam = cap  # the mixture has no single bet; its largest grid bet
    if lam < 0.0:
        lam = 0.0
    if lam > cap:
        lam = cap
    return lam


@njit(cache=True)
def eprocess_step(st, g, w, betting, cap):
    """Advance one e-process by the increment ``g in [-1, 1]`` with sample weight ``w >= 0``.

    ``st`` is the 1-d state row (see the module docstring); it is updated in place.
    """
    if betting == MIXTURE:
        m = st.shape[0] - 1
        top = -np.inf
        for k in range(m):
            lam = cap * (k + 1) / m
            le = lam * w
            if le > cap:
                le = cap
            st[1 + k] += math.log1p(le * g)
            if st[1 + k] > top:
                top = st[1 + k]
        acc = 0.0
        for k in range(m):
            acc += math.exp(st[1 + k] - top)
        st[0] = top + math.log(acc / m)
        return
    lam = bet_of(st, betting, cap)
    le = lam * w
    if le > cap:
        le = cap
    if le != 0.0:  # a zero bet leaves the wealth unchanged (log1p(0) = 0): skip the log
        st[0] += math.log1p(le * g)
    if betting == AGRAPA:
        st[1] += g
        st[2] += g * g
    else:  # ONS on the log-wealth, gradient z = g / (1 + lambda g)
        z = g / (1.0 + le * g)
        st[2] += z * z
        lam = lam + _ONS_STEP * z / st[2]
        if lam < 0.0:
            lam = 0.0
        if lam > cap:
            lam = cap
        st[1] = lam


def init_state(shape: tuple[int, ...], betting: int) -> np.ndarray:
    """Fresh e-process states (``K_0 = 1``) of the given leading shape."""
    st = np.zeros((*shape, n_state(betting)), dtype=np.float64)
    if betting == ONS:
        st[..., 2] = 1.0
    return st


@njit(cache=True)
def _bank_update(states, g, w, betting, cap):
    for r in range(states.shape[0]):
        eprocess_step(states[r], g[r], w, betting, cap)


class EProcessBank:
    """A vectorised bank of ``n`` betting e-processes, one row per hypothesis.

    Parameters
    ----------
    n
        Number of e-processes (e.g. candidate splits of one leaf).
    betting
        ``"agrapa"`` (default), ``"ons"`` or ``"mixture"``.
    cap
        Bet cap ``c`` in (0, 1); ``1 + lambda g >= 1 - c > 0`` keeps the wealth positive.

    References
    ----------
    Waudby-Smith & Ramdas (2024), JRSS-B, Sec. 5 (aGRAPA, ONS); Ville (1939).

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> bank = EProcessBank(3)
    >>> for _ in range(2000):
    ...     g = np.array([0.3, 0.0, -0.3]) + rng.uniform(-0.5, 0.5, 3)
    ...     _ = bank.update(g)
    >>> bool(bank.e_values[0] > ville_threshold(0.05, 3))
    True
    """

    def __init__(self, n: int, betting: str = "agrapa", cap: float = 0.5):
        if int(n) < 1:
            raise ValueError(f"n must be a positive integer, got {n}")
        self.betting = betting
        self._code = betting_code(betting)
        self.cap = check_cap(cap)
        self.states = init_state((int(n),), self._code)  # (n, n_state)

    @property
    def log_e_values(self) -> np.ndarray:
        """``log K_t`` of every row, shape ``(n,)``."""
        return self.states[:, 0].copy()

    @property
    def e_values(self) -> np.ndarray:
        """``K_t`` of every row, shape ``(n,)``."""
        return np.exp(self.states[:, 0])

    @property
    def bets(self) -> np.ndarray:
        """The predictable bets for the *next* increment, shape ``(n,)``."""
        if self._code == MIXTURE:
            return np.full(self.states.shape[0], self.cap)
        if self._code == AGRAPA:
            lam = self.states[:, 1] / (1.0 + self.states[:, 2])
        else:
            lam = self.states[:, 1]
        return np.clip(lam, 0.0, self.cap)

    def update(self, g, w: float = 1.0) -> np.ndarray:
        """Feed one increment per row (``g``: shape ``(n,)``, values in [-1, 1]); return ``K_t``."""
        g = np.ascontiguousarray(g, dtype=np.float64)
        if g.shape != (self.states.shape[0],):
            raise ValueError(
                f"expected increments of shape ({self.states.shape[0]},), got {g.shape}"
            )
        if not np.all(np.abs(g) <= 1.0):
            raise ValueError("increments must lie in [-1, 1]")
        if not (w >= 0.0 and math.isfinite(w)):
            raise ValueError(f"sample weight must be finite and >= 0, got {w}")
        _bank_update(self.states, g, float(w), self._code, self.cap)
        return self.e_values


class BettingEProcess:
    """One betting e-process ``K_t = prod (1 + lambda_i g_i)`` for ``H0: E[g_t|F_{t-1}] <= 0``.

    Parameters
    ----------
    betting
        ``"agrapa"`` (default), ``"ons"`` or ``"mixture"``.
    cap
        Bet cap ``c`` in (0, 1).

    References
    ----------
    Waudby-Smith & Ramdas (2024), "Estimating means of bounded random variables by betting".

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(1)
    >>> ep = BettingEProcess()
    >>> ep.e_value
    1.0
    >>> for g in 0.2 + rng.uniform(-0.6, 0.6, 500):
    ...     _ = ep.update(float(g))
    >>> ep.e_value > ville_threshold(0.01)
    True
    """

    def __init__(self, betting: str = "agrapa", cap: float = 0.5):
        self._bank = EProcessBank(1, betting=betting, cap=cap)
        self.betting = betting
        self.cap = self._bank.cap

    @property
    def bet(self) -> float:
        """The predictable bet for the next increment."""
        return float(self._bank.bets[0])

    @property
    def log_e_value(self) -> float:
        """``log K_t``."""
        return float(self._bank.states[0, 0])

    @property
    def e_value(self) -> float:
        """``K_t``."""
        return float(math.exp(self._bank.states[0, 0]))

    def update(self, g: float, w: float = 1.0) -> float:
        """Feed one increment ``g in [-1, 1]``; return the new e-value."""
        return float(self._bank.update(np.array([g], dtype=np.float64), w)[0])


class MixtureEProcess(BettingEProcess):
    """Uniform mixture over ``N_MIXTURE`` constant bets ``c k / M`` (k = 1..M).

    An average of test supermartingales is a test supermartingale, so the mixture is a
    valid e-process with no bet tuning (the exponential-mixture idea of Choe & Ramdas 2023).

    Examples
    --------
    >>> ep = MixtureEProcess(cap=0.5)
    >>> for _ in range(100):
    ...     _ = ep.update(0.5)
    >>> round(ep.log_e_value, 3)
    20.317
    """

    def __init__(self, cap: float = 0.5):
        super().__init__(betting="mixture", cap=cap)
