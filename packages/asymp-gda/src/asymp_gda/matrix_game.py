"""Two-player zero-sum matrix games ``min_{x in Delta_m} max_{y in Delta_n} x^T A y``.

Paper: Abe, Sakamoto, Ariu, Iwasaki, "Asymmetric Perturbation in Solving Bilinear
Saddle-Point Optimization", ICML 2026 (arXiv:2506.05747), Sec. 2 (problem) and
Sec. 6 (the normal-form instances).

Convention: ``A`` is the **x-player's loss** (the y-player's gain). The paper's
experiments (and its code) state payoffs for a *maximising* row player, ``P``;
the factories below convert with ``A = -P``.

- :class:`MatrixGame` -- validated payoff container (zero-sum only).
- :func:`biased_rps`, :func:`biased_matching_pennies`, :func:`m_ne` -- the paper's
  three normal-form games (Sec. 6); :func:`random_game` -- uniform ``[-1, 1]`` games.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from .projection import on_simplex

__all__ = [
    "MatrixGame",
    "row_gradient",
    "column_gradient",
    "biased_rps",
    "biased_matching_pennies",
    "m_ne",
    "random_game",
    "game_by_name",
    "GAMES",
]


def row_gradient(A: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """``A y`` for ``A (m, n)`` or a batch of games ``(B, m, n)`` and ``y (B, n)``; returns ``(B, m)``."""
    return (A @ y.unsqueeze(-1)).squeeze(-1)


def column_gradient(A: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """``A^T x`` for ``A (m, n)`` or ``(B, m, n)`` and ``x (B, m)``; returns ``(B, n)``."""
    return (x.unsqueeze(-2) @ A).squeeze(-2)


def _as_payoff(payoff, name: str = "payoff") -> torch.Tensor:
    a = torch.as_tensor(
        np.asarray(payoff, dtype=np.float64) if not isinstance(payoff, torch.Tensor) else payoff
    )
    a = a.to(torch.float64)
    if a.ndim != 2:
        raise ValueError(f"{name} must be a 2-D matrix, got {a.ndim}-D shape {tuple(a.shape)}")
    if a.shape[0] == 0 or a.shape[1] == 0:
        raise ValueError(f"{name} has an empty action set: shape {tuple(a.shape)}")
    if not torch.isfinite(a).all():
        raise ValueError(f"{name} contains non-finite entries (nan or inf)")
    return a


@dataclass(frozen=True)
class MatrixGame:
    """A two-player zero-sum matrix game ``min_x max_y x^T A y`` over simplices.

    Parameters
    ----------
    A:
        ``(m, n)`` loss matrix of the x (row, minimising) player; the y (column,
        maximising) player gains ``x^T A y``. Must be 2-D, finite, non-empty.
    name:
        Optional label used in tables.

    References
    ----------
    Abe et al., "Asymmetric Perturbation in Solving Bilinear Saddle-Point
    Optimization", ICML 2026, Sec. 2.

    Examples
    --------
    >>> g = biased_rps()
    >>> g.shape
    (3, 3)
    >>> round(g.value, 12)
    0.0
    >>> MatrixGame.from_bimatrix([[1.0, -1.0], [-1.0, 1.0]], [[-1.0, 1.0], [1.0, -1.0]]).A
    tensor([[-1.,  1.],
            [ 1., -1.]], dtype=torch.float64)
    """

    A: torch.Tensor
    name: str = "game"
    _cache: dict = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "A", _as_payoff(self.A, "payoff A"))

    # ------------------------------------------------------------ constructors

    @classmethod
    def from_maximizer_payoff(cls, P, name: str = "game") -> MatrixGame:
        """Build from the payoff ``P`` of a *maximising* row player (``A = -P``)."""
        return cls(-_as_payoff(P, "payoff P"), name=name)

    @classmethod
    def from_bimatrix(cls, P1, P2, name: str = "game", atol: float = 1e-12) -> MatrixGame:
        """Build from both players' payoffs; rejects general-sum games.

        ``P1`` is the row player's payoff, ``P2`` the column player's. The game
        must be zero-sum (``P1 + P2 = 0``): AsymP-GDA solves zero-sum games only.
        """
        p1, p2 = _as_payoff(P1, "payoff P1"), _as_payoff(P2, "payoff P2")
        if p1.shape != p2.shape:
            raise ValueError(f"payoff shapes differ: P1 {tuple(p1.shape)} vs P2 {tuple(p2.shape)}")
        dev = (p1 + p2).abs().max().item()
        if dev > atol:
            raise ValueError(
                f"general-sum game (max |P1 + P2| = {dev:.3g}): only two-player zero-sum games are supported"
            )
        return cls(-p1, name=name)

    # ------------------------------------------------------------ properties

    @property
    def shape(self) -> tuple[int, int]:
        """``(m, n)``: numbers of actions of the x and y players."""
        return (int(self.A.shape[0]), int(self.A.shape[1]))

    @property
    def norm(self) -> float:
        """Spectral norm ``||A||_2`` (the Lipschitz constant of the gradient operator)."""
        if "norm" not in self._cache:
            self._cache["norm"] = float(torch.linalg.matrix_norm(self.A, ord=2))
        return self._cache["norm"]

    @property
    def value(self) -> float:
        """Game value ``v* = min_x max_y x^T A y`` from scipy's HiGHS LP (cached)."""
        return self.equilibrium[2]

    @property
    def equilibrium(self) -> tuple[torch.Tensor, torch.Tensor, float]:
        """``(x*, y*, v*)``: one equilibrium (LP vertex) and the value (cached)."""
        if "lp" not in self._cache:
            from .linear_program import solve_lp

            self._cache["lp"] = solve_lp(self.A)
        return self._cache["lp"]

    def transposed(self) -> MatrixGame:
        """The role-swapped game ``-A^T``: its x player is the original y player."""
        return MatrixGame(-self.A.T.contiguous(), name=f"{self.name}^T")

    # ------------------------------------------------------------ checks

    def check_strategies(
        self, x: torch.Tensor | None = None, y: torch.Tensor | None = None, atol: float = 1e-8
    ):
        """Validate ``x`` of shape ``(B, m)`` or ``(m,)`` and ``y`` of shape ``(B, n)`` or ``(n,)``.

        Returns them as float64 ``(B, .)`` tensors. Raises ``ValueError`` on a shape
        mismatch or a point off the simplex.
        """
        out = []
        for label, s, size in (("x", x, self.shape[0]), ("y", y, self.shape[1])):
            if s is None:
                out.append(None)
                continue
            s = torch.as_tensor(s, dtype=torch.float64)
            if s.ndim == 1:
                s = s.unsqueeze(0)
            if s.ndim != 2 or s.shape[1] != size:
                raise ValueError(
                    f"initial strategy {label} has shape {tuple(s.shape)}; expected ({size},) or (B, {size})"
                )
            if not on_simplex(s, atol):
                raise ValueError(f"initial strategy {label} is not on the probability simplex")
            out.append(s)
        return tuple(out)


