"""Low-rank Fourier sums: the LoRFS representation of a field on a box.

Paper: Kaminsky, Freedman, Radinsky, "Overcoming PINNs Failure Modes in High Dimension with
Low-Rank Fourier Sum", ICML 2026.

    u(z) = Re sum_{r=1}^R prod_{j=1}^D phi_{r,j}(z_j),
    phi_{r,j}(s) = sum_{k=-K_j}^{K_j} c_{r,j,k} e^{i omega_j k (s - a_j)}       (notes, Sec. B1)

Factors are **complex**, so a plane wave ``sin(k . x) = Re(-i prod_j e^{i k_j x_j})`` has rank 1
(real sin/cos factors would need rank ``2^{d-1}``).

- :class:`SeparableSum`: a (fixed or differentiable) sum of rank-one separable terms; sums,
  scalar multiples, products (per-axis coefficient convolutions: rank ``R1 R2``, bandwidth
  ``K1 + K2``), powers, conjugates and the real part ``(u + conj u) / 2``.
- :class:`LowRankFourierSum`: the trainable ``torch.nn.Module`` holding the parameters, with
  evaluation at points and on grids and :meth:`~LowRankFourierSum.balance_` (gauge).
  Rank rounding is an ALS fit, :func:`lorfs.als.round_rank`.

Coefficient padding and products are :mod:`lorfs.coefficients`.
"""

from __future__ import annotations

import math
import string
from collections.abc import Sequence

import torch
from torch import nn

from .basis import CDTYPE, RDTYPE, FourierAxis, positive_int
from .coefficients import convolve_coefficients, pad_modes