# ---------------------------------------------------------------- the paper's games


def biased_rps() -> MatrixGame:
    """Biased rock-paper-scissors (Sec. 6); unique equilibrium ``(1/5, 3/5, 1/5)`` for both, value 0."""
    P = [[0.0, -1.0, 3.0], [1.0, 0.0, -1.0], [-3.0, 1.0, 0.0]]  # maximiser's payoff
    return MatrixGame.from_maximizer_payoff(P, name="BRPS")


def biased_matching_pennies() -> MatrixGame:
    """Biased matching pennies (Sec. 6); unique equilibrium ``(5/8, 3/8)`` for both."""
    P = [[-1 / 3, 2 / 3], [2 / 3, -1.0]]
    return MatrixGame.from_maximizer_payoff(P, name="BMP")


def m_ne() -> MatrixGame:
    """The multiple-equilibria game M-Ne (Sec. 6).

    The x player's equilibrium is ``(1/3, 1/3, 1/3, 0, 0)``; the y player has a
    continuum of equilibria (uniform among them).
    """
    L = [  # x-player's loss (the paper states the maximiser's payoff as -L)
        [0.0, -1.0, 1.0, 0.0, 0.0],
        [1.0, 0.0, -1.0, 0.0, 0.0],
        [-1.0, 1.0, 0.0, 0.0, 0.0],
        [-1.0, 1.0, 0.0, 2.0, -1.0],
        [-1.0, 1.0, 0.0, -1.0, 2.0],
    ]
    return MatrixGame.from_maximizer_payoff(-torch.tensor(L, dtype=torch.float64), name="M-Ne")


def random_game(m: int, n: int | None = None, seed: int = 0) -> MatrixGame:
    """A random ``m x n`` game with i.i.d. uniform ``[-1, 1]`` entries (seeded)."""
    n = m if n is None else n
    if m < 1 or n < 1:
        raise ValueError(f"random_game needs m, n >= 1 (empty action set), got m={m}, n={n}")
    gen = torch.Generator().manual_seed(int(seed))
    A = torch.rand(m, n, generator=gen, dtype=torch.float64) * 2.0 - 1.0
    return MatrixGame(A, name=f"random{m}x{n}-s{seed}")


GAMES = {"brps": biased_rps, "bmp": biased_matching_pennies, "m_ne": m_ne}


def game_by_name(name: str, seed: int = 0) -> MatrixGame:
    """``"brps"``, ``"bmp"``, ``"m_ne"`` or ``"random<m>"`` / ``"random<m>x<n>"``."""
    key = name.lower().replace("-", "_")
    if key in GAMES:
        return GAMES[key]()
    if key.startswith("random"):
        dims = key[len("random") :].split("x")
        try:
            sizes = [int(d) for d in dims]
        except ValueError:
            sizes = []
        if len(sizes) in (1, 2):
            return random_game(sizes[0], sizes[-1], seed=seed)
    raise ValueError(
        f"unknown matrix game {name!r}; choose brps, bmp, m_ne, random<m> or random<m>x<n>"
    )