class SeparableSum:
    """A sum of ``T`` rank-one separable complex terms on the axes (field = its real part).

    Parameters
    ----------
    axes:
        The :class:`~lorfs.basis.FourierAxis` of each coordinate (defines domain and period).
    factors:
        One complex tensor per axis, shape ``(T, 2K_j + 1)``; ``K_j`` may be smaller than the
        axis' own modes (data with few modes).

    Examples
    --------
    >>> ax = [FourierAxis("x", (0, 2 * math.pi), 1), FourierAxis("y", (0, 2 * math.pi), 1)]
    >>> e = torch.tensor([[0, 0, 1]], dtype=torch.complex128)      # e^{i s}
    >>> wave = SeparableSum(ax, [-1j * e, e])                       # sin(x + y), rank 1
    >>> z = torch.tensor([[0.3, 0.4]], dtype=torch.float64)
    >>> round(wave(z).item(), 12) == round(math.sin(0.7), 12)
    True
    >>> (wave * wave).rank, (wave * wave).modes
    (1, [2, 2])
    """

    def __init__(self, axes: Sequence[FourierAxis], factors: Sequence[torch.Tensor]) -> None:
        self.axes = list(axes)
        if len(factors) != len(self.axes):
            raise ValueError(f"{len(factors)} factor tensors for {len(self.axes)} axes")
        ranks = {f.shape[0] for f in factors}
        if len(ranks) != 1:
            raise ValueError(f"all factors need the same number of terms, got {sorted(ranks)}")
        for ax, f in zip(self.axes, factors, strict=True):
            if f.dim() != 2 or f.shape[1] % 2 != 1:
                raise ValueError(
                    f"axis {ax.name!r}: factors must have shape (T, 2K+1), got {tuple(f.shape)}"
                )
            if not f.is_complex():
                raise ValueError(f"axis {ax.name!r}: factors must be complex, got {f.dtype}")
        self.factors = [f.to(CDTYPE) for f in factors]

    # ------------------------------------------------------------ layout
    @property
    def rank(self) -> int:
        return self.factors[0].shape[0]

    @property
    def dim(self) -> int:
        return len(self.axes)

    @property
    def modes(self) -> list[int]:
        return [(f.shape[1] - 1) // 2 for f in self.factors]

    def padded(self, modes: Sequence[int]) -> SeparableSum:
        """The same sum with coefficients zero-padded to ``modes`` per axis."""
        return SeparableSum(
            self.axes, [pad_modes(f, m) for f, m in zip(self.factors, modes, strict=True)]
        )

    # ------------------------------------------------------------ algebra
    def _check_axes(self, other: SeparableSum) -> None:
        if other.dim != self.dim:
            raise ValueError(f"dimension mismatch: {self.dim} axes vs {other.dim}")
        for a, b in zip(self.axes, other.axes, strict=True):
            if abs(a.period - b.period) > 1e-12 * a.period or abs(a.a - b.a) > 1e-12 * max(
                1.0, abs(a.a)
            ):
                raise ValueError(f"axis {a.name!r}: sums live on different bases ({a!r} vs {b!r})")

    def __add__(self, other: SeparableSum) -> SeparableSum:
        self._check_axes(other)
        modes = [max(p, q) for p, q in zip(self.modes, other.modes, strict=True)]
        a, b = self.padded(modes), other.padded(modes)
        return SeparableSum(
            self.axes, [torch.cat([x, y]) for x, y in zip(a.factors, b.factors, strict=True)]
        )

    def __neg__(self) -> SeparableSum:
        return self.scaled(-1.0)

    def __sub__(self, other: SeparableSum) -> SeparableSum:
        return self + (-other)

    def scaled(self, alpha: complex | torch.Tensor) -> SeparableSum:
        """``alpha * self`` (the factor goes into the first axis)."""
        return SeparableSum(self.axes, [self.factors[0] * alpha, *self.factors[1:]])

    def __mul__(self, other: SeparableSum | complex | float) -> SeparableSum:
        if not isinstance(other, SeparableSum):
            return self.scaled(other)
        self._check_axes(other)
        return SeparableSum(
            self.axes,
            [convolve_coefficients(a, b) for a, b in zip(self.factors, other.factors, strict=True)],
        )

    __rmul__ = __mul__

    def power(self, p: int) -> SeparableSum:
        """``self ** p`` as a separable sum (rank ``T^p``, bandwidth ``p K``)."""
        p = positive_int(p, "power")
        out = self
        for _ in range(p - 1):
            out = out * self
        return out

    def conj(self) -> SeparableSum:
        """Complex conjugate function: coefficients flipped in ``k`` and conjugated."""
        return SeparableSum(self.axes, [f.flip(-1).conj() for f in self.factors])

    def real_part(self) -> SeparableSum:
        """``Re u = (u + conj u) / 2`` as a complex sum of rank ``2T`` with real values."""
        return (self + self.conj()).scaled(0.5)

    # ------------------------------------------------------------ evaluation
    def evaluate_complex(self, points: torch.Tensor) -> torch.Tensor:
        """Complex values ``sum_t prod_j phi_tj(z_j)`` at ``points`` of shape ``(N, D)`` -> ``(N,)``."""
        points = torch.as_tensor(points, dtype=RDTYPE)
        if points.dim() != 2 or points.shape[1] != self.dim:
            raise ValueError(f"points must have shape (N, {self.dim}), got {tuple(points.shape)}")
        prod = None
        for j, (ax, f) in enumerate(zip(self.axes, self.factors, strict=True)):
            vals = ax.evaluate(f, points[:, j])  # (T, N)
            prod = vals if prod is None else prod * vals
        return prod.sum(0)

    def __call__(self, points: torch.Tensor) -> torch.Tensor:
        """Real field values ``Re u`` at ``points`` (N, D) -> (N,)."""
        return self.evaluate_complex(points).real

    def grid(self, coords: Sequence[torch.Tensor]) -> torch.Tensor:
        """Real values on the tensor grid ``coords[0] x ... x coords[D-1]`` -> ``(N_1, ..., N_D)``."""
        if len(coords) != self.dim:
            raise ValueError(f"{len(coords)} grid coordinate vectors for {self.dim} axes")
        if self.dim > 20:
            raise ValueError(f"grid() is for small dimensions, got D = {self.dim}")
        letters = string.ascii_letters[: self.dim]
        mats = [
            ax.evaluate(f, torch.as_tensor(c, dtype=RDTYPE))
            for ax, f, c in zip(self.axes, self.factors, coords, strict=True)
        ]
        spec = ",".join(f"Z{c}" for c in letters) + "->" + letters
        return torch.einsum(spec, *mats).real

    def to_dense(self) -> torch.Tensor:
        """Full coefficient tensor ``(2K_1+1, ..., 2K_D+1)`` (complex; small ``D`` only)."""
        total = math.prod(f.shape[1] for f in self.factors)
        if total > 5_000_000:
            raise ValueError(f"to_dense() would need {total} coefficients; use it for D <= 3")
        letters = string.ascii_letters[: self.dim]
        spec = ",".join(f"Z{c}" for c in letters) + "->" + letters
        return torch.einsum(spec, *self.factors)


class LowRankFourierSum(nn.Module):
    """Trainable rank-``R`` Fourier sum ``u(z) = Re sum_r prod_j phi_rj(z_j)`` (float64/complex128).

    Parameters
    ----------
    axes:
        One :class:`~lorfs.basis.FourierAxis` per coordinate (``D`` of them).
    rank:
        Number of rank-one terms ``R >= 1``.
    init_scale:
        Standard deviation of the random complex parameters at initialisation.
    seed:
        Seed of the initialisation generator (``None``: torch's global generator).

    Parameters are stored as real tensors of shape ``(R, n_params_j, 2)`` (viewed as complex), so
    every torch optimiser (Adam, L-BFGS) and Lightning checkpoint handles them.

    References
    ----------
    Kaminsky, Freedman, Radinsky, ICML 2026 (LoRFS).

    Examples
    --------
    >>> axes = [FourierAxis("t", (0, 1), 4, kind="extension"), FourierAxis("x", (0, 2 * math.pi), 3)]
    >>> u = LowRankFourierSum(axes, rank=2, seed=0)
    >>> u(torch.rand(5, 2, dtype=torch.float64)).shape
    torch.Size([5])
    >>> [tuple(f.shape) for f in u.factors()]
    [(2, 9), (2, 7)]
    >>> z = torch.rand(4, 2, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    >>> before = u(z)
    >>> _ = u.balance_()
    >>> bool(torch.allclose(before, u(z)))   # gauge balancing keeps the function
    True
    """

    def __init__(
        self,
        axes: Sequence[FourierAxis],
        rank: int,
        init_scale: float = 0.1,
        seed: int | None = None,
    ) -> None:
        super().__init__()
        self.axes = list(axes)
        if not self.axes:
            raise ValueError("LowRankFourierSum needs at least one axis")
        self.rank = positive_int(rank, "rank")
        gen = torch.Generator().manual_seed(seed) if seed is not None else None
        self.params = nn.ParameterList(
            [
                nn.Parameter(
                    init_scale * torch.randn(self.rank, ax.n_params, 2, dtype=RDTYPE, generator=gen)
                )
                for ax in self.axes
            ]
        )
        for ax in self.axes:
            self.register_buffer(
                f"synthesis_{len(self._buffers)}", ax.synthesis(), persistent=False
            )

    @property
    def dim(self) -> int:
        return len(self.axes)

    def _synth(self, j: int) -> torch.Tensor:
        return self._buffers[f"synthesis_{j}"]

    def free_parameters(self, j: int) -> torch.Tensor:
        """Complex free parameters of axis ``j``, shape ``(R, n_params_j)``."""
        return torch.view_as_complex(self.params[j])

    def factors(self) -> list[torch.Tensor]:
        """Full exponential coefficients per axis, each ``(R, 2K_j + 1)`` complex."""
        return [self.free_parameters(j) @ self._synth(j).T for j in range(self.dim)]

    def as_sum(self) -> SeparableSum:
        """The current field as a (differentiable) :class:`SeparableSum`."""
        return SeparableSum(self.axes, self.factors())

    @torch.no_grad()
    def set_free_parameters_(self, j: int, values: torch.Tensor) -> None:
        """Overwrite axis ``j``'s parameters with complex ``values`` of shape ``(R, n_params_j)``."""
        self.params[j].copy_(torch.view_as_real(values.to(CDTYPE).reshape(self.rank, -1)))

    def forward(self, points: torch.Tensor) -> torch.Tensor:
        """Real field at ``points`` of shape ``(N, D)`` -> ``(N,)``."""
        return self.as_sum()(points)

    def grid(self, coords: Sequence[torch.Tensor]) -> torch.Tensor:
        """Real field on a tensor grid -> ``(N_1, ..., N_D)``."""
        return self.as_sum().grid(coords)

    def to_dense(self) -> torch.Tensor:
        """Full complex coefficient tensor (small ``D`` only)."""
        return self.as_sum().to_dense()

    @torch.no_grad()
    def balance_(self) -> LowRankFourierSum:
        """Gauge normalisation: equal coefficient norms across axes within each term, phases moved to axis 0.

        The represented function is unchanged (each term is multiplied by 1).
        """
        free = [self.free_parameters(j).clone() for j in range(self.dim)]
        norms = torch.stack([f.abs().pow(2).sum(1).sqrt() for f in free])  # (D, R)
        norms = norms.clamp_min(1e-300)
        geo = norms.log().mean(0).exp()  # (R,)
        geo = torch.where(
            (norms > 1e-300).all(0), geo, torch.zeros_like(geo)
        )  # a zero term stays zero
        for j in range(self.dim):
            scale = torch.where(geo > 0, geo / norms[j], torch.ones_like(geo))
            if (
                j > 0
            ):  # make the largest coefficient of axes 1.. real positive, push phase to axis 0
                idx = free[j].abs().argmax(1)
                phase = free[j][torch.arange(self.rank), idx]
                phase = torch.where(
                    phase.abs() > 0, phase / phase.abs().clamp_min(1e-300), torch.ones_like(phase)
                )
                free[j] = free[j] / phase[:, None]
                free[0] = free[0] * phase[:, None]
            free[j] = free[j] * scale[:, None]
        for j in range(self.dim):
            self.set_free_parameters_(j, free[j])
        return self
